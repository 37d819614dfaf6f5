#include "engine/io/checkpoint.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "engine/core/error.h"
#include "engine/io/atomic_file.h"

namespace kiln::io {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "kiln-trainer";
constexpr int kVersion = 1;

// Text that strtod turns back into exactly v ("inf", "-inf" and "nan" included).
std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

bool parse_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// JSON has no inf or nan: such values are stored as their text.
json scalar_to_json(double v) { return std::isfinite(v) ? json(v) : json(format_double(v)); }

std::string require_file(const fs::path& dir, const char* name) {
  fs::path p = dir / name;
  KILN_CHECK(fs::is_regular_file(p), IoError, p.string(), ": no such file (checkpoint in ", dir.string(),
             " is incomplete)");
  return p.string();
}

}  // namespace

void save_checkpoint(const std::string& dir, const Checkpoint& ckpt) {
  const fs::path target = fs::path(dir).lexically_normal();
  const fs::path target_dir = target.has_filename() ? target : target.parent_path();  // "a/b/" -> "a/b"
  const fs::path d = target_dir.string() + ".new", old = target_dir.string() + ".old";
  std::error_code ec;
  fs::remove_all(d, ec);  // what a killed save left
  fs::create_directories(d, ec);
  KILN_CHECK(fs::is_directory(d), IoError, d.string(), ": cannot create the checkpoint directory (", ec.message(), ")");

  save_safetensors((d / "model.safetensors").string(), ckpt.model);
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : ckpt.optimizer_scalars) meta[k] = format_double(v);
  save_safetensors((d / "optimizer.safetensors").string(), ckpt.optimizer, meta);

  json j = {{"format", kFormat}, {"version", kVersion}, {"strings", ckpt.trainer}, {"scalars", json::object()}};
  for (const auto& [k, v] : ckpt.trainer_scalars) j["scalars"][k] = scalar_to_json(v);
  std::string text = j.dump(2) + "\n";
  AtomicFile out((d / "trainer.json").string());
  out.write(text.data(), text.size());
  out.commit();

  // The swap: DIR -> DIR.old, DIR.new -> DIR, then DIR.old removed.
  auto rename = [](const fs::path& from, const fs::path& to) {
    std::error_code e;
    fs::rename(from, to, e);
    KILN_CHECK(!e, IoError, "cannot rename ", from.string(), " to ", to.string(), " (", e.message(), ")");
  };
  if (fs::exists(target_dir, ec)) {
    fs::remove_all(old, ec);
    rename(target_dir, old);
  }
  rename(d, target_dir);
  fs::remove_all(old, ec);
}

Checkpoint load_checkpoint(const std::string& dir) {
  fs::path d = fs::path(dir).lexically_normal();
  if (!d.has_filename()) d = d.parent_path();
  std::string note;
  if (!fs::is_directory(d) && fs::is_directory(d.string() + ".old")) {
    note = d.string() + " is missing: a save of it was interrupted; read the previous checkpoint, " + d.string() +
           ".old";
    d = d.string() + ".old";
  }
  KILN_CHECK(fs::is_directory(d), IoError, dir, ": no such checkpoint directory");
  std::string model_path = require_file(d, "model.safetensors");
  std::string optim_path = require_file(d, "optimizer.safetensors");
  std::string trainer_path = require_file(d, "trainer.json");

  Checkpoint ckpt;
  ckpt.note = note;
  ckpt.model = load_safetensors(model_path).tensors;
  SafetensorsFile optim = load_safetensors(optim_path);
  ckpt.optimizer = std::move(optim.tensors);
  for (const auto& [k, s] : optim.metadata) {
    double v = 0;
    KILN_CHECK(parse_double(s, v), IoError, optim_path, ": metadata '", k, "' = \"", s, "\" is not a number");
    ckpt.optimizer_scalars[k] = v;
  }

  std::ifstream in(trainer_path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    json j = json::parse(ss.str());
    KILN_CHECK(j.is_object() && j.value("format", "") == kFormat, IoError, trainer_path,
               ": not a Kiln trainer state (\"format\" is not \"", kFormat, "\")");
    KILN_CHECK(j.value("version", 0) == kVersion, IoError, trainer_path, ": unsupported version ",
               j.value("version", json()).dump(), " (this build reads version ", kVersion, ")");
    const json& strings = j.value("strings", json::object());
    const json& scalars = j.value("scalars", json::object());
    KILN_CHECK(strings.is_object() && scalars.is_object(), IoError, trainer_path,
               ": \"strings\" and \"scalars\" must be objects");
    for (const auto& [k, v] : strings.items()) {
      KILN_CHECK(v.is_string(), IoError, trainer_path, ": strings.", k, " must be a string, got ", v.dump());
      ckpt.trainer[k] = v.get<std::string>();
    }
    for (const auto& [k, v] : scalars.items()) {
      double x = 0;
      bool ok = v.is_number() ? (x = v.get<double>(), true) : v.is_string() && parse_double(v.get<std::string>(), x);
      KILN_CHECK(ok, IoError, trainer_path, ": scalars.", k, " must be a number, got ", v.dump());
      ckpt.trainer_scalars[k] = x;
    }
  } catch (const json::exception& e) {
    throw IoError(detail::str_cat(trainer_path, ": malformed trainer state (", e.what(), ")"));
  }
  return ckpt;
}

}  // namespace kiln::io
