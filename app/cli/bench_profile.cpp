// `kiln bench --graph FILE --profile`: see bench_graph.h and engine/graph/layer_profile.h
// (Note [Per-layer timing]: why the per-layer sum is compared with an eager, unprofiled step).
#include <algorithm>
#include <cstdio>
#include <fstream>

#include "app/cli/bench_graph.h"
#include "app/cli/commands.h"
#include "app/cli/interrupt.h"
#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/graph/layer_profile.h"
#ifdef KILN_HAVE_PROJECTS
#include "projects/profile_record.h"
#endif

namespace kiln::cli {

namespace {

// --project FILE: the profile is stored in the project whose latest graph it profiled (schema 12),
// where Kiln Studio lists it with the profiles it made. A cancelled profile before any timed step
// has no figures and is not stored. ProjectError when the file cannot be written.
void store_profile(const Args& args, const graph::LayerProfile& p) {
  const std::string path = args.str("project");
  if (path.empty() || p.steps == 0) return;
#ifdef KILN_HAVE_PROJECTS
  projects::Project project = projects::Project::open(path);
  const std::optional<projects::GraphVersion> v = project.latest_graph();
  const projects::ProfileRecord r = projects::profile_record(p, v ? v->id : 0);
  const int64_t id = project.add_profile(r);
  std::printf("the profile (id %lld) is stored in %s\n", static_cast<long long>(id), path.c_str());
#endif
}

}  // namespace

int bench_profile(const Args& args) {
  for (const char* flag : {"devices", "precisions", "csv"})
    if (args.given(flag))
      args.fail(std::string("--") + flag + " is for comparing devices; with --profile, --device D" +
                (std::string(flag) == "csv" ? " and --json FILE" : ""));
  std::string source;
  const graph::Graph g = load_bench_graph(args, source);  // UsageError without a graph
  graph::ProfileOptions o;
  o.batch = args.integer("batch-size", 1);
  o.steps = args.given("steps") ? static_cast<int>(args.integer("steps", 1)) : 10;
  o.warmup = args.given("warmup") ? static_cast<int>(args.integer("warmup", 0)) : 2;
  o.precision = args.str("precision");
  const std::string device_flag = args.str("device");
  Device device;
  try {
    device = resolve_device(device_flag);
  } catch (const std::exception& e) {
    args.fail("--device " + device_flag + ": " + e.what());
  }

  std::printf("kiln bench --profile: %s on %s, batch %lld, %s, interquartile means of %d steps after %d warm-up steps\n",
              source.c_str(), device.str().c_str(), static_cast<long long>(o.batch), o.precision.c_str(), o.steps,
              o.warmup);
  std::fflush(stdout);
  graph::LayerProfile p;
  {
    InterruptGuard guard;  // Ctrl-C: stop after the current step, report what was measured
    p = graph::profile_layers(g, device.str(), o, [] { return InterruptGuard::interrupted(); });
  }
  std::vector<const graph::LayerTime*> rows;
  for (const graph::LayerTime& l : p.layers) rows.push_back(&l);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const graph::LayerTime* a, const graph::LayerTime* b) { return a->total_ms() > b->total_ms(); });
  std::printf("\n%-24s %-20s %10s %11s %8s %14s\n", "node", "op", "forward ms", "backward ms", "share %", "output bytes");
  for (const graph::LayerTime* l : rows) {
    char bwd[32];
    if (l->has_backward)
      std::snprintf(bwd, sizeof(bwd), "%.3f", l->backward_ms);
    else
      std::snprintf(bwd, sizeof(bwd), "-");
    std::printf("%-24.24s %-20.20s %10.3f %11s %8.1f %14llu\n", l->name.c_str(), l->op.c_str(), l->forward_ms, bwd,
                p.share_percent(*l), static_cast<unsigned long long>(l->output_bytes));
  }
  const double sum = p.layer_sum_ms();
  std::printf("\nloss: forward %.3f ms, backward %.3f ms\n", p.loss_forward_ms, p.loss_backward_ms);
  if (p.steps > 0)
    std::printf("per-layer sum %.2f ms = %.0f%% of the step %.2f ms (forward + loss + backward with profiling off, "
                "eager; profiled step %.2f ms, %.2f ms of it outside the timed regions)\n",
                sum, p.step_ms > 0 ? 100.0 * sum / p.step_ms : 0.0, p.step_ms, p.profiled_step_ms, p.outside_ms);
  if (p.peak_bytes) std::printf("peak memory %.1f MiB\n", static_cast<double>(*p.peak_bytes) / (1024.0 * 1024.0));
  if (p.cancelled) std::printf("(interrupted after %d timed steps)\n", p.steps);
  if (!args.str("json").empty()) {
    std::ofstream f(args.str("json"));
    f << graph::profile_json(p);
    if (!f) throw IoError("kiln bench: cannot write " + args.str("json"));
  }
  store_profile(args, p);
  return p.cancelled ? kExitInterrupted : kExitOk;
}

}  // namespace kiln::cli
