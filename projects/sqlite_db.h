// A thin RAII layer over the SQLite C API (https://sqlite.org/cintro.html) used by
// the project store: a connection, prepared statements and a transaction guard.
// Every failure throws ProjectError naming the database file and SQLite's message.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::projects {

// Message names the file and the problem, e.g. "project /x/a.kiln: not a SQLite database".
struct ProjectError : kiln::Error {
  using Error::Error;
};

class Statement;

class Database {
 public:
  enum class Mode { read_only, read_write, create };
  static constexpr int kBusyTimeoutMs = 5000;  // how long a statement waits for another connection's lock
  // Opens path (busy timeout kBusyTimeoutMs); ProjectError "project PATH: cannot open: <sqlite message>".
  Database(const std::string& path, Mode mode);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  void exec(const std::string& sql);                 // one or more statements, no results
  Statement prepare(std::string_view sql) const;
  int64_t last_insert_rowid() const;
  int changes() const;                               // rows changed by the last statement
  int64_t pragma_int(const std::string& name) const;  // "PRAGMA name" -> first column
  [[noreturn]] void fail(const std::string& what, int rc) const;  // throws ProjectError

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// A prepared statement; bind() is 1-based like sqlite3_bind_*, column() 0-based.
class Statement {
 public:
  Statement(const Database& db, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);  // NaN is stored as NULL by SQLite
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  Statement& bind_null(int index);
  Statement& bind_blob(int index, const void* data, size_t bytes);

  bool step();   // true while a row is available
  void run();    // step() to completion, for statements without results
  void reset();  // ready to bind and step again

  bool is_null(int col) const;
  int64_t int64(int col) const;
  double real(int col) const;  // NULL -> quiet NaN (SQLite stores NaN as NULL)
  std::string text(int col) const;
  std::vector<char> blob(int col) const;

 private:
  const Database* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE in the constructor; commit() commits, the destructor rolls back
// when commit() was not reached (an exception left the scope).
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

// Current time as ISO-8601 UTC with milliseconds: "2026-11-29T19:26:27.123Z".
std::string utc_now();
// The same format for a time in seconds since the Unix epoch (e.g. a heartbeat).
std::string utc_from_unix(double seconds);

}  // namespace kiln::projects
