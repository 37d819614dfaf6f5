#include "projects/schema.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <sqlite3.h>

namespace kiln::projects {

namespace {

// Schema 1. Times are ISO-8601 UTC text (utc_now()); JSON columns hold UTF-8 text.
constexpr const char* kSchema1 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta(key, value) VALUES('application', 'kiln-project');
CREATE TABLE graph_versions(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  graph_json TEXT NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL);
CREATE TABLE autosave(
  slot INTEGER PRIMARY KEY CHECK(slot = 1),
  graph_json TEXT NOT NULL,
  saved_at TEXT NOT NULL);
CREATE TABLE settings(key TEXT PRIMARY KEY, json TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  config_json TEXT NOT NULL DEFAULT '{}',
  device TEXT NOT NULL DEFAULT '',
  graph_version INTEGER REFERENCES graph_versions(id),
  started_at TEXT NOT NULL,
  ended_at TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK(status IN ('running', 'finished', 'stopped', 'failed')),
  message TEXT NOT NULL DEFAULT '',
  final_metrics_json TEXT NOT NULL DEFAULT '');
CREATE TABLE step_metrics(
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL, epoch INTEGER NOT NULL,
  loss REAL, lr REAL, images_per_second REAL, time_s REAL,
  PRIMARY KEY(run, step)) WITHOUT ROWID;
CREATE TABLE epoch_metrics(
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch INTEGER NOT NULL,
  train_loss REAL, train_accuracy REAL, val_loss REAL, val_accuracy REAL, lr REAL, seconds REAL,
  PRIMARY KEY(run, epoch)) WITHOUT ROWID;
CREATE TABLE checkpoints(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE(run, epoch));
CREATE TABLE checkpoint_files(
  checkpoint INTEGER NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(checkpoint, name));
CREATE TABLE exports(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL, path TEXT NOT NULL, created_at TEXT NOT NULL);
)sql";

// Schema 2: runs may end as 'interrupted' (the process died without end_run), and carry
// the liveness of the process writing them: pid, host name and heartbeat_at (Unix time
// in seconds, refreshed by MetricsWriter). SQLite cannot change a CHECK constraint, so
// the table is rebuilt (https://sqlite.org/lang_altertable.html#otheralter); migrate()
// turns foreign keys off around the steps so that DROP TABLE does not cascade.
constexpr const char* kSchema2 = R"sql(
CREATE TABLE runs_v2(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  config_json TEXT NOT NULL DEFAULT '{}',
  device TEXT NOT NULL DEFAULT '',
  graph_version INTEGER REFERENCES graph_versions(id),
  started_at TEXT NOT NULL,
  ended_at TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK(status IN ('running', 'finished', 'stopped', 'failed', 'interrupted')),
  message TEXT NOT NULL DEFAULT '',
  final_metrics_json TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  host TEXT NOT NULL DEFAULT '',
  heartbeat_at REAL NOT NULL DEFAULT 0);
INSERT INTO runs_v2(id, name, config_json, device, graph_version, started_at, ended_at, status, message,
                    final_metrics_json)
  SELECT id, name, config_json, device, graph_version, started_at, ended_at, status, message, final_metrics_json
  FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
)sql";

// Schema 3: checkpoints remember the validation accuracy they were taken at (to keep a
// run's best and latest epoch, Project::add_epoch_checkpoint), and each run may carry the
// evaluation of its model on the test images (Project::set_evaluation).
constexpr const char* kSchema3 = R"sql(
ALTER TABLE checkpoints ADD COLUMN val_accuracy REAL;
CREATE TABLE evaluations(
  run INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  count INTEGER NOT NULL, loss REAL, accuracy REAL,
  class_names TEXT NOT NULL,
  confusion BLOB NOT NULL,
  misclassified TEXT NOT NULL,
  image_height INTEGER NOT NULL DEFAULT 0, image_width INTEGER NOT NULL DEFAULT 0,
  images BLOB,
  created_at TEXT NOT NULL);
)sql";

// Schema 4: runs carry tags (one per line; the Runs view filters by them) and may be
// deleted softly (deleted_at: ISO-8601 UTC, '' = not deleted) so a delete can be undone
// until the project is closed; an evaluation keeps every test sample's prediction
// (Evaluation::predictions, so the confusion matrix can list the samples of a cell).
constexpr const char* kSchema4 = R"sql(
ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN deleted_at TEXT NOT NULL DEFAULT '';
ALTER TABLE evaluations ADD COLUMN predictions BLOB;
)sql";

// Schema 5: tensor bytes of graph versions and the autosave slot live in a table of their
// own, keyed by their SHA-256 (Project::blobs), so an imported model's weights are stored
// once however often the graph is saved; graph JSON refers to them as {"blob": key}
// (engine/graph/json.h). Older graph versions keep their inline data and read as before.
constexpr const char* kSchema5 = R"sql(
CREATE TABLE blobs(key TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);
)sql";

