// Where a caller keeps the file index of a dataset between openings, so that reopening a large
// image folder does not decode it again (image/image_index_store.h says what is stored and when
// it is reused). The engine only reads and writes text under a key; Kiln Studio keeps it in the
// project's SQLite file (projects/index_store.h). No OpenCV, no SQLite.
#pragma once
#include <optional>
#include <string>

namespace kiln::data {

class IndexStore {
 public:
  virtual ~IndexStore() = default;
  // The text saved under `key`, nullopt when there is none. May throw (the caller then
  // rescans and says why).
  virtual std::optional<std::string> load(const std::string& key) = 0;
  // Saves (replaces) the text under `key`. May throw (the caller then keeps what it scanned and
  // says why).
  virtual void save(const std::string& key, const std::string& text) = 0;
};

}  // namespace kiln::data
