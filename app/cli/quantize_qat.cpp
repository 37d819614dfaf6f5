#include "app/cli/quantize_qat.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "app/cli/datasets.h"
#include "app/cli/progress.h"
#include "app/cli/run_files.h"
#include "app/cli/train_loop.h"
#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/data/dataloader.h"
#include "engine/nn/functional.h"
#include "engine/train/trainer.h"

namespace kiln::cli {

namespace {

// The flags only quantization-aware training reads.
constexpr const char* kQatOnlyFlags[] = {"lr",           "optimizer",     "momentum",             "weight-decay",
                                         "seed",         "limit-batches", "qat-observer-batches", "no-float-finetune"};

}  // namespace

void add_qat_flags(ArgParser& p) {
  p.flag("qat-epochs", "K", "0", "quantization-aware training: fine-tune with fake-quantized weights and\n"
                                 "activations for K epochs, then convert (0: post-training quantization only;\n"
                                 "the flags from --lr to --no-float-finetune need K >= 1)")
      .flag("lr", "X", "0.0001", "QAT (and the float fine-tune's) learning rate")
      .flag("optimizer", "NAME", "adam", "QAT optimizer (torch.optim defaults otherwise)", optim::optimizer_names())
      .flag("momentum", "M", "0.9", "momentum of sgd and rmsprop")
      .flag("weight-decay", "W", "0", "weight decay")
      .flag("seed", "S", "0", "seed of the QAT shuffle order and dropout")
      .flag("limit-batches", "N", "0", "QAT: at most N training batches per epoch, a seeded subset (0: all)")
      .flag("qat-observer-batches", "N", "0", "QAT: freeze the activation ranges after N training batches\n"
                                              "(0: they follow every training batch)")
      .toggle("no-float-finetune", "QAT: skip fine-tuning the float model for the same epochs (the report's\n"
                                   "accuracy.float_finetuned, the comparison QAT is measured against)");
}

QatSettings qat_settings(const Args& args, int64_t batch_size, std::vector<std::string> keep_float) {
  QatSettings s;
  s.epochs = static_cast<int>(std::min<int64_t>(args.integer("qat-epochs", 0), 1'000'000));
  if (s.epochs == 0) {  // without QAT these would be silently ignored
    std::string given;
    int count = 0;
    for (const char* f : kQatOnlyFlags)
      if (args.given(f)) given += std::string(count++ ? ", --" : "--") + f;
    if (count > 0)
      args.fail(given + (count == 1 ? " is" : " are") + " for quantization-aware training: " +
                (count == 1 ? "it needs" : "they need") + " --qat-epochs K (K >= 1)");
  }
  s.batch_size = batch_size;
  s.optimizer.name = args.str("optimizer");
  s.optimizer.lr = args.positive("lr", 1e6);
  s.optimizer.momentum = args.number("momentum", 0, 1);
  s.optimizer.weight_decay = args.number("weight-decay", 0, 1e6);
  s.seed = static_cast<uint64_t>(args.integer("seed", 0));
  s.limit_batches = args.integer("limit-batches", 0);
  s.observer_batches = args.integer("qat-observer-batches", 0);
  s.keep_float = std::move(keep_float);
  s.float_finetune = !args.given("no-float-finetune");
  return s;
}

namespace {

// K epochs of `model` on `train_set` with the settings' optimizer, seed and batch order.
int64_t fit(const std::shared_ptr<nn::Module>& model, const QatSettings& s,
            const std::shared_ptr<const data::Dataset>& train_set, int64_t classes, const std::string& metrics_path,
            bool& cancelled) {
  manual_seed(s.seed);  // dropout draws, as `kiln train --seed`
  data::DataLoader loader(train_set, {.batch_size = s.batch_size, .shuffle = true, .seed = s.seed});
  train::TrainerOptions options;
  options.epochs = s.epochs;
  options.num_classes = classes;
  options.cuda_graph = false;  // the observers read activations back every step
  train::Trainer trainer(model, optim::make_optimizer(s.optimizer, model->parameters()), nullptr,
                         [](const Tensor& out, const Tensor& target) { return nn::F::cross_entropy(out, target); },
                         options);
  ProgressBar progress(s.epochs);
  MetricsCsv metrics(metrics_path);
  const FitResult r = run_fit(trainer, loader, nullptr, s.threads, progress, metrics);
  cancelled = cancelled || r.cancelled;
  return trainer.step();
}

}  // namespace

QatResult run_qat(const graph::Graph& trained, const QatSettings& s, const std::shared_ptr<const data::Dataset>& train_set,
                  int64_t classes, const std::string& out_dir) {
  KILN_CHECK(s.epochs > 0, ValueError, "quantization-aware training needs --qat-epochs >= 1");
  std::shared_ptr<const data::Dataset> data = train_set;
  if (s.limit_batches > 0) data = random_subset(data, s.limit_batches * s.batch_size, s.seed);
  KILN_CHECK(data->size() > 0, ValueError, "quantization-aware training: the training split is empty");
  QatResult r;
  r.qat = std::make_shared<quant::QatModel>(trained, quant::QatOptions{.keep_float = s.keep_float, .averaging_constant = 0.01,
                                                                       .observer_batches = s.observer_batches});
  std::fprintf(stderr, "quantization-aware training, %d epoch(s) of %lld samples\n", s.epochs,
               static_cast<long long>(data->size()));
  const std::filesystem::path out(out_dir);
  r.steps = fit(r.qat, s, data, classes, (out / "qat_metrics.csv").string(), r.cancelled);
  r.qat->eval();
  r.int8 = r.qat->convert();
  if (s.float_finetune && !r.cancelled) {
    std::fprintf(stderr, "the float model fine-tuned for the same %d epoch(s), for comparison\n", s.epochs);
    r.finetuned = std::make_shared<graph::GraphModule>(trained);
    fit(r.finetuned, s, data, classes, (out / "finetune_metrics.csv").string(), r.cancelled);
    r.finetuned->eval();
  }
  return r;
}

}  // namespace kiln::cli
