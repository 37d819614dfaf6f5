// compare_json, compare_csv (engine/graph/device_compare.h): a comparison as kiln bench writes it.
#include <sstream>

#include <nlohmann/json.hpp>

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

}  // namespace

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
