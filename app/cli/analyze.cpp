// `kiln analyze`: the network analyzer before training, headless (Kiln Studio's Model ->
// Analyze network shows the same). For a graph file or a project's latest saved graph: a
// per-layer table (name, op, output type, parameters, multiply-adds per sample, activation
// memory at the batch size), the totals with the training memory estimate (Note [Training
// memory estimate], engine/graph/footprint.h), the warnings (each naming its node), and the
// step time measured on each device (engine/graph/step_time.h): ms/step and images/s.
// --json prints all of it as one JSON object on stdout instead of the tables.
//
// Exit status 2 (usage) for a graph with problems (each named with its node), a batch size
// below 1 and an unknown device; 1 when a device's measurement failed (the others are still
// reported); 130 after Ctrl-C (the devices measured so far are reported).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "app/cli/interrupt.h"
#include "app/cli/train_loop.h"
#include "engine/core/error.h"
#include "engine/graph/footprint.h"
#include "engine/graph/json.h"
#include "engine/graph/op_schema.h"
#include "engine/graph/step_time.h"
#ifdef KILN_HAVE_PROJECTS
#include "projects/project.h"
#endif

namespace kiln::cli {

namespace {

struct Measured {
  DeviceInfo info;
  graph::StepTime time;
  std::string error;
};

graph::Graph read_graph(const Args& args) {
  const bool has_graph = !args.str("graph").empty(), has_project = !args.str("project").empty();
  if (has_graph == has_project) args.fail("give one of --graph FILE and --project FILE");
  if (has_graph) return graph::load_graph(args.str("graph"));
#ifdef KILN_HAVE_PROJECTS
  const std::string path = args.str("project");
  projects::Project project = projects::Project::open(path);
  const std::optional<projects::GraphVersion> v = project.latest_graph();
  if (!v) args.fail("the project " + path + " has no saved graph");
  return graph::from_json(v->graph_json, &project.blobs());
#else
  args.fail("--project needs Kiln built with Kiln Studio's project store (KILN_STUDIO)");
#endif
}

std::string node_label(const graph::Graph& g, graph::NodeId id) {
  return id >= 0 ? "'" + g.node(id).name + "'" : std::string("graph");
}

void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      const bool left = c < 3;  // name, op, output: text; the rest: figures
      std::string cell = r[c];
      std::string pad(width[c] - cell.size(), ' ');
      line += (c ? "  " : "") + (left ? cell + pad : pad + cell);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

int analyze_command(const std::vector<std::string>& argv) {
  ArgParser parser("analyze", "Per-layer parameters, multiply-adds, memory and step times of a graph before training.");
  parser.flag("graph", "FILE", "", "the graph JSON file (Kiln Studio's format)")
      .flag("project", "FILE", "", "a Kiln project (.kiln): its latest saved graph")
      .flag("batch-size", "N", "32", "samples per step, for the memory and the measurement")
      .flag("dtype", "TYPE", "f32", "element type of the parameters and activations", {"f32", "f16", "bf16"})
      .flag("optimizer", "NAME", "adam", "optimizer whose state the training estimate counts and the measurement uses",
            {"sgd", "adam", "adamw", "rmsprop"})
      .flag("devices", "LIST", "all", "devices to check and measure: all, or a comma-separated list (cpu,vulkan:0)")
      .flag("steps", "N", "5", "timed training steps per device")
      .flag("warmup", "N", "2", "untimed steps first")
      .flag("threads", "N", "0", "CPU threads (0: all cores, or OMP_NUM_THREADS when set)")
      .toggle("no-measure", "skip the step-time measurement")
      .toggle("json", "print the analysis as JSON on stdout instead of tables")
      .epilog("example: kiln analyze --graph projects/templates/fashion_mnist_cnn.json --batch-size 128");
  Args args = parser.parse(argv);
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  const int64_t batch = args.integer("batch-size", 1);
  const int steps = static_cast<int>(args.integer("steps", 1)), warmup = static_cast<int>(args.integer("warmup", 0));
  set_threads(static_cast<int>(args.integer("threads", 0)));
  std::vector<DeviceInfo> devices;
  try {
    devices = pick_devices(args.str("devices"));
  } catch (const DeviceError& e) {
    args.fail(std::string("--devices: ") + e.what());
  }
  if (devices.empty()) args.fail("--devices " + args.str("devices") + " matches no device");
  const graph::Graph g = read_graph(args);
  const std::string source = args.str("graph").empty() ? args.str("project") : args.str("graph");
  const graph::Analysis a = graph::analyze(g);
  if (!a.ok()) {
    std::string msg = source + ": the graph cannot run:";
    for (const graph::Problem& p : a.problems) msg += "\n  " + node_label(g, p.node) + ": " + p.message;
    args.fail(msg);
  }
  graph::MemoryOptions mo;
  mo.batch = batch;
  mo.dtype = dtype_from_name(args.str("dtype"));
  mo.optimizer = args.str("optimizer");
  const graph::MemoryEstimate m = graph::estimate_memory(g, a, mo);
  const std::vector<graph::Warning> warnings = graph::network_warnings(g, a, m, batch, devices);
  const bool json = args.given("json");

  std::vector<Measured> measured;
  bool interrupted = false;
  int status = kExitOk;
  if (!args.given("no-measure")) {
    InterruptGuard guard;  // Ctrl-C: finish the current step, report what was measured
    graph::StepTimeOptions so;
    so.batch = batch;
    so.steps = steps;
    so.warmup = warmup;
    so.optimizer = mo.optimizer;
    for (const DeviceInfo& d : devices) {
      std::fprintf(stderr, "kiln analyze: measuring %s (%s) ...\n", d.device.str().c_str(), d.name.c_str());
      Measured r{d, {}, {}};
      try {
        r.time = graph::measure_step_time(g, d.device, so, [] { return InterruptGuard::interrupted(); });
      } catch (const std::exception& e) {
        r.error = e.what();
        status = kExitError;
      }
      measured.push_back(r);
      if ((interrupted = InterruptGuard::interrupted())) break;
    }
  }

  const std::vector<graph::NodeId> order = g.topological_order();
  if (json) {
    nlohmann::json layers = nlohmann::json::array(), warn = nlohmann::json::array(), times = nlohmann::json::array();
    for (graph::NodeId id : order) {
      const graph::NodeInfo& info = a.nodes.at(id);
      std::vector<std::string> outs;
      for (const graph::TensorType& t : info.outputs) outs.push_back(t.str());
      const auto it = m.activation_bytes.find(id);
      layers.push_back({{"id", id}, {"name", g.node(id).name}, {"op", g.node(id).op}, {"outputs", outs},
                        {"parameters", info.parameters}, {"macs", info.macs},
                        {"activation_bytes", it == m.activation_bytes.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second)}});
    }
    for (const graph::Warning& w : warnings)
      warn.push_back({{"node", w.node}, {"name", w.node >= 0 ? g.node(w.node).name : ""}, {"kind", w.kind}, {"message", w.message}});
    for (const Measured& r : measured)
      times.push_back({{"device", r.info.device.str()}, {"name", r.info.name}, {"ms_per_step", r.time.ms_per_step},
                       {"images_per_second", r.time.images_per_second}, {"steps", r.time.steps},
                       {"peak_memory_bytes", r.time.peak_known ? nlohmann::json(r.time.peak_bytes) : nlohmann::json(nullptr)},
                       {"cancelled", r.time.cancelled}, {"error", r.error}});
    nlohmann::json out = {{"graph", g.name}, {"source", source}, {"batch_size", batch}, {"dtype", args.str("dtype")},
                          {"optimizer", mo.optimizer}, {"layers", layers},
                          {"totals", {{"parameters", a.total_parameters}, {"macs_per_sample", a.total_macs},
                                      {"activation_bytes", m.activations}, {"parameter_bytes", m.parameters},
                                      {"gradient_bytes", m.gradients}, {"optimizer_state_bytes", m.optimizer_state},
                                      {"training_bytes", m.training}}},
                          {"warnings", warn}, {"step_times", times}, {"interrupted", interrupted}};
    std::printf("%s\n", out.dump(2).c_str());
    return interrupted ? kExitInterrupted : status;
  }

