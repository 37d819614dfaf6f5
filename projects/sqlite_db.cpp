#include "projects/sqlite_db.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>

namespace kiln::projects {

Database::Database(const std::string& path, Mode mode) : path_(path) {
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case Mode::read_only: flags |= SQLITE_OPEN_READONLY; break;
    case Mode::read_write: flags |= SQLITE_OPEN_READWRITE; break;
    case Mode::create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
  }
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw ProjectError("project " + path + ": cannot open: " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  // Every connection waits up to 5 s for another one's lock, the read-only one of
  // check_project_file too: while a connection of another thread or process closes,
  // opening one (reading the schema) can find the file locked for a moment, and without
  // a timeout that is an immediate "database is locked" (https://sqlite.org/c3ref/busy_timeout.html).
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
}

Database::~Database() { sqlite3_close_v2(db_); }

void Database::fail(const std::string& what, int rc) const {
  std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  int primary = rc & 0xff;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
    msg = "the file is corrupt (" + msg + ")";
  throw ProjectError("project " + path_ + ": " + what + ": " + msg);
}

void Database::exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    int primary = rc & 0xff;
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) msg = "the file is corrupt (" + msg + ")";
    throw ProjectError("project " + path_ + ": " + msg + " (in: " + sql.substr(0, 60) + ")");
  }
}

Statement Database::prepare(std::string_view sql) const { return Statement(*this, sql); }

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int Database::changes() const { return sqlite3_changes(db_); }

int64_t Database::pragma_int(const std::string& name) const {
  Statement s(*this, "PRAGMA " + name);
  if (!s.step()) throw ProjectError("project " + path_ + ": PRAGMA " + name + " returned no value");
  return s.int64(0);
}

Statement::Statement(const Database& db, std::string_view sql) : db_(&db) {
  int rc = sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) db.fail("cannot prepare '" + std::string(sql.substr(0, 60)) + "'", rc);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }

Statement& Statement::bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) db_->fail("bind", rc);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) db_->fail("bind", rc);
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) db_->fail("bind", rc);
  return *this;
}

Statement& Statement::bind_null(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) db_->fail("bind", rc);
  return *this;
}

Statement& Statement::bind_blob(int index, const void* data, size_t bytes) {
  // A zero-length blob must not be bound as NULL: give SQLite a valid pointer.
  static const char empty = 0;
  int rc = sqlite3_bind_blob64(stmt_, index, bytes ? data : &empty, bytes, SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_->fail("bind", rc);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail(std::string("'") + std::string(sqlite3_sql(stmt_)).substr(0, 60) + "'", rc);
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

int64_t Statement::int64(int col) const { return sqlite3_column_int64(stmt_, col); }

double Statement::real(int col) const {
  if (is_null(col)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, col);
}

std::string Statement::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

std::vector<char> Statement::blob(int col) const {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::vector<char>(p, p + n) : std::vector<char>();
}

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

std::string utc_from_unix(double seconds) {
  const auto total_ms = static_cast<int64_t>(std::llround(seconds * 1000.0));
  const std::time_t t = static_cast<std::time_t>(total_ms / 1000);
  const int ms = static_cast<int>(total_ms % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, ms);
  return out;
}

std::string utc_now() {
  using namespace std::chrono;
  return utc_from_unix(static_cast<double>(duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count()) /
                       1000.0);
}

}  // namespace kiln::projects
