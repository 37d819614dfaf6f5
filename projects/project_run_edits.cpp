// Project: renaming, tagging, deleting (softly, with undo) and purging runs.
#include <algorithm>

#include "projects/project.h"

namespace kiln::projects {

namespace {

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

bool has_line_break(const std::string& s) { return s.find_first_of("\r\n") != std::string::npos; }

// The first 40 bytes of a long text for an error message (cut on a UTF-8 boundary).
std::string excerpt(const std::string& s) {
  if (s.size() <= 40) return s;
  size_t n = 40;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "...";
}

}  // namespace

std::string Project::unique_run_name(const std::string& base) const {
  Statement s = db_->prepare("SELECT 1 FROM runs WHERE name = ?");
  auto taken = [&s](const std::string& name) {
    s.reset();
    s.bind(1, name);
    return s.step();
  };
  if (!taken(base)) return base;
  for (int n = 2;; ++n) {
    std::string name = base + " #" + std::to_string(n);
    if (!taken(name)) return name;
  }
}

void Project::rename_run(int64_t run, const std::string& name) {
  const std::string where = "project " + path() + ": cannot rename run " + std::to_string(run) + ": ";
  const std::string n = trimmed(name);
  if (n.empty()) throw ProjectError(where + "the name is empty");
  if (has_line_break(n)) throw ProjectError(where + "the name '" + excerpt(n) + "' has a line break");
  if (n.size() > kMaxRunNameBytes)
    throw ProjectError(where + "the name is " + std::to_string(n.size()) + " bytes long, more than " +
                       std::to_string(kMaxRunNameBytes));
  Statement s = db_->prepare("UPDATE runs SET name = ? WHERE id = ?");
  s.bind(1, n).bind(2, run).run();
  if (db_->changes() == 0) throw ProjectError(where + "no such run");
}

void Project::set_run_tags(int64_t run, const std::vector<std::string>& tags) {
  const std::string where = "project " + path() + ": cannot tag run " + std::to_string(run) + ": ";
  std::vector<std::string> kept;
  for (const std::string& tag : tags) {
    const std::string t = trimmed(tag);
    if (has_line_break(t)) throw ProjectError(where + "the tag '" + excerpt(t) + "' has a line break");
    if (t.size() > kMaxTagBytes)
      throw ProjectError(where + "the tag '" + excerpt(t) + "' is " + std::to_string(t.size()) +
                         " bytes long, more than " + std::to_string(kMaxTagBytes));
    if (!t.empty() && std::find(kept.begin(), kept.end(), t) == kept.end()) kept.push_back(t);
  }
  if (kept.size() > kMaxTags)
    throw ProjectError(where + std::to_string(kept.size()) + " tags, more than " + std::to_string(kMaxTags));
  std::string text;
  for (const std::string& t : kept) text += (text.empty() ? "" : "\n") + t;
  Statement s = db_->prepare("UPDATE runs SET tags = ? WHERE id = ?");
  s.bind(1, text).bind(2, run).run();
  if (db_->changes() == 0) throw ProjectError(where + "no such run");
}

void Project::delete_run(int64_t run) {
  const std::string where = "project " + path() + ": cannot delete run " + std::to_string(run) + ": ";
  for (const RunRecord& r : runs(true)) {
    if (r.id != run) continue;
    if (r.status == RunStatus::running) throw ProjectError(where + "it is still running; stop it first");
    if (r.deleted) return;
    db_->prepare("UPDATE runs SET deleted_at = ? WHERE id = ?").bind(1, utc_now()).bind(2, run).run();
    return;
  }
  throw ProjectError(where + "no such run");
}

void Project::restore_run(int64_t run) {
  Statement s = db_->prepare("UPDATE runs SET deleted_at = '' WHERE id = ?");
  s.bind(1, run).run();
  if (db_->changes() == 0)
    throw ProjectError("project " + path() + ": cannot restore run " + std::to_string(run) +
                       ": no such run (deleted runs are purged when the project is closed)");
}

int Project::purge_deleted_runs() {
  Transaction tx(*db_);
  db_->exec("DELETE FROM runs WHERE deleted_at != ''");
  const int purged = db_->changes();
  tx.commit();
  return purged;
}

}  // namespace kiln::projects