// Schema 6: the evaluation of a run on texts keeps each test text's origin, one-line text
// and tokens (Evaluation::texts), so a reopened run lists its misclassified texts.
constexpr const char* kSchema6 = R"sql(
ALTER TABLE evaluations ADD COLUMN texts BLOB;
)sql";

// Schema 7: hyper-parameter sweeps (Project::create_sweep). A sweep keeps its search space,
// objective and base settings as JSON; each planned trial is a row with its parameter values
// and, once it runs, the run it trained (an ordinary run, tagged "sweep N"). A trial whose
// run was interrupted is kept as 'interrupted' and queued again as a new row on resume.
constexpr const char* kSchema7 = R"sql(
CREATE TABLE sweeps(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  space_json TEXT NOT NULL,
  objective TEXT NOT NULL,
  graph_version INTEGER REFERENCES graph_versions(id),
  created_at TEXT NOT NULL,
  ended_at TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK(status IN ('running', 'finished', 'stopped')));
CREATE TABLE sweep_trials(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  sweep INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  trial INTEGER NOT NULL,
  params_json TEXT NOT NULL,
  run INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  status TEXT NOT NULL
    CHECK(status IN ('queued', 'running', 'finished', 'pruned', 'stopped', 'failed', 'interrupted')),
  objective REAL,
  message TEXT NOT NULL DEFAULT '');
CREATE INDEX sweep_trials_by_sweep ON sweep_trials(sweep, trial);
)sql";

// Schema 8: the evaluation of a regression run (a CSV table's numeric label) keeps the label
// column's name and each test row's actual and predicted value (Evaluation::regression), so a
// reopened run shows its predicted-vs-actual scatter, MAE, RMSE and R².
constexpr const char* kSchema8 = R"sql(
ALTER TABLE evaluations ADD COLUMN target TEXT NOT NULL DEFAULT '';
ALTER TABLE evaluations ADD COLUMN regression BLOB;
)sql";

// Schema 9: device comparisons (issue 20, Compare devices): one row per comparison of a graph
// across devices and precisions; results_json is the document `kiln bench --graph --json` writes
// (docs/compare-devices.md), so the Studio and the command line export the same.
constexpr const char* kSchema9 = R"sql(
CREATE TABLE device_comparisons(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  graph_version INTEGER REFERENCES graph_versions(id) ON DELETE SET NULL,
  created_at TEXT NOT NULL,
  batch_size INTEGER NOT NULL CHECK(batch_size >= 1),
  results_json TEXT NOT NULL);
)sql";

// Schema 10 (issue 14): a run keeps the preprocessing fitted on its data (runs.preprocessing_json:
// {"images": images.json} or {"table": table.json}, as `kiln train` writes them), so that Predict
// needs neither the dataset nor a rescan of it; and the verified file index of an image folder is
// kept by key (engine/data/image/image_index_store.h: the folder and its fixed classes), so that
// reopening the project does not read 100,000 images again.
constexpr const char* kSchema10 = R"sql(
ALTER TABLE runs ADD COLUMN preprocessing_json TEXT NOT NULL DEFAULT '';
CREATE TABLE file_indexes(key TEXT PRIMARY KEY, data BLOB NOT NULL, updated_at TEXT NOT NULL);
)sql";

// Schema 11 (issue 14): a run may keep one checkpoint taken in the middle of an epoch besides its
// epoch checkpoints (Project::add_mid_epoch_checkpoint): `batch` is the batches of the epoch after
// `epoch` done (0: an epoch checkpoint), `step` the optimizer steps taken (0: unknown, stored
// before schema 11). UNIQUE(run, epoch) becomes UNIQUE(run, epoch, batch), so the table is
// rebuilt as schema 2 rebuilt runs (checkpoint_files keep their ids).
constexpr const char* kSchema11 = R"sql(
CREATE TABLE checkpoints_v11(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  val_accuracy REAL,
  batch INTEGER NOT NULL DEFAULT 0,
  step INTEGER NOT NULL DEFAULT 0,
  UNIQUE(run, epoch, batch));
INSERT INTO checkpoints_v11(id, run, epoch, created_at, val_accuracy)
  SELECT id, run, epoch, created_at, val_accuracy FROM checkpoints;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v11 RENAME TO checkpoints;
)sql";

