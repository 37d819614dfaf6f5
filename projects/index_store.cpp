#include "projects/index_store.h"

#include "projects/schema.h"

namespace kiln::projects {

Database& ProjectIndexStore::db() {
  if (!db_) {
    auto db = std::make_unique<Database>(path_, Database::Mode::read_write);
    configure_connection(*db);
    if (db->pragma_int("application_id") != kApplicationId)
      throw ProjectError("project " + path_ + ": not a Kiln project (application_id differs)");
    if (db->pragma_int("user_version") < 10)
      throw ProjectError("project " + path_ + ": schema " + std::to_string(db->pragma_int("user_version")) +
                         " keeps no file indexes (open it in this Kiln to migrate it)");
    db_ = std::move(db);
  }
  return *db_;
}

std::optional<std::string> ProjectIndexStore::load(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement s = db().prepare("SELECT data FROM file_indexes WHERE key = ?");
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  const std::vector<char> bytes = s.blob(0);
  return std::string(bytes.begin(), bytes.end());
}

void ProjectIndexStore::save(const std::string& key, const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  db().prepare("INSERT OR REPLACE INTO file_indexes(key, data, updated_at) VALUES(?, ?, ?)")
      .bind(1, key)
      .bind_blob(2, text.data(), text.size())
      .bind(3, utc_now())
      .run();
}

}  // namespace kiln::projects
