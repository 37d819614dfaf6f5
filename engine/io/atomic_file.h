// Atomic file replacement (as QSaveFile): write to a temporary file beside the
// target, flush it to disk, then rename it over the target. Until commit() the
// target keeps its old content; a writer that fails or is destroyed early leaves
// no temporary behind.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>

namespace kiln::io {

class AtomicFile {
 public:
  // Creates the temporary file (mode 0644) in path's directory; IoError naming
  // path when it cannot.
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t nbytes);  // IoError (e.g. disk full) naming path
  void commit();                                // fsync + rename; IoError naming path

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace kiln::io
