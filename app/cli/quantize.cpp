// `kiln quantize`: post-training int8 quantization (engine/quant/int8_model.h) of a trained
// model with N calibration batches of the training split, or with --qat-epochs K quantization-aware
// training (quantize_qat.h) converted to the same int8 model, evaluated before and after on the test
// split; writes DIR/model.safetensors (int8 weights and scales, `kiln eval` runs it), DIR/model.onnx
// (the same model in QDQ form, engine/quant/onnx/export_qdq.h, checked by libonnx and run by Kiln's ONNX
// executor on test images against the int8 model) and DIR/quantize_report.json (accuracy, weight
// payload bytes, latency of one test batch float vs int8 measured in the same run, per-layer
// ranges, the ONNX file's top-1 agreement).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <optional>
#include <sstream>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/datasets.h"
#include "app/cli/image_data.h"
#include "app/cli/interrupt.h"
#include "app/cli/quantize_qat.h"
#include "app/cli/run_model.h"
#include "app/cli/table_data.h"
#include "app/cli/text_run.h"
#include "app/cli/train_graph.h"
#include "app/cli/train_loop.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/data/class_filter.h"
#include "engine/data/dataloader.h"
#include "engine/graph/graph_module.h"
#include "engine/io/safetensors.h"
#include "engine/onnx/executor.h"
#include "engine/quant/onnx/export_qdq.h"
#include "engine/quant/int8_model.h"
#include "engine/train/evaluate.h"

