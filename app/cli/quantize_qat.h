// `kiln quantize --qat-epochs K`: quantization-aware training (engine/quant/qat.h) of the trained
// graph for K epochs, and, for the comparison the report gives, the float model fine-tuned for
// the same K epochs with the same optimizer, learning rate, batch size, seed and batch order.
// Both train with the shared training code: engine/optim/factory.h's optimizer, train::Trainer
// and the CLI's run_fit (progress bar, Ctrl-C, a metrics CSV per run).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/data/dataset.h"
#include "engine/graph/graph.h"
#include "engine/graph/graph_module.h"
#include "engine/optim/factory.h"
#include "engine/quant/int8_model.h"
#include "engine/quant/qat.h"

namespace kiln::cli {

struct QatSettings {
  int epochs = 0;  // 0: no QAT (post-training quantization only)
  int64_t batch_size = 64;
  optim::OptimizerConfig optimizer{.name = "adam", .lr = 1e-4};
  uint64_t seed = 0;
  int64_t limit_batches = 0;     // training batches per epoch (a seeded subset of the split; 0: all)
  int64_t observer_batches = 0;  // QatOptions::observer_batches
  std::vector<std::string> keep_float;
  int threads = 0;
  bool float_finetune = true;    // also fine-tune the float model for the comparison
};

// The flags of `kiln quantize` that QAT reads, added to its parser, and their values.
void add_qat_flags(ArgParser& parser);
QatSettings qat_settings(const Args& args, int64_t batch_size, std::vector<std::string> keep_float);

struct QatResult {
  std::shared_ptr<quant::QatModel> qat;
  std::shared_ptr<quant::Int8Model> int8;          // qat->convert()
  std::shared_ptr<graph::GraphModule> finetuned;   // null without float_finetune
  int64_t steps = 0;                               // optimizer steps of each run
  bool cancelled = false;                          // Ctrl-C: the runs stopped early
};

// Trains on `train_set` (classes: the loss's class count); writes DIR/qat_metrics.csv and
// DIR/finetune_metrics.csv. ValueError from QatModel (a bad --keep-float, NaN activations naming
// the layer) and from an empty training split.
QatResult run_qat(const graph::Graph& trained, const QatSettings& settings,
                  const std::shared_ptr<const data::Dataset>& train_set, int64_t classes, const std::string& out_dir);

}  // namespace kiln::cli
