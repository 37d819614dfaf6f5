// The .kiln file format: a SQLite 3 database (https://sqlite.org/fileformat.html)
// tagged with Kiln's application_id, its schema version in PRAGMA user_version
// (also in meta.schema_version), and the migrations that bring an older schema
// to the current one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "projects/sqlite_db.h"

namespace kiln::projects {

// PRAGMA application_id of every .kiln file: the ASCII bytes "KILN" (0x4B494C4E),
// stored big-endian at byte offset 68 of the database header.
inline constexpr int32_t kApplicationId = 0x4B494C4E;
inline constexpr const char* kApplicationName = "kiln-project";
// The schema this build writes and reads (Project::kSchemaVersion is the same value).
inline constexpr int kCurrentSchema = 12;

// One step of the schema: SQL that turns a version `from` file into a version
// `from + 1` file. The list is ordered, one step per version, starting at 0.
struct Migration {
  int from;
  std::string sql;
};
// Kiln's migrations; version 0 is a database that carries the application_id but no
// tables yet (what create() makes before its first step), so 0 -> 1 creates every table;
// 1 -> 2 adds the 'interrupted' run status and the runs' liveness (pid, host, heartbeat_at);
// 2 -> 3 adds checkpoints.val_accuracy and the evaluations table; 3 -> 4 adds runs.tags,
// runs.deleted_at and evaluations.predictions; 4 -> 5 adds the blobs table (tensor bytes
// of graph JSON, Project::blobs); 5 -> 6 adds evaluations.texts; 6 -> 7 adds the sweeps and
// sweep_trials tables (hyper-parameter sweeps, Project::create_sweep); 7 -> 8 adds
// evaluations.target and evaluations.regression (a regression run's test values); 8 -> 9 adds
// the device_comparisons table (Project::save_device_comparison); 9 -> 10 adds
// runs.preprocessing_json (Project::set_run_preprocessing) and the file_indexes table
// (projects/index_store.h); 10 -> 11 adds checkpoints.batch and checkpoints.step (a run's
// mid-epoch checkpoint, Project::add_mid_epoch_checkpoint); 11 -> 12 adds the profiles table
// (per-layer profiles, Project::add_profile).
const std::vector<Migration>& migrations();

// Runs steps[from .. to) on db, each in its own transaction (BEGIN IMMEDIATE) with
// foreign keys off (restored afterwards) and a foreign_key_check before the commit,
// setting user_version and meta.schema_version to step.from + 1 inside it; a failing
// step rolls back and throws ProjectError "migrating schema k -> k+1: ...", leaving
// the file at version k. ProjectError when a step is missing or out of order.
void migrate(Database& db, int from, int to, const std::vector<Migration>& steps);

// Checks that path is a Kiln project this build can open without writing to it:
// reads the 100-byte header itself, then a read-only connection runs quick_check and
// reads the schema version (WAL content included). Returns the schema version (0 ..
// supported). ProjectError naming path when the file is missing, empty, not SQLite,
// truncated, corrupt, a SQLite database of another application, or has a schema newer
// than `supported` ("made by a newer Kiln: schema 7, this build reads <= 1").
int check_project_file(const std::string& path, int supported);

// Per-connection settings of every read-write connection: journal_mode=WAL,
// synchronous=NORMAL (a committed transaction survives a process crash; a power loss
// may lose the last ones, https://sqlite.org/wal.html), foreign_keys=ON. (Database itself
// sets the 5 s busy timeout on every connection.)
void configure_connection(Database& db);

}  // namespace kiln::projects
