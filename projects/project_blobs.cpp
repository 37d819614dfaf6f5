// Project: the blobs table (schema 5), tensor bytes of graph JSON keyed by their SHA-256.
#include <openssl/evp.h>

#include <array>
#include <set>

#include "projects/project.h"

namespace kiln::projects {

namespace {

constexpr std::string_view kKeyPrefix = "sha256:";
constexpr size_t kHexDigits = 64;

std::string sha256_key(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md.data(), &n, EVP_sha256(), nullptr) != 1 || n * 2 != kHexDigits)
    throw ProjectError("SHA-256 of " + std::to_string(bytes.size()) + " bytes failed (OpenSSL EVP_Digest)");
  static const char* digits = "0123456789abcdef";
  std::string key(kKeyPrefix);
  for (unsigned int i = 0; i < n; ++i) {
    key += digits[md[i] >> 4];
    key += digits[md[i] & 15];
  }
  return key;
}

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Every blob key quoted in `json`: the keys of {"blob": "sha256:..."} entries. A key's
// text cannot occur elsewhere in graph JSON by chance (64 hex digits after "sha256:"), and
// finding one too many only keeps a blob.
void collect_keys(const std::string& json, std::set<std::string>& keys) {
  const std::string needle = "\"" + std::string(kKeyPrefix);
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
    const size_t begin = at + 1, end = begin + kKeyPrefix.size() + kHexDigits;
    if (end >= json.size() || json[end] != '"') continue;
    bool hex = true;
    for (size_t i = begin + kKeyPrefix.size(); i < end && hex; ++i) hex = is_hex_digit(json[i]);
    if (hex) keys.insert(json.substr(begin, end - begin));
  }
}

}  // namespace

std::string Project::put(std::string_view bytes) {
  std::string key = sha256_key(bytes);
  Statement have = db_->prepare("SELECT 1 FROM blobs WHERE key = ?");
  have.bind(1, key);
  if (have.step()) return key;
  db_->prepare("INSERT OR IGNORE INTO blobs(key, size, data) VALUES(?, ?, ?)")
      .bind(1, key)
      .bind(2, static_cast<int64_t>(bytes.size()))
      .bind_blob(3, bytes.data(), bytes.size())
      .run();
  return key;
}

std::string Project::get(const std::string& key) const {
  Statement s = db_->prepare("SELECT size, data FROM blobs WHERE key = ?");
  s.bind(1, key);
  if (!s.step()) throw ProjectError("project " + path() + ": blob " + key + " is missing (the file is damaged)");
  const std::vector<char> data = s.blob(1);
  if (static_cast<int64_t>(data.size()) != s.int64(0) || sha256_key({data.data(), data.size()}) != key)
    throw ProjectError("project " + path() + ": blob " + key + " is damaged (its bytes do not match the key)");
  return {data.data(), data.size()};
}

int Project::purge_unreferenced_blobs() {
  Transaction tx(*db_);
  std::set<std::string> used;
  for (const char* sql : {"SELECT graph_json FROM graph_versions", "SELECT graph_json FROM autosave"}) {
    Statement s = db_->prepare(sql);
    while (s.step()) collect_keys(s.text(0), used);
  }
  std::vector<std::string> unused;
  {
    Statement s = db_->prepare("SELECT key FROM blobs");
    while (s.step())
      if (!used.count(s.text(0))) unused.push_back(s.text(0));
  }
  Statement del = db_->prepare("DELETE FROM blobs WHERE key = ?");
  for (const std::string& key : unused) {
    del.bind(1, key).run();
    del.reset();
  }
  tx.commit();
  return static_cast<int>(unused.size());
}

}  // namespace kiln::projects