namespace kiln::cli {
namespace {

ArgParser quantize_parser() {
  ArgParser p("quantize", "Int8 quantization of a trained model, post-training or quantization-aware (--qat-epochs):\n"
                          "batch norm folded, Conv2d/Linear (+ ReLU) in int8 on the CPU's oneDNN int8 kernels,\n"
                          "other layers in float. Fashion-MNIST runs only (calibration and evaluation use it): a run\n"
                          "trained on a table, images, text or some classes (--classes) is refused.");
  p.flag("model-file", "FILE", "", "model.safetensors of a `kiln train` run (required)")
      .flag("graph", "FILE", "", "graph JSON of the model (default: the run's graph.json); for a run of a\n"
                                 "reference model, the graph that computes it (its parameters in the same order)")
      .flag("dataset", "NAME", "fashion-mnist", "dataset: calibration on its training split, accuracy on its test split")
      .flag("data-dir", "DIR", "", std::string("dataset directory (default: ") + default_data_dir("fashion-mnist") + ")")
      .flag("calibration-batches", "N", "10", "training batches the observers see")
      .flag("batch-size", "B", "64", "samples per calibration and evaluation batch")
      .flag("method", "M", "minmax", "calibration: minmax, percentile (99.99%) or entropy (KL, TensorRT's)",
            {"minmax", "percentile", "entropy"})
      .flag("keep-float", "L1,L2", "", "Conv2d/Linear layers (node names) to keep in float")
      .flag("onnx-check-images", "N", "1000", "test images the QDQ model.onnx runs on in Kiln's ONNX executor,\n"
                                              "its top-1 predictions compared with the int8 model's (0: none)")
      .flag("out", "DIR", "", "output folder (required): model.safetensors (int8), model.onnx (the same model\n"
                              "in QDQ form: QuantizeLinear/DequantizeLinear around each int8 Conv/Gemm, opset 17)\n"
                              "and quantize_report.json")
      .flag("threads", "N", "", "CPU threads (default: all cores, or OMP_NUM_THREADS when set)");
  add_qat_flags(p);
  p.epilog("example: kiln quantize --model-file runs/cnn/model.safetensors --method entropy --out runs/cnn-int8\n"
           "         kiln quantize --model-file runs/cnn/model.safetensors --qat-epochs 1 --lr 1e-4 --out runs/cnn-qat\n"
           "         (a run of kiln train --model cnn also needs --graph projects/templates/fashion_mnist_cnn.json)\n"
           "then:    kiln eval --model-file runs/cnn-int8/model.safetensors\n"
           "         kiln run runs/cnn-int8/model.onnx ...   (or any ONNX runtime)");
  return p;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The trained model as a graph with its parameters in initial_state.
graph::Graph trained_graph(const io::SafetensorsFile& file, const std::string& path, const std::string& graph_arg) {
  std::string name;
  std::shared_ptr<nn::Module> model;
  try {
    model = load_model(file, path, graph_arg, name, Device(), 0, 0);
  } catch (const Error&) {
    if (graph_arg.empty()) throw;
    name.clear();  // the weights of a reference model that --graph computes: mapped below
    model = load_model(file, path, "", name, Device(), 0, 0);
  }
  if (auto* g = dynamic_cast<graph::GraphModule*>(model.get())) {
    graph::Graph out = g->graph();
    graph::store_state(out, g->state_dict());
    return out;
  }
  KILN_CHECK(!graph_arg.empty(), ValueError, path, " holds the reference model '", name,
             "', not a graph; give --graph FILE with the graph that computes it (for cnn: Kiln's template "
             "projects/templates/fashion_mnist_cnn.json in the source tree)");
  graph::Graph out = load_checked_graph(graph_arg);
  graph::GraphModule gm(out);
  const nn::StateDict mine = gm.state_dict(), theirs = model->state_dict();
  KILN_CHECK(mine.size() == theirs.size(), ValueError, graph_arg, " has ", mine.size(), " state tensors, the model '",
             name, "' of ", path, " has ", theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    KILN_CHECK(mine[i].second.shape() == theirs[i].second.shape(), ValueError, graph_arg, ": ", mine[i].first, " is ",
               shape_str(mine[i].second.shape()), " but the model's ", theirs[i].first, " is ",
               shape_str(theirs[i].second.shape()));
    out.initial_state[mine[i].first] = theirs[i].second.to(Device()).contiguous();
  }
  return out;
}

double accuracy(nn::Module& m, const std::shared_ptr<const data::Dataset>& test, int64_t batch, int64_t classes) {
  data::DataLoader loader(test, batch);
  train::EvaluateOptions o;
  o.num_classes = classes;
  o.should_stop = [] { return InterruptGuard::interrupted(); };
  train::Evaluation e = train::evaluate(m, loader, o);
  KILN_CHECK(!e.stopped, ValueError, "interrupted");
  return e.metrics.accuracy();
}

// Median milliseconds of model.forward(x) (the result read back) over `runs` runs after two warm-up
// runs (oneDNN plans, the allocator). NoGrad is the int8 model's own; the float model runs in eval.
double median_forward_ms(nn::Module& model, const Tensor& x, int runs) {
  NoGradGuard no_grad;
  for (int w = 0; w < 2; ++w) model.forward(x).to_vector<float>();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto a = std::chrono::steady_clock::now();
    model.forward(x).to_vector<float>();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct OnnxCheck {
  int64_t images = 0, agree = 0, correct = 0;
};

// Index of the largest of each row of logits [N, C].
std::vector<int64_t> top1(const Tensor& logits) {
  const std::vector<float> v = logits.to(DType::f32).contiguous().to_vector<float>();
  const int64_t n = logits.size(0), c = logits.numel() / std::max<int64_t>(n, 1);
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto row = v.begin() + i * c;
    out[size_t(i)] = std::max_element(row, row + c) - row;
  }
  return out;
}

// The QDQ file in Kiln's ONNX executor against the int8 model on the first `images` test images.
OnnxCheck check_onnx(const std::string& bytes, const std::string& path, quant::Int8Model& q,
                     const std::shared_ptr<const data::Dataset>& test, int64_t batch, int64_t images) {
  OnnxCheck r;
  if (images <= 0) return r;
  onnx::Session session(onnx::parse_model(bytes, "", path));
  const std::string input = session.input_names().at(0);
  NoGradGuard no_grad;
  data::DataLoader loader(test, batch);
  while (r.images < images) {
    std::optional<data::Batch> b = loader.next();
    if (!b) break;
    const std::vector<int64_t> want = top1(q.forward(b->input)), got = top1(session.run({{input, b->input}}).at(0));
    const std::vector<int64_t> labels = b->target.to(DType::i64).to_vector<int64_t>();
    for (size_t i = 0; i < want.size() && r.images < images; ++i, ++r.images) {
      r.agree += want[i] == got[i];
      r.correct += got[i] == labels.at(i);
    }
    KILN_CHECK(!InterruptGuard::interrupted(), ValueError, "interrupted");
  }
  return r;
}

// kiln quantize calibrates on Fashion-MNIST's training split and evaluates on its test split: a
// run trained on other data (its model file's metadata names table.json, images.json, text.json or
// a class subset) is refused before anything is read or written, not failed on mismatched shapes.
void check_fashion_mnist_run(const io::SafetensorsFile& file, const std::string& path) {
  const auto has = [&](const char* key) { return file.metadata.count(key) > 0; };
  const std::string other = has(kTableMetadataKey)    ? "a table (its run's table.json)"
                            : has(kImagesMetadataKey) ? "images (its run's images.json)"
                            : has(kTextMetadataKey)   ? "text (its run's text.json)"
                            : has(data::kClassesMetadataKey)
                                ? "some of Fashion-MNIST's classes (kiln train --classes " + file.metadata.at(data::kClassesMetadataKey) + ")"
                                : "";
  KILN_CHECK(other.empty(), ValueError, path, " was trained on ", other, "; kiln quantize calibrates and evaluates on all "
             "of Fashion-MNIST only, so it quantizes runs of `kiln train` on Fashion-MNIST (without --dataset or --classes)");
}

}  // namespace

int quantize_command(const std::vector<std::string>& argv) {
  ArgParser parser = quantize_parser();
  Args args = parser.parse(argv);
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  if (!args.given("model-file")) args.fail("--model-file FILE is required (see kiln quantize --help)");
  if (!args.given("out")) args.fail("--out DIR is required (see kiln quantize --help)");
  const std::string dataset = args.str("dataset");
  if (std::find(dataset_names().begin(), dataset_names().end(), dataset) == dataset_names().end())
    args.fail("unknown dataset '" + dataset + "'; kiln quantize knows fashion-mnist");
  const int64_t n_batches = args.integer("calibration-batches", 0), batch = args.integer("batch-size", 1);
  set_threads(args.given("threads") ? static_cast<int>(std::min<int64_t>(args.integer("threads", 1), 4096)) : 0);
  const std::string path = args.str("model-file"), out_dir = args.str("out");
  QatSettings qat_config = qat_settings(args, batch, split_list(args.str("keep-float")));
  qat_config.threads = args.given("threads") ? omp_get_max_threads() : 0;
  InterruptGuard interrupt_guard;
  const io::SafetensorsFile file = io::load_safetensors(path);
  KILN_CHECK(!quant::Int8Model::is_int8_file(file.metadata), ValueError, path, " is already an int8 model");
  check_fashion_mnist_run(file, path);
  const graph::Graph g = trained_graph(file, path, args.str("graph"));
  const std::string data_dir = args.given("data-dir") ? args.str("data-dir") : default_data_dir(dataset);
  const auto train_set = open_dataset(dataset, data_dir, /*train=*/true);
  const auto test_set = open_dataset(dataset, data_dir, /*train=*/false);
  const auto classes = static_cast<int64_t>(class_names(dataset).size());

  quant::QuantizeOptions options;
  options.method = quant::parse_calibration(args.str("method"));
  options.keep_float = split_list(args.str("keep-float"));
  quant::Calibrator cal(g, options);
  for (const std::string& line : cal.prepared().log) std::fprintf(stderr, "%s\n", line.c_str());
  data::DataLoader loader(train_set, batch);
  for (int64_t b = 0; b < n_batches; ++b) {
    std::optional<data::Batch> next = loader.next();
    if (!next) break;
    cal.observe(next->input);
  }
  std::fprintf(stderr, "calibrated on %lld batches of %lld (%s)\n", static_cast<long long>(cal.batches()),
               static_cast<long long>(batch), quant::calibration_name(options.method));
  std::shared_ptr<quant::Int8Model> q = cal.convert(), ptq = q;
  std::filesystem::create_directories(out_dir);
  std::optional<QatResult> qat;
  if (qat_config.epochs > 0) {
    qat = run_qat(g, qat_config, train_set, classes, out_dir);
    KILN_CHECK(!qat->cancelled, ValueError, "interrupted");
    q = qat->int8;  // the model written below is the QAT one
  }
  const std::string model_path = (std::filesystem::path(out_dir) / "model.safetensors").string();
  q->save(model_path);
  // The QDQ ONNX form; a graph with an op ONNX export lacks still gets its int8 model, and says why not.
  const std::string onnx_path = (std::filesystem::path(out_dir) / "model.onnx").string();
  std::string onnx_bytes, onnx_error;
  try {
    onnx_bytes = quant::export_qdq(*q);
    onnx::check_model_bytes(onnx_bytes);
  } catch (const ValueError& e) {
    onnx_error = e.what();
    onnx_bytes.clear();
    std::fprintf(stderr, "no %s: %s\n", onnx_path.c_str(), e.what());
  }
  if (!onnx_bytes.empty()) {
    std::ofstream onnx_file(onnx_path, std::ios::binary);
    onnx_file << onnx_bytes;
    onnx_file.close();
    KILN_CHECK(onnx_file.good(), IoError, "cannot write ", onnx_path);
  }

  graph::GraphModule float_model(g);
  int64_t float_bytes = 0;
  for (const Tensor& p : float_model.parameters()) float_bytes += p.numel() * static_cast<int64_t>(dtype_size(p.dtype()));
  const double acc_float = accuracy(float_model, test_set, batch, classes);
  const double acc_int8 = accuracy(*q, test_set, batch, classes);
  const double acc_ptq = qat ? accuracy(*ptq, test_set, batch, classes) : acc_int8;
  const double acc_finetuned = qat && qat->finetuned ? accuracy(*qat->finetuned, test_set, batch, classes) : 0.0;
  const int64_t int8_bytes = q->weight_payload_bytes();
  // Latency of one test batch, both models in this run on this process's threads.
  float_model.eval();
  data::DataLoader latency_loader(test_set, batch);
  std::optional<data::Batch> latency_batch = latency_loader.next();
  KILN_CHECK(latency_batch.has_value(), ValueError, "the test split of ", dataset, " is empty");
  const double ms_float = median_forward_ms(float_model, latency_batch->input, 10);
  const double ms_int8 = median_forward_ms(*q, latency_batch->input, 10);

  const OnnxCheck onnx_check = check_onnx(onnx_bytes, onnx_path, *q, test_set, batch,
                                          onnx_bytes.empty() ? 0 : args.integer("onnx-check-images", 0));

  nlohmann::json report;
  report["model_file"] = path;
  report["method"] = quant::calibration_name(options.method);
  report["calibration_batches"] = cal.batches();
  report["batch_size"] = batch;
  report["accuracy"] = {{"float", acc_float}, {"int8", acc_int8}, {"ptq_int8", acc_ptq}};
  if (qat) {
    report["accuracy"]["qat_int8"] = acc_int8;
    if (qat->finetuned) report["accuracy"]["float_finetuned"] = acc_finetuned;
    const QatSettings& s = qat_config;
    report["qat"] = {{"epochs", s.epochs}, {"steps", qat->steps}, {"optimizer", s.optimizer.name},
                     {"lr", s.optimizer.lr}, {"momentum", s.optimizer.momentum},
                     {"weight_decay", s.optimizer.weight_decay}, {"batch_size", s.batch_size}, {"seed", s.seed},
                     {"limit_batches", s.limit_batches}, {"observer_batches", s.observer_batches},
                     {"activation_observer", "MovingAverageMinMaxObserver(averaging_constant=0.01)"}};
  }
  report["weight_payload_bytes"] = {{"float", float_bytes}, {"int8", int8_bytes},
                                    {"ratio", static_cast<double>(float_bytes) / static_cast<double>(int8_bytes)}};
  report["latency_ms_per_batch"] = {{"device", Device().str()},
                                    {"threads", omp_get_max_threads()},
                                    {"batch", latency_batch->input.size(0)},
                                    {"float", ms_float},
                                    {"int8", ms_int8},
                                    {"speedup", ms_float / ms_int8}};
  report["u8_chained_layers"] = q->u8_chained_layers();
  report["passes"] = cal.prepared().log;
  report["mode"] = qat ? "qat" : "ptq";
  nlohmann::json layers = nlohmann::json::array();
  for (const quant::LayerReport& r : qat ? qat->qat->report() : cal.report())
    layers.push_back({{"name", r.name}, {"op", r.op}, {"int8", r.int8},
                      {"input_range", {r.input_range.min, r.input_range.max}}, {"input_scale", r.input.scale},
                      {"input_zero_point", r.input.zero_point}, {"fused_relu", r.fused_relu}});
  report["layers"] = layers;
  report["notes"] = q->fallback_notes();
  if (!onnx_error.empty()) report["onnx"] = {{"error", onnx_error}};
  else report["onnx"] = {{"file", onnx_path}, {"form", "QDQ"}, {"checked_by_libonnx", true},
                    {"images", onnx_check.images}, {"top1_agreement_with_int8", onnx_check.images
                        ? static_cast<double>(onnx_check.agree) / static_cast<double>(onnx_check.images) : 0.0},
                    {"accuracy", onnx_check.images
                        ? static_cast<double>(onnx_check.correct) / static_cast<double>(onnx_check.images) : 0.0}};
  const std::string report_path = (std::filesystem::path(out_dir) / "quantize_report.json").string();
  std::ofstream(report_path) << report.dump(2) << "\n";
  KILN_CHECK(std::filesystem::exists(report_path), IoError, "cannot write ", report_path);
  std::printf("%s: accuracy float %.2f%%, int8 %.2f%%; weight payload %lld -> %lld bytes (%.2fx)\n",
              model_path.c_str(), 100 * acc_float, 100 * acc_int8, static_cast<long long>(float_bytes),
              static_cast<long long>(int8_bytes), static_cast<double>(float_bytes) / static_cast<double>(int8_bytes));
  if (qat) {
    std::printf("quantization-aware training, %d epoch(s): int8 %.2f%% (post-training int8 %.2f%%)", qat_config.epochs,
                100 * acc_int8, 100 * acc_ptq);
    if (qat->finetuned) std::printf("; the float model fine-tuned for the same epochs %.2f%%", 100 * acc_finetuned);
    std::printf("\n");
  }
  std::printf("latency on %s (%d threads, batch %lld): float %.3f ms, int8 %.3f ms per batch (%.2fx)\n",
              Device().str().c_str(), omp_get_max_threads(), static_cast<long long>(latency_batch->input.size(0)), ms_float,
              ms_int8, ms_float / ms_int8);
  if (!onnx_error.empty())
    std::printf("no model.onnx (see above)\n");
  else if (onnx_check.images)
    std::printf("%s (QDQ, checked by libonnx): top-1 agreement with the int8 model %.2f%% on %lld test images "
                "(Kiln's ONNX executor), accuracy there %.2f%%\n",
                onnx_path.c_str(), 100.0 * static_cast<double>(onnx_check.agree) / static_cast<double>(onnx_check.images),
                static_cast<long long>(onnx_check.images),
                100.0 * static_cast<double>(onnx_check.correct) / static_cast<double>(onnx_check.images));
  else
    std::printf("%s (QDQ, checked by libonnx)\n", onnx_path.c_str());
  std::printf("report: %s\n", report_path.c_str());
  return kExitOk;
}

}  // namespace kiln::cli