// Schema 12 (issue 20, per-layer profile): each per-layer profile the Studio or `kiln bench --profile
// --project` measured is kept, so that it can be reopened and compared with a later one. The
// columns a list shows and filters by are columns; the figures are profile_json, the document
// `kiln bench --graph --profile --json` writes (engine/graph/layer_profile.h profile_json: its
// "layers" rows with name, op, forward_ms, backward_ms, share_percent, and loss_*_ms, outside_ms),
// as device_comparisons keep theirs. graph_version and run say what was profiled; deleting either
// keeps the profile.
constexpr const char* kSchema12 = R"sql(
CREATE TABLE profiles(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  graph_version INTEGER REFERENCES graph_versions(id) ON DELETE SET NULL,
  run INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  device TEXT NOT NULL,
  precision TEXT NOT NULL,
  batch_size INTEGER NOT NULL CHECK(batch_size >= 1),
  steps INTEGER NOT NULL CHECK(steps >= 0),
  profile_json TEXT NOT NULL);
)sql";

uint32_t be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

[[noreturn]] void reject(const std::string& path, const std::string& why) {
  throw ProjectError("cannot open project " + path + ": " + why);
}

// Reads the first n bytes of the file through SQLite's VFS, never with a file descriptor
// of our own: closing any descriptor of a file releases every POSIX lock this process
// holds on it, so an ifstream here would silently drop the locks of a connection this
// process already has open (another Project on the same file) and let two writers
// corrupt it (https://sqlite.org/howtocorrupt.html#_posix_advisory_locks_canceled_by_a_separate_thread_doing_close_).
// The unix VFS keeps such a descriptor open until the other connections release their locks.
size_t read_head(const std::string& path, unsigned char* out, uint64_t n) {
  sqlite3_vfs* vfs = sqlite3_vfs_find(nullptr);
  if (!vfs) reject(path, "SQLite has no default VFS");
  std::vector<char> storage(static_cast<size_t>(vfs->szOsFile));
  auto* file = reinterpret_cast<sqlite3_file*>(storage.data());
  int flags = 0;
  if (vfs->xOpen(vfs, path.c_str(), file, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB, &flags) != SQLITE_OK) {
    if (file->pMethods) file->pMethods->xClose(file);
    reject(path, "cannot be read (permission denied?)");
  }
  const int rc = file->pMethods->xRead(file, out, static_cast<int>(n), 0);
  file->pMethods->xClose(file);
  if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) reject(path, "cannot be read: I/O error " + std::to_string(rc));
  return static_cast<size_t>(n);
}

// The header checks that need no SQLite connection (https://sqlite.org/fileformat.html#the_database_header).
void check_header(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) reject(path, "the file does not exist");
  if (!fs::is_regular_file(path, ec)) reject(path, "not a regular file");
  const uint64_t size = fs::file_size(path, ec);
  if (ec) reject(path, "cannot read its size: " + ec.message());
  if (size == 0) reject(path, "the file is empty (0 bytes), not a Kiln project");
  std::array<unsigned char, 100> h{};
  const size_t got = read_head(path, h.data(), std::min<uint64_t>(size, h.size()));
  static const char kMagic[16] = "SQLite format 3";  // with its NUL: 16 bytes
  if (got < 16 || std::memcmp(h.data(), kMagic, 16) != 0)
    reject(path, "not a Kiln project: not a SQLite database (it does not start with \"SQLite format 3\")");
  if (got < 100) reject(path, "truncated: " + std::to_string(size) + " bytes, shorter than the 100-byte SQLite header");
  uint32_t page = (uint32_t(h[16]) << 8) | h[17];
  if (page == 1) page = 65536;
  if (page < 512 || page > 65536 || (page & (page - 1)) != 0)
    reject(path, "the file is corrupt: invalid page size " + std::to_string(page) + " in the SQLite header");
  if (size % page != 0)
    reject(path, "truncated or corrupt: its size " + std::to_string(size) + " bytes is not a multiple of the page size " +
                     std::to_string(page));
  // With a non-empty -wal beside it (after a crash) the WAL holds the newest pages:
  // quick_check below judges the combination instead.
  const uint64_t wal_size = fs::exists(path + "-wal", ec) ? fs::file_size(path + "-wal", ec) : 0;
  const uint32_t pages = be32(&h[28]), change = be32(&h[24]), valid_for = be32(&h[92]);
  if (wal_size == 0 && pages != 0 && valid_for == change && uint64_t(pages) * page > size)
    reject(path, "truncated: the header says " + std::to_string(pages) + " pages (" +
                     std::to_string(uint64_t(pages) * page) + " bytes) but the file has " + std::to_string(size) +
                     " bytes");
  const uint32_t app = be32(&h[68]);
  if (app != static_cast<uint32_t>(kApplicationId))
    reject(path, "not a Kiln project: a SQLite database with application_id " + hex32(app) + " (Kiln projects have " +
                     hex32(static_cast<uint32_t>(kApplicationId)) + ")");
}

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> steps = {{0, kSchema1}, {1, kSchema2}, {2, kSchema3}, {3, kSchema4}, {4, kSchema5}, {5, kSchema6}, {6, kSchema7}, {7, kSchema8}, {8, kSchema9}, {9, kSchema10}, {10, kSchema11}, {11, kSchema12}};
  return steps;
}

