// compare_json, compare_csv (engine/graph/device_compare.h): a comparison as kiln bench writes it.
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/graph/device_compare.h"

namespace kiln::graph {

namespace {

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string opt_csv(const std::optional<double>& v) {
  if (!v) return "n/a";
  std::ostringstream s;
  s << *v;
  return s.str();
}

std::optional<double> opt_num(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

CompareDocument compare_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  KILN_CHECK(j.is_object() && j.contains("results") && j["results"].is_array(), ValueError,
             "a device comparison must be a JSON object with a \"results\" array");
  CompareDocument d;
  try {
    d.model = j.value("model", "");
    d.precisions = j.value("precision", "");
    d.options.batch = j.value("batch_size", int64_t{1});
    d.options.steps = j.value("steps", 1);
    d.options.warmup = j.value("warmup", 0);
    d.interrupted = j.value("interrupted", false);
    for (const nlohmann::json& r : j["results"]) {
      CompareRow row;
      row.device = r.at("device").get<std::string>();
      row.name = r.value("name", "");
      row.kind = r.value("kind", "");
      row.precision = r.value("precision", "f32");
      row.train_ms = r.value("train_step_ms", 0.0);
      row.train_samples_per_second = r.value("train_images_per_second", 0.0);
      row.infer_ms = r.value("infer_step_ms", 0.0);
      row.infer_samples_per_second = r.value("infer_images_per_second", 0.0);
      row.train_steps = row.train_ms > 0 ? d.options.steps : 0;
      row.infer_steps = row.infer_ms > 0 ? d.options.steps : 0;
      if (const auto p = r.find("peak_memory_bytes"); p != r.end() && !p->is_null()) row.peak_bytes = p->get<uint64_t>();
      row.train_speedup_vs_cpu = opt_num(r, "train_speedup_vs_cpu");
      row.infer_speedup_vs_cpu = opt_num(r, "infer_speedup_vs_cpu");
      row.max_output_diff = opt_num(r, "max_output_diff");
      row.max_grad_diff = opt_num(r, "max_grad_diff");
      row.cancelled = r.value("interrupted", false);
      row.error = r.value("error", "");
      d.rows.push_back(std::move(row));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(std::string("a device comparison's JSON is malformed: ") + e.what());
  }
  return d;
}

std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char ch : v) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string compare_json(const std::vector<CompareRow>& rows, const std::string& model, const std::string& precisions,
                         const CompareOptions& o, bool interrupted) {
  nlohmann::json results = nlohmann::json::array();
  for (const CompareRow& r : rows) {
    const nlohmann::json peak = r.peak_bytes ? nlohmann::json(*r.peak_bytes) : nlohmann::json(nullptr);
    results.push_back({{"device", r.device}, {"name", r.name}, {"kind", r.kind}, {"precision", r.precision},
                       {"train_step_ms", r.train_ms}, {"train_images_per_second", r.train_samples_per_second},
                       {"infer_step_ms", r.infer_ms}, {"infer_images_per_second", r.infer_samples_per_second},
                       {"peak_memory_bytes", peak}, {"train_speedup_vs_cpu", opt_json(r.train_speedup_vs_cpu)},
                       {"infer_speedup_vs_cpu", opt_json(r.infer_speedup_vs_cpu)},
                       {"max_output_diff", opt_json(r.max_output_diff)}, {"max_grad_diff", opt_json(r.max_grad_diff)},
                       {"interrupted", r.cancelled}, {"error", r.error}});
  }
  const nlohmann::json j = {{"model", model}, {"batch_size", o.batch}, {"precision", precisions}, {"steps", o.steps},
                            {"warmup", o.warmup}, {"interrupted", interrupted}, {"results", results}};
  return j.dump(2) + "\n";
}

std::string compare_csv(const std::vector<CompareRow>& rows) {
  std::ostringstream csv;
  csv << "device,name,kind,precision,train_step_ms,train_images_per_second,infer_step_ms,infer_images_per_second,"
         "peak_memory_bytes,train_speedup_vs_cpu,infer_speedup_vs_cpu,max_output_diff,max_grad_diff,interrupted,error\r\n";
  for (const CompareRow& r : rows) {
    csv << csv_field(r.device) << "," << csv_field(r.name) << "," << csv_field(r.kind) << "," << csv_field(r.precision)
        << "," << r.train_ms << "," << r.train_samples_per_second << "," << r.infer_ms << ","
        << r.infer_samples_per_second << "," << (r.peak_bytes ? std::to_string(*r.peak_bytes) : "n/a") << ","
        << opt_csv(r.train_speedup_vs_cpu) << "," << opt_csv(r.infer_speedup_vs_cpu) << ","
        << opt_csv(r.max_output_diff) << "," << opt_csv(r.max_grad_diff) << "," << (r.cancelled ? "true" : "false")
        << "," << csv_field(r.error) << "\r\n";
  }
  return csv.str();
}

}  // namespace kiln::graph
