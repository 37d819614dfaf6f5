// Project: checkpoints stored as file blobs, the export log, Save As.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/io/atomic_file.h"
#include "projects/project.h"
#include "projects/schema.h"

namespace kiln::projects {

namespace fs = std::filesystem;

void Project::add_checkpoint(int64_t run, int epoch, const std::string& checkpoint_dir) {
  Transaction tx(*db_);
  store_checkpoint(run, epoch, checkpoint_dir, std::nan(""));
  tx.commit();
}

void Project::store_checkpoint(int64_t run, int epoch, const std::string& checkpoint_dir, double val_accuracy,
                               int64_t batch, int64_t step) {
  require_run(run);
  const std::string where = "project " + path() + ": checkpoint of run " + std::to_string(run) + " epoch " +
                            std::to_string(epoch) + " from " + checkpoint_dir;
  std::error_code ec;
  if (!fs::is_directory(checkpoint_dir, ec)) throw ProjectError(where + ": the folder does not exist");
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(checkpoint_dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) files.push_back(it->path());
  if (ec) throw ProjectError(where + ": cannot list the folder: " + ec.message());
  if (files.empty()) throw ProjectError(where + ": the folder holds no files");
  std::sort(files.begin(), files.end());

  db_->prepare("DELETE FROM checkpoints WHERE run = ? AND epoch = ? AND batch = ?").bind(1, run).bind(2, epoch).bind(3, batch).run();
  db_->prepare("INSERT INTO checkpoints(run, epoch, created_at, val_accuracy, batch, step) VALUES(?, ?, ?, ?, ?, ?)")
      .bind(1, run)
      .bind(2, epoch)
      .bind(3, utc_now())
      .bind(4, val_accuracy)
      .bind(5, batch)
      .bind(6, step)
      .run();
  const int64_t id = db_->last_insert_rowid();
  Statement insert = db_->prepare("INSERT INTO checkpoint_files(checkpoint, name, data) VALUES(?, ?, ?)");
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ProjectError(where + ": cannot read " + file.string());
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw ProjectError(where + ": error reading " + file.string());
    insert.reset();
    insert.bind(1, id).bind(2, fs::relative(file, checkpoint_dir).generic_string()).bind_blob(3, bytes.data(), bytes.size());
    insert.run();
  }
}

std::vector<int> Project::checkpoint_epochs(int64_t run) const {
  Statement s = db_->prepare("SELECT epoch FROM checkpoints WHERE run = ? AND batch = 0 ORDER BY epoch");
  s.bind(1, run);
  std::vector<int> out;
  while (s.step()) out.push_back(static_cast<int>(s.int64(0)));
  return out;
}

void Project::restore_checkpoint(int64_t run, int epoch, const std::string& into_dir) const {
  restore_checkpoint_files(run, epoch, 0, into_dir);
}

void Project::restore_checkpoint_files(int64_t run, int epoch, int64_t batch, const std::string& into_dir) const {
  const std::string where = "project " + path() + ": restoring checkpoint of run " + std::to_string(run) + " epoch " +
                            std::to_string(epoch) + (batch > 0 ? " batch " + std::to_string(batch) : "") + " into " +
                            into_dir;
  Statement s = db_->prepare(
      "SELECT f.name, f.data FROM checkpoint_files f JOIN checkpoints c ON f.checkpoint = c.id "
      "WHERE c.run = ? AND c.epoch = ? AND c.batch = ? ORDER BY f.name");
  s.bind(1, run).bind(2, epoch).bind(3, batch);
  bool any = false;
  while (s.step()) {
    any = true;
    const fs::path name(s.text(0));
    // Names were made relative by add_checkpoint; refuse anything that would escape into_dir.
    if (name.is_absolute() || name.empty() || *name.begin() == "..")
      throw ProjectError(where + ": the stored file name '" + name.string() + "' is not a relative path");
    const fs::path target = fs::path(into_dir) / name;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw ProjectError(where + ": cannot create " + target.parent_path().string() + ": " + ec.message());
    const std::vector<char> bytes = s.blob(1);
    try {
      io::AtomicFile file(target.string());
      file.write(bytes.data(), bytes.size());
      file.commit();
    } catch (const kiln::Error& e) {
      throw ProjectError(where + ": " + e.what());
    }
  }
  if (!any) throw ProjectError(where + ": there is no such checkpoint");
}

void Project::add_export(const std::string& kind, const std::string& export_path) {
  db_->prepare("INSERT INTO exports(kind, path, created_at) VALUES(?, ?, ?)")
      .bind(1, kind)
      .bind(2, export_path)
      .bind(3, utc_now())
      .run();
}

void Project::save_as(const std::string& new_path) {
  const std::string where = "cannot save project " + path() + " as " + new_path;
  std::error_code ec;
  if (fs::exists(new_path, ec) && fs::equivalent(new_path, path(), ec))
    throw ProjectError(where + ": it is the same file");
  const fs::path parent = fs::path(new_path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw ProjectError(where + ": the folder " + parent.string() + " does not exist");
  // VACUUM INTO writes a compact, consistent copy (header fields such as application_id
  // and user_version included) into a fresh temporary file, renamed over the target.
  const std::string tmp = new_path + ".saving";
  fs::remove(tmp, ec);
  try {
    db_->prepare("VACUUM INTO ?").bind(1, tmp).run();
  } catch (const ProjectError& e) {
    fs::remove(tmp, ec);
    throw ProjectError(where + ": " + e.what());
  }
  // A -wal left by an older file at new_path would be replayed onto the copy: remove it.
  fs::remove(new_path + "-wal", ec);
  fs::remove(new_path + "-shm", ec);
  fs::rename(tmp, new_path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    throw ProjectError(where + ": " + why);
  }
  Project copy = open(new_path);
  *this = std::move(copy);
}

}  // namespace kiln::projects
