// The file indexes of a project's image folders, kept in its SQLite file (table file_indexes,
// schema 10) so that reopening a project on a folder of 100,000 images neither lists nor decodes
// them again (engine/data/image/image_index_store.h says what is stored and when it is reused).
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/data/index_store.h"
#include "projects/sqlite_db.h"

namespace kiln::projects {

// An IndexStore on the project file at `path`, through a connection of its own opened on first
// use, so that it can be used from the thread that opens the dataset (a worker) while the UI
// thread has the project open. Thread-safe. load and save throw ProjectError naming the file
// (a missing file, a project older than schema 10, a write that fails); load_images then scans
// the folder and says why (never an error of its own).
class ProjectIndexStore : public data::IndexStore {
 public:
  explicit ProjectIndexStore(std::string path) : path_(std::move(path)) {}
  std::optional<std::string> load(const std::string& key) override;
  void save(const std::string& key, const std::string& text) override;

 private:
  Database& db();  // caller holds mutex_
  std::string path_;
  std::mutex mutex_;
  std::unique_ptr<Database> db_;
};

}  // namespace kiln::projects
