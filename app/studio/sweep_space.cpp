#include "app/studio/sweep_space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

#include "engine/core/error.h"
#include "engine/graph/input_dims.h"
#include "engine/graph/op_schema.h"
#include "engine/optim/factory.h"

namespace kiln::studio::sweep {

namespace {

// The training settings a sweep can vary (TrainingConfig's fields, by their CLI names).
const std::vector<std::string>& setting_names() {
  static const std::vector<std::string> names = {"lr", "batch-size", "optimizer", "scheduler", "epochs", "weight-decay"};
  return names;
}

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw SweepUsageError("--param " + text + ": " + why);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

double number(const std::string& text, const std::string& s) {
  if (s.empty()) bad(text, "an empty value");
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    bad(text, "'" + s + "' is not a number");
  }
  if (used != s.size() || !std::isfinite(v)) bad(text, "'" + s + "' is not a finite number");
  return v;
}

// The range a training setting's values must lie in (TrainingConfig::validate's rules).
void check_setting_value(const ParamSpec& p, double v) {
  if (p.name == "lr" && !(v > 0)) bad(p.text, "lr must be > 0, got " + value_text(v));
  if ((p.name == "batch-size" || p.name == "epochs") && v < 1)
    bad(p.text, p.name + " must be a whole number >= 1, got " + value_text(v));
  if (p.name == "weight-decay" && v < 0) bad(p.text, "weight-decay must be >= 0, got " + value_text(v));
}

// Whole numbers for integer parameters; others to 12 significant digits, so that a log grid's
// exp(log(..)) gives 0.001 rather than 0.0010000000000000002 (the stored and printed value).
double round_if(bool integer, double v) {
  if (integer) return std::round(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return std::strtod(buf, nullptr);
}

nlohmann::json as_value(const ParamSpec& p, double v) {
  if (p.integer) return static_cast<int64_t>(std::llround(v));
  return v;
}

// Grid points of a range: `points` values from lo to hi, evenly (geometrically with log).
std::vector<nlohmann::json> range_points(const ParamSpec& p) {
  std::vector<nlohmann::json> out;
  for (int i = 0; i < p.points; ++i) {
    const double t = static_cast<double>(i) / (p.points - 1);
    const double v = p.log ? std::exp(std::log(p.lo) + t * (std::log(p.hi) - std::log(p.lo))) : p.lo + t * (p.hi - p.lo);
    nlohmann::json j = as_value(p, round_if(p.integer, v));
    if (std::find(out.begin(), out.end(), j) == out.end()) out.push_back(j);  // rounding may repeat a value
  }
  return out;
}

// A uniform double in [0, 1) from 53 bits of the generator (the distributions of <random>
// are implementation-defined; this is not, so a seed gives the same trials everywhere).
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
  return buf;
}

ParamSpec parse_param(const std::string& text) {
  ParamSpec p;
  p.text = text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos) bad(text, "expected NAME=VALUES (lr=1e-4:1e-2:log, batch-size=64,128)");
  p.name = text.substr(0, eq);
  const std::string spec = text.substr(eq + 1);
  if (p.name.empty()) bad(text, "no parameter name before '='");
  const bool setting =
      std::find(setting_names().begin(), setting_names().end(), p.name) != setting_names().end();
  const size_t dot = p.name.find('.');
  const bool attribute = !setting && dot != std::string::npos && dot > 0 && dot + 1 < p.name.size();
  if (!setting && !attribute)
    bad(text, "unknown parameter '" + p.name + "'; known: " + join(setting_names()) +
                  ", or NODE.ATTRIBUTE of the graph (conv1.out_channels)");
  if (spec.empty()) bad(text, "no values after '='");
  p.names = p.name == "optimizer" || p.name == "scheduler";
  p.integer = p.name == "batch-size" || p.name == "epochs";

