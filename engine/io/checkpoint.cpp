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
  std::error_code ec;
  fs::create_directories(dir, ec);
  KILN_CHECK(fs::is_directory(dir), IoError, dir, ": cannot create the checkpoint directory (", ec.message(), ")");
  fs::path d(dir);

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
}

Checkpoint load_checkpoint(const std::string& dir) {
  KILN_CHECK(fs::is_directory(dir), IoError, dir, ": no such checkpoint directory");
  fs::path d(dir);
  std::string model_path = require_file(d, "model.safetensors");
  std::string optim_path = require_file(d, "optimizer.safetensors");
  std::string trainer_path = require_file(d, "trainer.json");

  Checkpoint ckpt;
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
