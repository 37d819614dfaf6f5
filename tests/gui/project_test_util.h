// Helpers shared by the project store tests (tests/gui/test_project_*.cpp).
#pragma once
#include <sqlite3.h>

#include <QCryptographicHash>
#include <QFile>
#include <QString>
#include <functional>
#include <string>

#include "projects/project.h"

namespace kiln_test {

// The message of the ProjectError f throws, or "" when it throws nothing.
inline QString project_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::projects::ProjectError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

inline QByteArray file_sha256(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex();
}

inline void write_file(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) qFatal("cannot write %s", qPrintable(path));
  f.write(bytes);
}

inline QByteArray read_file(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

// Runs SQL on a database through the plain C API (no Kiln code), for hand-made files.
inline void raw_sql(const QString& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.toStdString().c_str(), &db) != SQLITE_OK) qFatal("sqlite3_open failed");
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) qFatal("raw_sql: %s", err);
  sqlite3_close(db);
}

inline int64_t raw_int(const QString& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.toStdString().c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

}  // namespace kiln_test
