// `kiln bench --graph FILE | --onnx FILE | --project FILE`: see bench_graph.h. The JSON and CSV
// carry kiln bench --model's fields under the same names (the *_images_per_second fields count
// samples: images, sequences or table rows), with per row the precision, the inference speed-up
// and the largest differences of outputs and gradients against the CPU f32 reference added.
#include "app/cli/bench_graph.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "app/cli/interrupt.h"
#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/graph/analysis.h"
#include "engine/graph/device_compare.h"
#include "engine/graph/json.h"
#ifdef KILN_HAVE_ONNX
#include "engine/onnx/graph_import.h"
#include "engine/onnx/model.h"
#endif
#ifdef KILN_HAVE_PROJECTS
#include "projects/project.h"
#endif

namespace kiln::cli {

namespace {

// The graph of --graph, --onnx or --project (exactly one is given), and the path it came from.
graph::Graph read_model(const Args& args, std::string& source) {
  if (!args.str("graph").empty()) {
    source = args.str("graph");
    return graph::load_graph(source);
  }
  if (!args.str("onnx").empty()) {
    source = args.str("onnx");
#ifdef KILN_HAVE_ONNX
    return onnx::import_graph(onnx::load_model(source)).graph;
#else
    args.fail("--onnx needs Kiln built with ONNX support (libonnx)");
#endif
  }
  source = args.str("project");
#ifdef KILN_HAVE_PROJECTS
  projects::Project project = projects::Project::open(source);
  const std::optional<projects::GraphVersion> v = project.latest_graph();
  if (!v) args.fail("the project " + source + " has no saved graph");
  return graph::from_json(v->graph_json, &project.blobs());
#else
  args.fail("--project needs Kiln built with Kiln Studio's project store (KILN_STUDIO)");
#endif
}

// The (device, precision) rows: each device of --devices ("all": every one detected) in order,
// each once, with each precision of --precisions ("all": graph::compare_precisions of the device).
// A name that is not found is kept: its rows say so, and the others run.
std::vector<graph::CompareTarget> targets_of(const Args& args, std::vector<DeviceInfo>& infos) {
  std::vector<std::string> names;
  std::stringstream ss(args.str("devices"));
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    std::vector<std::string> add;
    if (item == "all") {
      for (const DeviceInfo& d : list_devices()) add.push_back(d.device.str());
    } else {
      add.push_back(item);
    }
    for (const std::string& n : add)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  if (names.empty()) args.fail("--devices " + args.str("devices") + " names no device");
  infos = list_devices();
  std::vector<std::string> precisions;
  std::stringstream ps(args.str("precisions"));
  for (std::string p; std::getline(ps, p, ',');) {
    if (p.empty()) continue;
    if (p != "all" && p != "f32" && p != "bf16" && p != "f16")
      args.fail("--precisions: '" + p + "' is not one of all, f32, bf16, f16");
    precisions.push_back(p);
  }
  if (precisions.empty()) args.fail("--precisions " + args.str("precisions") + " names no precision");
  std::vector<graph::CompareTarget> out;
  for (const std::string& n : names) {
    std::vector<std::string> ps_of;
    for (const std::string& p : precisions) {
      if (p != "all") {
        ps_of.push_back(p);
        continue;
      }
      try {
        for (const std::string& q : graph::compare_precisions(Device::parse(n))) ps_of.push_back(q);
      } catch (const std::exception&) {
        ps_of.push_back("f32");  // an unknown device: one row that says so
      }
    }
    for (const std::string& p : ps_of) {
      bool seen = false;
      for (const graph::CompareTarget& t : out) seen = seen || (t.device == n && t.precision == p);
      if (!seen) out.push_back({n, p});
    }
  }
  return out;
}

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
std::string opt_csv(const std::optional<double>& v) {
  if (!v) return "n/a";
  std::ostringstream s;
  s << *v;
  return s.str();
}
std::string opt_fmt(const std::optional<double>& v, const char* fmt) {
  if (!v) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), fmt, *v);
  return buf;
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

int bench_graph(const Args& args) {
  const int given = !args.str("graph").empty() + !args.str("onnx").empty() + !args.str("project").empty();
  if (given != 1 || args.given("model")) args.fail("give one of --model NAME, --graph FILE, --onnx FILE, --project FILE");
  if (args.given("precision")) args.fail("--precision is for --model; with a graph, --precisions LIST");
  graph::CompareOptions o;
  o.batch = args.integer("batch-size", 1);
  o.steps = static_cast<int>(args.integer("steps", 1));
  o.warmup = static_cast<int>(args.integer("warmup", 0));
  std::string source;
  const graph::Graph g = read_model(args, source);
  if (g.input_nodes().empty()) args.fail(source + ": the graph has no Input node: nothing to feed it");
  const graph::Analysis a = graph::analyze(g);
  if (!a.ok()) {
    std::string msg = source + ": the graph cannot run:";
    for (const graph::Problem& p : a.problems)
      msg += "\n  " + (p.node >= 0 ? "'" + g.node(p.node).name + "'" : std::string("graph")) + ": " + p.message;
    args.fail(msg);
  }
  std::vector<DeviceInfo> infos;
  const std::vector<graph::CompareTarget> targets = targets_of(args, infos);

  std::printf("kiln bench: %s, batch %lld, Adam, %d steps after %d warm-up steps per device and precision\n",
              source.c_str(), static_cast<long long>(o.batch), o.steps, o.warmup);
  std::vector<graph::CompareRow> rows;
  {
    InterruptGuard guard;  // Ctrl-C: finish the current iteration, then report what was measured
    rows = graph::compare_devices(g, targets, o, [] { return InterruptGuard::interrupted(); },
                                  [](const graph::CompareRow& r) {
                                    std::printf("  %s %s done\n", r.device.c_str(), r.precision.c_str());
                                    std::fflush(stdout);
                                  });
  }
  const bool interrupted = InterruptGuard::interrupted();
  auto kind_of = [&](const std::string& device) -> std::string {
    for (const DeviceInfo& d : infos)
      if (d.device.str() == device) return d.kind;
    return "";
  };

  std::printf("\n%-10s %-5s %-32s %10s %11s %10s %11s %9s %8s %8s %10s %10s\n", "device", "prec", "name", "infer ms",
              "infer smp/s", "train ms", "train smp/s", "peak MiB", "infer x", "train x", "max|dout|", "max|dgrad|");
  nlohmann::json results = nlohmann::json::array();
  std::ostringstream csv;
  csv << "device,name,kind,precision,train_step_ms,train_images_per_second,infer_step_ms,infer_images_per_second,"
         "peak_memory_bytes,train_speedup_vs_cpu,infer_speedup_vs_cpu,max_output_diff,max_grad_diff,interrupted,error\r\n";
  int status = kExitOk;
  for (const graph::CompareRow& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-10s %-5s failed: %s\n", r.device.c_str(), r.precision.c_str(), r.error.c_str());
      status = kExitError;
    } else if (r.cancelled && r.infer_steps + r.train_steps == 0 && !r.max_output_diff) {
      std::printf("%-10s %-5s not run (interrupted)\n", r.device.c_str(), r.precision.c_str());
    } else {
      const std::optional<double> peak =
          r.peak_bytes ? std::optional<double>(static_cast<double>(*r.peak_bytes) / (1024.0 * 1024.0)) : std::nullopt;
      std::printf("%-10s %-5s %-32.32s %10.2f %11.0f %10.2f %11.0f %9s %8s %8s %10s %10s%s\n", r.device.c_str(),
                  r.precision.c_str(), r.name.c_str(), r.infer_ms, r.infer_samples_per_second, r.train_ms,
                  r.train_samples_per_second, opt_fmt(peak, "%.1f").c_str(),
                  opt_fmt(r.infer_speedup_vs_cpu, "%.2fx").c_str(), opt_fmt(r.train_speedup_vs_cpu, "%.2fx").c_str(),
                  opt_fmt(r.max_output_diff, "%.2e").c_str(), opt_fmt(r.max_grad_diff, "%.2e").c_str(),
                  r.cancelled ? "  (interrupted)" : "");
    }
    const nlohmann::json peak_json = r.peak_bytes ? nlohmann::json(*r.peak_bytes) : nlohmann::json(nullptr);
    results.push_back({{"device", r.device}, {"name", r.name}, {"kind", kind_of(r.device)}, {"precision", r.precision},
                       {"train_step_ms", r.train_ms}, {"train_images_per_second", r.train_samples_per_second},
                       {"infer_step_ms", r.infer_ms}, {"infer_images_per_second", r.infer_samples_per_second},
                       {"peak_memory_bytes", peak_json}, {"train_speedup_vs_cpu", opt_json(r.train_speedup_vs_cpu)},
                       {"infer_speedup_vs_cpu", opt_json(r.infer_speedup_vs_cpu)},
                       {"max_output_diff", opt_json(r.max_output_diff)}, {"max_grad_diff", opt_json(r.max_grad_diff)},
                       {"interrupted", r.cancelled}, {"error", r.error}});
    std::ostringstream num;
    num << r.train_ms << "," << r.train_samples_per_second << "," << r.infer_ms << "," << r.infer_samples_per_second;
    csv << csv_field(r.device) << "," << csv_field(r.name) << "," << csv_field(kind_of(r.device)) << ","
        << r.precision << "," << num.str() << "," << (r.peak_bytes ? std::to_string(*r.peak_bytes) : "n/a") << ","
        << opt_csv(r.train_speedup_vs_cpu) << "," << opt_csv(r.infer_speedup_vs_cpu) << ","
        << opt_csv(r.max_output_diff) << "," << opt_csv(r.max_grad_diff) << "," << (r.cancelled ? "true" : "false")
        << "," << csv_field(r.error) << "\r\n";
  }
  if (!args.str("json").empty()) {
    nlohmann::json j = {{"model", source},   {"batch_size", o.batch},   {"precision", args.str("precisions")},
                        {"steps", o.steps},  {"warmup", o.warmup},      {"interrupted", interrupted},
                        {"results", results}};
    std::ofstream f(args.str("json"));
    f << j.dump(2) << "\n";
    if (!f) throw IoError("kiln bench: cannot write " + args.str("json"));
  }
  if (!args.str("csv").empty()) {
    std::ofstream f(args.str("csv"));
    f << csv.str();
    if (!f) throw IoError("kiln bench: cannot write " + args.str("csv"));
  }
  return interrupted ? kExitInterrupted : status;
}

}  // namespace kiln::cli
