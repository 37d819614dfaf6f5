// `kiln bench`: trains and runs the same reference model on each device and prints a
// table (device, step time, images/s, peak device memory, speedup vs the CPU), optionally
// written as JSON / CSV for the Studio's comparison view.
//
// Models: the reference mlp and cnn (engine/train/reference_models.h) on Fashion-MNIST-shaped
// images [B, 1, 28, 28], and resnet18 (torchvision's resnet18 with CIFAR's 3x3 stem, no
// max-pool, 10 classes) on [B, 3, 32, 32]; the sequence models (issue 16's speed figure) on random
// features [B, 128, 256]: lstm = LSTM(256, 256, 2 layers, batch_first), transformer =
// TransformerEncoderLayer(d_model 256, nhead 4, dim_feedforward 2048, dropout 0.1, batch_first;
// torch's defaults), each followed by the mean over the steps and Linear(256, 10).
// tests/bench/seq_vs_pytorch.sh runs the same models in PyTorch beside them.
// Each device gets the model with the same seed, Adam (lr 1e-3) and one batch of random
// images with labels in [0, 10), held on the device, so
// the figures are the engine's and the backend's (no data loading). A train step is
// zero_grad, forward, cross-entropy, reading the loss (one device round trip, as the
// Trainer does), backward and Adam; an inference step is a forward pass without autograd
// and a read of the logits' sum. Times are means over --steps after --warmup steps.
// --precision bf16|f16 runs both under autocast as `kiln train --precision` does
// (engine/train/mixed_precision.h: per device, f32 with a note where the device lacks it).
//
// Each device appears once (a device named twice in --devices is measured once; the same
// GPU through two backends, cuda:0 and vulkan:0, gives two rows). Peak memory is the
// backend's peak of bytes held by tensors (MemoryStats::peak_allocated, as PyTorch's
// max_memory_allocated), "n/a" (JSON null) where the backend cannot tell; the speedup is
// n/a (null) without a CPU row. CSV follows
// RFC 4180 (CRLF line ends; fields holding a comma, quote or line break are quoted, quotes
// doubled). Ctrl-C stops after the current step: the devices measured so far (and the
// interrupted one's completed steps) are printed and written, marked "interrupted", and
// kiln exits with 130.
// --graph FILE, --onnx FILE or --project FILE (instead of --model) compares the user's own model
// across devices and precisions with the output checked against the CPU f32 reference:
// bench_graph.h.
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/bench_graph.h"
#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "app/cli/interrupt.h"
#include "app/cli/train_loop.h"
#include "engine/core/autocast.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/graph/device_compare.h"  // csv_field
#include "engine/nn/functional.h"
#include "engine/nn/nn.h"
#include "engine/optim/adam.h"
#include "engine/train/mixed_precision.h"
#include "engine/train/reference_models.h"
#include "engine/train/resnet.h"
#include "engine/train/step_timing.h"

namespace kiln::cli {

namespace {
// ResNet-18 in its CIFAR form (engine/train/resnet.h): widths 64-512, two BasicBlocks a stage.
std::shared_ptr<nn::Module> resnet18() { return train::resnet_cifar(3, 10, {64, 128, 256, 512}, 2); }

constexpr int64_t kSeqLength = 128, kSeqWidth = 256;

// A sequence body (LSTM or Transformer layer) on [N, T, E], then mean over T and Linear(E, 10).
class SequenceClassifier : public nn::Module {
 public:
  explicit SequenceClassifier(const std::string& kind) : lstm_(kind == "lstm") {
    if (lstm_)
      rnn_ = register_module("lstm", std::make_shared<nn::LSTM>(nn::RNNOptions{
                                         .input_size = kSeqWidth, .hidden_size = kSeqWidth, .num_layers = 2,
                                         .batch_first = true}));
    else
      layer_ = register_module("encoder", std::make_shared<nn::TransformerEncoderLayer>(
                                              nn::TransformerEncoderLayerOptions{
                                                  .d_model = kSeqWidth, .nhead = 4, .batch_first = true}));
    fc_ = register_module("fc", std::make_shared<nn::Linear>(kSeqWidth, 10));
  }
  Tensor forward(const Tensor& x) override {
    return fc_->forward(mean(lstm_ ? rnn_->forward(x) : layer_->forward(x), {1}));
  }
  std::string type_name() const override { return "SequenceClassifier"; }

