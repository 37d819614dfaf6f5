// Comparing compute devices on one graph (issue 20, "Compare devices"): the same model, with
// the same parameters and the same batch, run on each (device, precision) for inference and
// for a training step, timed, and checked against the CPU f32 reference.
//
// For every row: a GraphModule of the graph whose parameters (and buffers) are copied from the
// reference module (built once on the CPU from default_generator()), moved to the device, with
// the precision applied as `kiln train --precision` does (engine/train/mixed_precision.h:
// autocast runs matmul and conv2d in bf16/f16 with f32 weights). Then, in this order:
//  1. the check: outputs of one forward in eval mode without autograd, and the gradients of the
//     loss (StepLoss, engine/graph/step_time.h) with respect to every trainable parameter after
//     one backward in eval mode (dropout off, batch norm on its running statistics, so that the
//     comparison does not depend on a device's random numbers), each compared with the
//     reference's by the largest absolute difference (as torch.testing reports);
//  2. inference: `warmup` untimed then `steps` timed eval-mode forwards without autograd, each
//     ending in a read of the outputs' sum (one device round trip, as kiln bench);
//  3. training: `warmup` untimed then `steps` timed steps in train mode, each zero_grad, forward,
//     loss, reading the loss, backward and an Adam step (train::train_step, as kiln bench).
// Times are means (train::time_steps: the device synchronized before the clock starts and
// before it is read). The inputs and labels are random_inputs / StepLoss's from Generator(1),
// drawn on the CPU, so every row sees the same batch.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/graph/graph.h"

namespace kiln::graph {

struct CompareTarget {
  std::string device;            // as Device::parse reads it: "cpu", "vulkan:0", "cuda:1"
  std::string precision = "f32";  // f32, bf16 or f16
};

struct CompareOptions {
  int64_t batch = 32;  // samples per forward and per training step, >= 1
  int steps = 10;      // timed iterations of each kind, >= 1
  int warmup = 2;      // untimed iterations first (pipelines, caches, optimizer state), >= 0
};

struct CompareRow {
  std::string device;     // as asked (CompareTarget::device)
  std::string name;       // the device's name (DeviceInfo::name); empty when it was not found
  std::string kind;       // DeviceInfo::kind ("cpu", "discrete GPU", ...); empty when not found
  std::string precision;  // as asked
  double infer_ms = 0;                  // mean ms per forward; 0 when none was timed
  double infer_samples_per_second = 0;  // batch * 1000 / infer_ms; 0 when none was timed
  double train_ms = 0;                  // mean ms per training step; 0 when none was timed
  double train_samples_per_second = 0;
  int infer_steps = 0, train_steps = 0;  // timed iterations completed
  // The backend's peak of bytes held by tensors since the process started (MemoryStats::
  // peak_allocated, as kiln bench and PyTorch's max_memory_allocated); nullopt when the backend
  // cannot tell.
  std::optional<uint64_t> peak_bytes;
  // The CPU f32 row's ms over this row's; nullopt without a timed CPU f32 row among the targets.
  std::optional<double> infer_speedup_vs_cpu, train_speedup_vs_cpu;
  // Largest |this - reference| over every output element and every parameter gradient element
  // (f64 arithmetic); nullopt when the check did not complete.
  std::optional<double> max_output_diff, max_grad_diff;
  bool cancelled = false;  // the cancel flag turned true before this row was finished (or begun)
  std::string error;       // why this row failed ("unknown device", out of memory, an op the
                           // backend does not run); empty when it ran
};

// Precisions worth comparing on `device`: "f32", then "bf16" and "f16" where both matmul and
// conv2d run in that type there (Backend::supports) and plan_precision does not fall back to f32
// (the CPU without bf16 dot products; f16 on the CPU). DeviceError for an unknown device.
std::vector<std::string> compare_precisions(const Device& device);

// The rows as the JSON document `kiln bench --graph --json` writes and Kiln Studio stores
// (docs/compare-devices.md): {"model", "batch_size", "precision", "steps", "warmup",
// "interrupted", "results": [{"device", "name", "kind", "precision", "train_step_ms",
// "train_images_per_second", "infer_step_ms", "infer_images_per_second", "peak_memory_bytes",
// "train_speedup_vs_cpu", "infer_speedup_vs_cpu", "max_output_diff", "max_grad_diff",
// "interrupted", "error"}, ...]}; unknown figures are null. Indented by 2, sorted keys.
std::string compare_json(const std::vector<CompareRow>& rows, const std::string& model, const std::string& precisions,
                         const CompareOptions& options, bool interrupted);
// A compare_json document read back (a comparison stored in a project). ValueError naming what
// is missing when `text` is not such a document.
struct CompareDocument {
  std::string model, precisions;
  CompareOptions options;
  bool interrupted = false;
  std::vector<CompareRow> rows;  // infer_steps / train_steps: options.steps where a time is given
};
CompareDocument compare_from_json(const std::string& text);
// The same rows as CSV (RFC 4180: CRLF line ends, fields holding a comma, quote or line break
// quoted, quotes doubled), one header line and the results' fields in that order; unknown
// figures are "n/a".
std::string compare_csv(const std::vector<CompareRow>& rows);
// One RFC 4180 field: quoted when it holds a comma, a double quote, CR or LF.
std::string csv_field(const std::string& v);

// One row per target, in order. The reference is built first (ValueError when the graph cannot
// run, naming the nodes; or when an input has a symbolic dimension besides N; ValueError for
// batch < 1, steps < 1 or warmup < 0): these throw, as nothing could be compared. A target that
// fails (a device name that does not parse or is not found, an unknown precision, a precision the
// device does not run, out of memory, an op the backend does not support) gets its row's error and
// the others run. `cancelled` (may be empty) is asked between iterations: once it is true the
// current row stops with what it timed (cancelled = true) and the rest are returned unrun, marked
// cancelled. `on_row` (may be empty) is called with each finished row (speed-ups unset: they are
// filled in at the end, when the CPU f32 row is known), e.g. for progress.
std::vector<CompareRow> compare_devices(const Graph& graph, const std::vector<CompareTarget>& targets,
                                        const CompareOptions& options, const std::function<bool()>& cancelled = {},
                                        const std::function<void(const CompareRow&)>& on_row = {});

}  // namespace kiln::graph