  std::printf("kiln analyze: %s (%s), batch %lld, %s, %s\n\n", g.name.c_str(), source.c_str(),
              static_cast<long long>(batch), args.str("dtype").c_str(), mo.optimizer.c_str());
  std::vector<std::vector<std::string>> rows{{"name", "op", "output", "parameters", "MACs", "activations"}};
  for (graph::NodeId id : order) {
    const graph::NodeInfo& info = a.nodes.at(id);
    std::string outs;
    for (const graph::TensorType& t : info.outputs) outs += (outs.empty() ? "" : ", ") + t.str();
    const auto it = m.activation_bytes.find(id);
    rows.push_back({g.node(id).name, g.node(id).op, outs.empty() ? "-" : outs, graph::count_str(info.parameters),
                    graph::macs_str(info.macs), it == m.activation_bytes.end() ? "?" : graph::bytes_str(it->second)});
  }
  rows.push_back({"total", "", "", graph::count_str(a.total_parameters), graph::macs_str(a.total_macs),
                  graph::bytes_str(m.activations)});
  print_table(rows);
  int64_t per_batch = 0;
  if (__builtin_mul_overflow(a.total_macs, batch, &per_batch)) per_batch = INT64_MAX;
  std::printf("\nparameters: %s (%s); multiply-adds: %s per sample, %s per batch of %lld\n",
              graph::count_str(a.total_parameters).c_str(), graph::bytes_str(m.parameters).c_str(),
              graph::macs_str(a.total_macs).c_str(), graph::macs_str(per_batch).c_str(), static_cast<long long>(batch));
  std::printf("training memory estimate: %s = activations %s + parameters %s + gradients %s + %s state %s\n",
              graph::bytes_str(m.training).c_str(), graph::bytes_str(m.activations).c_str(),
              graph::bytes_str(m.parameters).c_str(), graph::bytes_str(m.gradients).c_str(), mo.optimizer.c_str(),
              graph::bytes_str(m.optimizer_state).c_str());
  for (graph::NodeId id : m.unknown)
    std::printf("  '%s': output size unknown (a symbolic dimension besides N); not counted\n", g.node(id).name.c_str());
  std::printf("\nwarnings:%s\n", warnings.empty() ? " none" : "");
  for (const graph::Warning& w : warnings) std::printf("  [%s] %s\n", w.kind.c_str(), w.message.c_str());
  if (!measured.empty()) {
    std::printf("\nstep time (%d training steps after %d warm-up, %s):\n", steps, warmup, mo.optimizer.c_str());
    std::vector<std::vector<std::string>> t{{"device", "name", "", "ms/step", "images/s", "peak memory"}};
    for (const Measured& r : measured) {
      char ms[32], ips[32];
      std::snprintf(ms, sizeof(ms), "%.2f", r.time.ms_per_step);
      std::snprintf(ips, sizeof(ips), "%.0f", r.time.images_per_second);
      if (!r.error.empty()) t.push_back({r.info.device.str(), r.info.name, "failed: " + r.error, "", "", ""});
      else
        t.push_back({r.info.device.str(), r.info.name, r.time.cancelled ? "(interrupted)" : "", ms, ips,
                     r.time.peak_known ? graph::bytes_str(static_cast<int64_t>(r.time.peak_bytes)) : "n/a"});
    }
    print_table(t);
  }
  return interrupted ? kExitInterrupted : status;
}

}  // namespace kiln::cli