  if (p.names) {
    const auto& known = p.name == "optimizer" ? optim::optimizer_names() : optim::scheduler_names();
    for (const std::string& v : split(spec, ',')) {
      if (v.empty()) bad(text, "an empty " + p.name + " name in the list");
      if (std::find(known.begin(), known.end(), v) == known.end())
        bad(text, "unknown " + p.name + " '" + v + "'; known: " + join(known));
      if (std::find(p.values.begin(), p.values.end(), nlohmann::json(v)) != p.values.end())
        bad(text, "'" + v + "' is listed twice");
      p.values.emplace_back(v);
    }
    return p;
  }
  if (spec.find(':') != std::string::npos) {
    const std::vector<std::string> parts = split(spec, ':');
    if (parts.size() > 4) bad(text, "a range is LO:HI[:log][:POINTS], got '" + spec + "'");
    p.range = true;
    p.lo = number(text, parts[0]);
    p.hi = number(text, parts[1]);
    for (size_t i = 2; i < parts.size(); ++i) {
      if (parts[i] == "log" && i == 2) {
        p.log = true;
      } else if (parts[i] == "lin" && i == 2) {
        p.log = false;
      } else {
        const double n = number(text, parts[i]);
        if (n != std::floor(n) || n < 2 || n > 1000) bad(text, "POINTS must be a whole number in [2, 1000], got '" + parts[i] + "'");
        p.points = static_cast<int>(n);
      }
    }
    if (!(p.lo < p.hi))
      bad(text, "an empty range: LO " + value_text(p.lo) + " must be below HI " + value_text(p.hi) +
                    (p.lo > p.hi ? " (reversed?)" : ""));
    if (p.log && p.lo <= 0) bad(text, "a log range needs LO > 0, got " + value_text(p.lo));
    if (!attribute) {
      check_setting_value(p, p.lo);
      check_setting_value(p, p.hi);
    }
    if (p.integer && std::ceil(p.lo) > std::floor(p.hi)) bad(text, "no whole number lies in the range");
    return p;
  }
  for (const std::string& s : split(spec, ',')) {
    const double v = number(text, s);
    if (p.integer && v != std::floor(v)) bad(text, p.name + " must be a whole number, got '" + s + "'");
    if (!attribute) check_setting_value(p, v);
    const nlohmann::json j = as_value(p, v);
    if (std::find(p.values.begin(), p.values.end(), j) != p.values.end()) bad(text, "'" + s + "' is listed twice");
    p.values.push_back(j);
  }
  return p;
}

void check_against_graph(ParamSpec& p, const graph::Graph& g) {
  const size_t dot = p.name.find('.');
  if (std::find(setting_names().begin(), setting_names().end(), p.name) != setting_names().end() || dot == std::string::npos)
    return;
  const std::string node = p.name.substr(0, dot), attr = p.name.substr(dot + 1);
  const graph::Node* n = g.find_by_name(node);
  if (!n) {
    std::vector<std::string> names;
    for (const graph::Node& m : g.nodes()) names.push_back(m.name);
    bad(p.text, "the graph has no node '" + node + "'; its nodes: " + join(names));
  }
  const graph::OpSchema& schema = graph::OpRegistry::global().get(n->op);
  std::vector<std::string> numeric;
  for (const graph::AttrSpec& a : schema.attributes)
    if (a.type == graph::AttrType::Int || a.type == graph::AttrType::Float) numeric.push_back(a.name);
  const graph::AttrSpec* spec = schema.attribute(attr);
  const std::string known = numeric.empty() ? "it has none" : "its numeric attributes: " + join(numeric);
  if (!spec) bad(p.text, "node '" + node + "' (" + n->op + ") has no attribute '" + attr + "'; " + known);
  if (spec->type != graph::AttrType::Int && spec->type != graph::AttrType::Float)
    bad(p.text, "attribute '" + attr + "' of node '" + node + "' is " + graph::attr_type_name(spec->type) +
                    ", not a number; " + known);
  // Int attributes take whole numbers: the spec's trials round from now on.
  const bool integer = spec->type == graph::AttrType::Int;
  if (integer && p.range && std::ceil(p.lo) > std::floor(p.hi)) bad(p.text, "no whole number lies in the range");
  std::vector<double> probes;
  if (p.range) {
    probes = {p.lo, p.hi};
  } else {
    for (const nlohmann::json& v : p.values) probes.push_back(v.get<double>());
  }
  for (double v : probes) {
    if (integer && v != std::floor(v) && !p.range) bad(p.text, "attribute '" + attr + "' takes whole numbers, got " + value_text(v));
    const graph::AttrValue value = integer ? graph::AttrValue(static_cast<int64_t>(std::llround(v))) : graph::AttrValue(v);
    if (auto why = g.check_attr(n->id, attr, value)) bad(p.text, "node '" + node + "': " + *why);
  }
  p.integer = integer;
  if (integer)
    for (nlohmann::json& v : p.values) v = static_cast<int64_t>(std::llround(v.get<double>()));
}