void migrate(Database& db, int from, int to, const std::vector<Migration>& steps) {
  // PRAGMA foreign_keys is a no-op inside a transaction: switch it off around them.
  const bool foreign_keys = db.pragma_int("foreign_keys") != 0;
  if (foreign_keys) db.exec("PRAGMA foreign_keys = OFF");
  struct Restore {
    Database& db;
    bool on;
    ~Restore() {
      try {
        if (on) db.exec("PRAGMA foreign_keys = ON");
      } catch (...) {
      }
    }
  } restore{db, foreign_keys};
  for (int v = from; v < to; ++v) {
    const Migration* step = nullptr;
    for (const auto& m : steps)
      if (m.from == v) step = &m;
    if (!step)
      throw ProjectError("project " + db.path() + ": no migration from schema " + std::to_string(v) + " to " +
                         std::to_string(v + 1));
    try {
      Transaction tx(db);
      db.exec(step->sql);
      {
        Statement fk = db.prepare("PRAGMA foreign_key_check");
        if (fk.step())
          throw ProjectError("table " + fk.text(0) + " row " + std::to_string(fk.int64(1)) +
                             " refers to a missing row of " + fk.text(2));
      }
      db.exec("PRAGMA user_version = " + std::to_string(v + 1));
      db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)").bind(1, std::to_string(v + 1)).run();
      tx.commit();
    } catch (const ProjectError& e) {
      throw ProjectError("project " + db.path() + ": migrating schema " + std::to_string(v) + " -> " +
                         std::to_string(v + 1) + " failed: " + e.what());
    }
  }
}

void configure_connection(Database& db) {
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
}

int check_project_file(const std::string& path, int supported) {
  check_header(path);
  int version = 0;
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool had_wal = fs::exists(path + "-wal", ec), had_shm = fs::exists(path + "-shm", ec);
  try {
    Database db(path, Database::Mode::read_only);
    db.exec("PRAGMA query_only = 1");
    {
      Statement check = db.prepare("PRAGMA quick_check(5)");
      std::string problems;
      while (check.step()) {
        std::string row = check.text(0);
        if (row == "ok") continue;
        const std::string banner = "*** in database main ***\n";
        if (row.rfind(banner, 0) == 0) row.erase(0, banner.size());
        for (char& c : row)
          if (c == '\n') c = ';';
        problems += (problems.empty() ? "" : "; ") + row;
      }
      if (!problems.empty()) reject(path, "the file is corrupt: " + problems);
    }
    if (db.pragma_int("application_id") != kApplicationId) reject(path, "not a Kiln project (application_id differs)");
    const int64_t v = db.pragma_int("user_version");
    if (v < 0 || v > 1000000) reject(path, "the file is corrupt: invalid schema version " + std::to_string(v));
    if (v > supported)
      reject(path, "made by a newer Kiln: schema " + std::to_string(v) + ", this build reads <= " +
                       std::to_string(supported));
    version = static_cast<int>(v);
    if (version >= 1) {
      Statement meta = db.prepare("SELECT key, value FROM meta WHERE key IN ('application', 'schema_version')");
      std::string app, schema;
      while (meta.step()) (meta.text(0) == "application" ? app : schema) = meta.text(1);
      if (app != kApplicationName)
        reject(path, "not a Kiln project: meta.application is '" + app + "', expected '" + kApplicationName + "'");
      if (schema != std::to_string(version))
        reject(path, "the file is corrupt: meta.schema_version '" + schema + "' differs from user_version " +
                         std::to_string(version));
    }
    if (version == kCurrentSchema) {
      for (const char* table : {"graph_versions", "autosave", "settings", "runs", "step_metrics", "epoch_metrics",
                                "checkpoints", "checkpoint_files", "exports", "evaluations", "blobs", "sweeps",
                                "sweep_trials", "device_comparisons", "file_indexes", "profiles"}) {
        Statement t = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
        t.bind(1, table);
        if (!t.step()) reject(path, std::string("the file is damaged: its table '") + table + "' is missing");
      }
    }
  } catch (const ProjectError& e) {
    // The read-only connection of a WAL-mode file made a -wal and -shm beside it, which
    // SQLite leaves when a read-only connection closes: a refused file gets none.
    if (!had_wal && fs::exists(path + "-wal", ec) && fs::file_size(path + "-wal", ec) == 0) fs::remove(path + "-wal", ec);
    if (!had_shm) fs::remove(path + "-shm", ec);
    std::string msg = e.what();
    if (msg.rfind("cannot open project ", 0) == 0) throw;
    reject(path, msg);  // e.g. "no such table: meta", "file is not a database"
  }
  return version;
}

}  // namespace kiln::projects