 private:
  bool lstm_;
  std::shared_ptr<nn::LSTM> rnn_;
  std::shared_ptr<nn::TransformerEncoderLayer> layer_;
  std::shared_ptr<nn::Linear> fc_;
};

bool is_sequence_model(const std::string& name) { return name == "lstm" || name == "transformer"; }

struct Row {
  DeviceInfo info;
  double train_ms = 0, infer_ms = 0;  // 0: no step completed
  uint64_t peak_bytes = 0;
  bool peak_known = false;  // the backend tracks its memory
  bool interrupted = false; // Ctrl-C during this device's steps
  std::string error;        // set when the device failed
  std::string precision = "f32";  // what ran (the autocast type, or f32)
};

bool stop_requested() { return InterruptGuard::interrupted(); }

// Mean milliseconds of `step` over up to `steps` runs (fewer when Ctrl-C arrives; 0 when
// none completed): train::time_steps, the analyzer's measurement too.
double time_steps(const Device& dev, int steps, const std::function<void()>& step, bool& interrupted) {
  const train::TimedSteps t = train::time_steps(dev, steps, step, stop_requested);
  interrupted = interrupted || t.done < steps;
  return t.ms;
}

Row measure(const DeviceInfo& info, const std::string& model_name, int64_t batch, int steps, int warmup,
            const std::string& precision) {
  Row row;
  row.info = info;
  const Device dev = info.device;
  try {
    const train::PrecisionPlan plan = train::plan_precision(precision, dev);
    if (!plan.note.empty())
      std::printf("  %s: --precision %s: %s\n", dev.str().c_str(), precision.c_str(), plan.note.c_str());
    if (plan.autocast) row.precision = dtype_name(*plan.autocast);
    AutocastGuard autocast_scope(plan.autocast);
    manual_seed(0);
    const bool resnet = model_name == "resnet18", sequence = is_sequence_model(model_name);
    std::shared_ptr<nn::Module> model = resnet     ? resnet18()
                                        : sequence ? std::make_shared<SequenceClassifier>(model_name)
                                                   : train::make_model(model_name);
    model->to(dev);
    optim::Adam opt(model->parameters(), optim::AdamOptions{});
    Generator gen(1);
    const Shape image = resnet     ? Shape{batch, 3, 32, 32}
                        : sequence ? Shape{batch, kSeqLength, kSeqWidth}
                                   : Shape{batch, 1, 28, 28};
    Tensor x = uniform(image, 0, 1, DType::f32, Device(), &gen).to(dev);
    Tensor y = uniform({batch}, 0, 10, DType::f32, Device(), &gen).to(DType::i64).to(dev);
    Backend* b = backend_for(dev);
    auto train_step = [&] { train::train_step(opt, [&] { return nn::F::cross_entropy(model->forward(x), y); }); };
    model->train();
    for (int i = 0; i < warmup && !stop_requested(); ++i) train_step();
    row.train_ms = time_steps(dev, steps, train_step, row.interrupted);
    model->eval();
    NoGradGuard no_grad;
    auto infer_step = [&] { (void)sum(model->forward(x)).item<double>(); };
    for (int i = 0; i < warmup && !stop_requested(); ++i) infer_step();
    row.infer_ms = time_steps(dev, steps, infer_step, row.interrupted);
    const MemoryStats mem = b->memory_stats();
    row.peak_known = mem.tracked;
    row.peak_bytes = mem.tracked ? mem.peak_allocated : 0;
  } catch (const std::exception& e) {
    row.error = e.what();
  }
  return row;
}

}  // namespace

int bench_command(const std::vector<std::string>& argv) {
  ArgParser parser("bench", "Trains and runs a reference model, or your own graph, on each device and compares step times.");
  std::vector<std::string> models = train::reference_model_names();
  for (const char* m : {"resnet18", "lstm", "transformer"}) models.push_back(m);
  parser.flag("model", "NAME", "cnn", "model: a reference model (engine/train/reference_models.h: mlp, cnn, resnet),\n"
                                     "resnet18 (CIFAR form), or lstm / transformer on random sequences [B, 128, 256]\n"
                                     "(LSTM 2 layers hidden 256; TransformerEncoderLayer d 256, 4 heads)",
              models)
      .flag("graph", "FILE", "", "instead of --model: a graph JSON file (Kiln Studio's format)")
      .flag("onnx", "FILE", "", "instead of --model: an ONNX model, imported as a graph")
      .flag("project", "FILE", "", "instead of --model: a Kiln project (.kiln), its latest saved graph;\n"
                                         "with --profile the profile is stored in it (Kiln Studio lists it)")
      .flag("precisions", "LIST", "all", "with a graph: f32, bf16, f16 (comma-separated), or all: each a device runs")
      .flag("batch-size", "B", "128", "images (sequences) per step")
      .flag("devices", "LIST", "all", "devices to compare: all, or a comma-separated list (cpu,vulkan:0)")
      .flag("steps", "N", "50", "timed steps of each kind per device")
      .flag("warmup", "N", "5", "untimed steps first (pipeline creation, caches)")
      .flag("threads", "N", "0", "CPU threads (0: all cores, or OMP_NUM_THREADS when set)")
      .flag("precision", "P", "f32", "f32, or bf16 / f16: matmul and conv in that type with f32 weights (as kiln train)",
            {"f32", "bf16", "f16"})
      .toggle("profile", "with a graph: time and memory per node of a training step on one device (--device),\n"
                         "forward and backward, sorted by time (10 steps after 2 warm-up unless given)")
      .flag("device", "D", "auto", "with --profile: the device, or auto (the best one found)")
      .flag("json", "FILE", "", "also write the results as JSON")
      .flag("csv", "FILE", "", "also write the results as CSV")
      .epilog("example: kiln bench --model cnn --batch-size 128 --devices all --json bench.json\n"
              "         kiln bench --graph my_net.json --devices cpu,vulkan:0 --precisions f32,bf16 --csv cmp.csv");
  Args args = parser.parse(argv);
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  const bool has_graph = !args.str("graph").empty() || !args.str("onnx").empty() || !args.str("project").empty();
  if (args.given("profile") && !has_graph) args.fail("--profile needs a graph: --graph FILE, --onnx FILE or --project FILE");
  if (args.given("device") && !args.given("profile")) args.fail("--device is for --profile; to compare devices, --devices LIST");
  if (has_graph) {
    set_threads(static_cast<int>(args.integer("threads", 0)));
    return args.given("profile") ? bench_profile(args) : bench_graph(args);
  }
  if (args.given("precisions")) args.fail("--precisions is for --graph, --onnx and --project; with --model, --precision");
  const std::string model = args.str("model");
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

  const std::string precision = args.str("precision");
  std::printf("kiln bench: %s, batch %lld, Adam, %s, %d steps after %d warm-up steps per device\n", model.c_str(),
              static_cast<long long>(batch), precision.c_str(), steps, warmup);
  std::vector<Row> rows;
  bool interrupted = false;
  {
    InterruptGuard guard;  // Ctrl-C: finish the current step, then report what was measured
    for (const DeviceInfo& d : devices) {
      std::printf("  %s (%s) ...\n", d.device.str().c_str(), d.name.c_str());
      std::fflush(stdout);
      rows.push_back(measure(d, model, batch, steps, warmup, precision));
      if ((interrupted = InterruptGuard::interrupted())) {
        std::printf("kiln bench: interrupted; reporting the %zu of %zu devices started\n", rows.size(),
                    devices.size());
        break;
      }
    }
  }
  double cpu_train_ms = 0;
  for (const Row& r : rows)
    if (r.info.device.type == DeviceType::cpu && r.error.empty() && r.train_ms > 0) cpu_train_ms = r.train_ms;
  auto ips = [&](double ms) { return ms > 0 ? static_cast<double>(batch) * 1000.0 / ms : 0.0; };

  std::printf("\n%-10s %-48s %12s %12s %12s %12s %10s %9s\n", "device", "name", "train ms", "train img/s",
              "infer ms", "infer img/s", "peak MiB", "speedup");
  nlohmann::json results = nlohmann::json::array();
  std::ostringstream csv;
  csv << "device,name,kind,train_step_ms,train_images_per_second,infer_step_ms,infer_images_per_second,"
         "peak_memory_bytes,train_speedup_vs_cpu,interrupted,error\r\n";
  int status = kExitOk;
  for (const Row& r : rows) {
    const double speedup = cpu_train_ms > 0 && r.train_ms > 0 ? cpu_train_ms / r.train_ms : 0;
    char peak[32] = "n/a", ratio[32] = "n/a";  // n/a: untracked memory; no CPU row to compare with
    if (r.peak_known) std::snprintf(peak, sizeof(peak), "%.1f", static_cast<double>(r.peak_bytes) / (1024.0 * 1024.0));
    if (speedup > 0) std::snprintf(ratio, sizeof(ratio), "%.2fx", speedup);
    if (!r.error.empty()) {
      std::printf("%-10s %-48s failed: %s\n", r.info.device.str().c_str(), r.info.name.c_str(), r.error.c_str());
      status = kExitError;
    } else {
      std::printf("%-10s %-48s %12.2f %12.0f %12.2f %12.0f %10s %9s%s\n", r.info.device.str().c_str(),
                  r.info.name.c_str(), r.train_ms, ips(r.train_ms), r.infer_ms, ips(r.infer_ms), peak, ratio,
                  r.interrupted ? "  (interrupted)" : "");
    }
    const nlohmann::json peak_json = r.peak_known ? nlohmann::json(r.peak_bytes) : nlohmann::json(nullptr);
    results.push_back({{"device", r.info.device.str()}, {"name", r.info.name}, {"kind", r.info.kind},
                       {"precision", r.precision}, {"train_step_ms", r.train_ms}, {"train_images_per_second", ips(r.train_ms)},
                       {"infer_step_ms", r.infer_ms}, {"infer_images_per_second", ips(r.infer_ms)},
                       {"peak_memory_bytes", peak_json}, {"train_speedup_vs_cpu", speedup > 0 ? nlohmann::json(speedup) : nlohmann::json(nullptr)},
                       {"interrupted", r.interrupted}, {"error", r.error}});
    std::ostringstream num;
    num << r.train_ms << "," << ips(r.train_ms) << "," << r.infer_ms << "," << ips(r.infer_ms) << ","
        << (r.peak_known ? std::to_string(r.peak_bytes) : "n/a") << "," << (speedup > 0 ? std::to_string(speedup) : "n/a");
    csv << graph::csv_field(r.info.device.str()) << "," << graph::csv_field(r.info.name) << "," << graph::csv_field(r.info.kind) << ","
        << num.str() << "," << (r.interrupted ? "true" : "false") << "," << graph::csv_field(r.error) << "\r\n";
  }
  if (!args.str("json").empty()) {
    nlohmann::json j = {{"model", model}, {"batch_size", batch}, {"precision", precision}, {"steps", steps}, {"warmup", warmup},
                        {"interrupted", interrupted}, {"results", results}};
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