std::vector<nlohmann::json> grid_trials(const std::vector<ParamSpec>& params, int64_t max_trials) {
  if (params.empty()) throw SweepUsageError("a sweep needs at least one --param NAME=VALUES");
  std::vector<std::vector<nlohmann::json>> axes;
  for (const ParamSpec& p : params) axes.push_back(p.range ? range_points(p) : p.values);
  std::vector<nlohmann::json> out;
  std::vector<size_t> at(axes.size(), 0);
  while (true) {
    nlohmann::json t = nlohmann::json::object();
    for (size_t i = 0; i < axes.size(); ++i) t[params[i].name] = axes[i][at[i]];
    out.push_back(std::move(t));
    if (max_trials > 0 && static_cast<int64_t>(out.size()) >= max_trials) break;
    size_t i = axes.size();  // odometer: the last parameter varies fastest
    while (i > 0 && ++at[i - 1] == axes[i - 1].size()) at[--i] = 0;
    if (i == 0) break;
  }
  return out;
}

std::vector<nlohmann::json> random_trials(const std::vector<ParamSpec>& params, int64_t trials, uint64_t seed) {
  if (params.empty()) throw SweepUsageError("a sweep needs at least one --param NAME=VALUES");
  if (trials < 1) throw SweepUsageError("--trials must be >= 1 for a random search, got " + std::to_string(trials));
  std::mt19937_64 rng(seed);
  std::vector<nlohmann::json> out;
  for (int64_t k = 0; k < trials; ++k) {
    nlohmann::json t = nlohmann::json::object();
    for (const ParamSpec& p : params) {
      const double u = unit(rng);
      if (!p.range) {
        t[p.name] = p.values[std::min(p.values.size() - 1, static_cast<size_t>(u * static_cast<double>(p.values.size())))];
      } else if (p.integer) {  // each whole number of [lo, hi] equally likely (log: by log-width)
        const double lo = std::ceil(p.lo) - 0.5, hi = std::floor(p.hi) + 0.5;
        const double v = p.log ? std::exp(std::log(std::max(lo, 0.5)) + u * (std::log(hi) - std::log(std::max(lo, 0.5))))
                               : lo + u * (hi - lo);
        t[p.name] = static_cast<int64_t>(std::clamp(std::round(v), std::ceil(p.lo), std::floor(p.hi)));
      } else {
        t[p.name] = round_if(false, p.log ? std::exp(std::log(p.lo) + u * (std::log(p.hi) - std::log(p.lo))) : p.lo + u * (p.hi - p.lo));
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string apply_trial(const nlohmann::json& trial, TrainingConfig& config, graph::Graph& g) {
  std::string label;
  // Settings first, then graph attributes in key order; the label follows the same order.
  for (const auto& [name, v] : trial.items()) {
    label += (label.empty() ? "" : ", ") + name + " " + value_text(v);
    if (name == "lr") config.lr = v.get<double>();
    else if (name == "weight-decay") config.weight_decay = v.get<double>();
    else if (name == "batch-size") config.batch_size = static_cast<int>(v.get<double>());
    else if (name == "epochs") config.epochs = static_cast<int>(v.get<double>());
    else if (name == "optimizer") config.optimizer = v.get<std::string>();
    else if (name == "scheduler") config.scheduler = v.get<std::string>();
    else {
      const size_t dot = name.find('.');
      KILN_CHECK(dot != std::string::npos, ValueError, "sweep parameter '", name, "' is not a setting or NODE.ATTRIBUTE");
      const graph::Node* n = g.find_by_name(name.substr(0, dot));
      KILN_CHECK(n, ValueError, "sweep parameter '", name, "': the graph has no node '", name.substr(0, dot), "'");
      const std::string attr = name.substr(dot + 1);
      const graph::AttrSpec* spec = graph::OpRegistry::global().get(n->op).attribute(attr);
      KILN_CHECK(spec, ValueError, "sweep parameter '", name, "': node '", n->name, "' has no attribute '", attr, "'");
      const graph::Graph before = g;
      const graph::AttrValue value = spec->type == graph::AttrType::Int
                                         ? graph::AttrValue(static_cast<int64_t>(std::llround(v.get<double>())))
                                         : graph::AttrValue(v.get<double>());
      if (auto why = g.check_attr(n->id, attr, value)) throw ValueError("sweep parameter '" + name + "': " + *why);
      const graph::NodeId id = n->id;
      g.set_attr(id, attr, value);
      for (const graph::AttributeUpdate& u : graph::follow_input_dims(before, g, id, attr))
        g.set_attr(u.node, u.attribute, u.value);
    }
  }
  try {
    config.validate();
  } catch (const std::exception& e) {
    throw ValueError("sweep trial (" + label + "): " + e.what());
  }
  return label;
}

}  // namespace kiln::studio::sweep
