// `kiln bench --graph FILE | --onnx FILE | --project FILE`: see bench_graph.h. The JSON and CSV
// carry kiln bench --model's fields under the same names (the *_images_per_second fields count
// samples: images, sequences or table rows), with per row the precision, the inference speed-up
// and the largest differences of outputs and gradients against the CPU f32 reference added
// (graph::compare_json / compare_csv, which Kiln Studio's comparison uses too).
#include "app/cli/bench_graph.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

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
// A device that is not found is kept: its rows say so, and the others run. A malformed name
// ("tpu:0") is a usage error naming the devices found.
std::vector<graph::CompareTarget> targets_of(const Args& args) {
  std::vector<std::string> names;
  std::stringstream ss(args.str("devices"));
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    std::vector<std::string> add;
    if (item == "all") {
      for (const DeviceInfo& d : list_devices()) add.push_back(d.device.str());
    } else {
      try {
        Device::parse(item);
      } catch (const DeviceError& e) {
        args.fail(std::string("--devices: ") + e.what() + "; devices found: " + devices_found());
      }
      add.push_back(item);
    }
    for (const std::string& n : add)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  if (names.empty()) args.fail("--devices " + args.str("devices") + " names no device");
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

std::string opt_fmt(const std::optional<double>& v, const char* fmt) {
  if (!v) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), fmt, *v);
  return buf;
}

}  // namespace

graph::Graph load_bench_graph(const Args& args, std::string& source) {
  const int given = !args.str("graph").empty() + !args.str("onnx").empty() + !args.str("project").empty();
  if (given != 1 || args.given("model")) args.fail("give one of --model NAME, --graph FILE, --onnx FILE, --project FILE");
  graph::Graph g = read_model(args, source);
  if (g.input_nodes().empty()) args.fail(source + ": the graph has no Input node: nothing to feed it");
  const graph::Analysis a = graph::analyze(g);
  if (!a.ok()) {
    std::string msg = source + ": the graph cannot run:";
    for (const graph::Problem& p : a.problems)
      msg += "\n  " + (p.node >= 0 ? "'" + g.node(p.node).name + "'" : std::string("graph")) + ": " + p.message;
    args.fail(msg);
  }
  return g;
}

int bench_graph(const Args& args) {
  if (args.given("precision")) args.fail("--precision is for --model and --profile; with a graph, --precisions LIST");
  if (args.given("device")) args.fail("--device is for --profile; to compare devices, --devices LIST");
  graph::CompareOptions o;
  o.batch = args.integer("batch-size", 1);
  o.steps = static_cast<int>(args.integer("steps", 1));
  o.warmup = static_cast<int>(args.integer("warmup", 0));
  const std::vector<graph::CompareTarget> targets = targets_of(args);  // the flags' mistakes before the file's
  std::string source;
  const graph::Graph g = load_bench_graph(args, source);

  std::printf("kiln bench: %s, batch %lld, Adam, %d steps after %d warm-up steps per device and precision\n",
              source.c_str(), static_cast<long long>(o.batch), o.steps, o.warmup);
  std::fflush(stdout);  // seen at once through a pipe or a file, as the progress lines are
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
  std::printf("\n%-10s %-5s %-32s %10s %11s %10s %11s %9s %8s %8s %10s %10s\n", "device", "prec", "name", "infer ms",
              "infer smp/s", "train ms", "train smp/s", "peak MiB", "infer x", "train x", "max|dout|", "max|dgrad|");
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
  }
  if (!args.str("json").empty()) {
    std::ofstream f(args.str("json"));
    f << graph::compare_json(rows, source, args.str("precisions"), o, interrupted);
    if (!f) throw IoError("kiln bench: cannot write " + args.str("json"));
  }
  if (!args.str("csv").empty()) {
    std::ofstream f(args.str("csv"));
    f << graph::compare_csv(rows);
    if (!f) throw IoError("kiln bench: cannot write " + args.str("csv"));
  }
  return interrupted ? kExitInterrupted : status;
}

}  // namespace kiln::cli
