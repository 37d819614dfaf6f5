// The flags of `kiln train` and the validated settings they give.
#pragma once
#include <cstdint>
#include <string>

#include "app/cli/args.h"
#include "app/cli/image_data.h"
#include "app/cli/table_data.h"
#include "app/cli/text_data.h"
#include "app/cli/train_distributed.h"
#include "engine/optim/factory.h"

namespace kiln::cli {

struct TrainConfig {
  std::string dataset = "fashion-mnist";  // or "csv:FILE" (table_data.h)
  TableConfig table;                      // with csv:FILE: how the table is read and split
  ImageConfig images;                     // with imagefolder:DIR or images:FILE.csv (image_data.h)
  TextConfig text;                        // with text:DIR|FILE (text_data.h, text_run.h)
  TextModelOptions text_model;            // --embedding-dim, --dropout of the built-in text models
  std::string model = "mlp";       // with --graph: "graph-<file stem>"
  std::string graph;               // --graph FILE.json: train this graph (engine/graph) instead of --model
  int epochs = 5;
  int64_t batch_size = 128;
  double lr = 1e-3;
  std::string optimizer = "adam";  // optim::optimizer_names(): sgd | adam | adamw | rmsprop
  double momentum = 0.9;           // sgd and rmsprop
  double weight_decay = 0;
  std::string scheduler = "none";  // optim::scheduler_names(): none | step | cosine | onecycle
  int step_size = 0;               // step: epochs between decays (0: optim::default_step_size)
  double gamma = 0.1;              // step: decay factor
  std::string device = "auto";
  std::string precision = "f32";   // f32 | bf16 | f16 (engine/train/mixed_precision.h)
  uint64_t seed = 0;
  double val_fraction = 0;         // of the training set held out for validation
  std::string data_dir;
  int threads = 0;                 // 0: leave OpenMP's default (OMP_NUM_THREADS or all cores)
  std::string out_dir;
  bool resume = false;
  // --checkpoint-every: mid-epoch checkpoints every N steps or N minutes (0 and 0: none).
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_minutes = 10;
  int64_t limit_batches = 0;       // 0: no limit
  // Imbalanced classes (train_balance.h): per-class loss weights, and how training samples are drawn.
  std::string class_weights = "none";  // none | balanced | W0,W1,...
  std::string sampler = "random";      // random (a shuffle) | weighted (WeightedRandomSampler)
  // Transfer learning (train_transfer.h): data and network edits.
  std::string classes;             // --classes 0-4: keep these classes, relabelled 0..k-1 ("": all)
  int64_t train_subset = 0;        // --train-subset N: a seeded N-sample subset of the training split (0: all)
  std::string onnx;                // --onnx FILE: train the imported model (its weights are the start)
  int64_t replace_head = 0;        // --replace-head N: the last Linear gets N fresh outputs (0: keep)
  std::string freeze_until;        // --freeze-until NODE: freeze NODE and every node before it
  bool freeze_all_but_head = false;
  ParallelConfig parallel;         // --gpus, --distributed, --timeout (train_distributed.h)
};

// The parser with every flag of `kiln train`, defaults as in TrainConfig.
ArgParser train_parser();
// Reads and checks the flags (UsageError for a bad value or combination).
TrainConfig train_config(const Args& args);

// The settings the engine's factory (engine/optim/factory.h) builds the optimizer and the
// scheduler from; Kiln Studio's TrainingConfig gives the same for the same names and values.
optim::OptimizerConfig optimizer_config(const TrainConfig& config);
optim::SchedulerConfig scheduler_config(const TrainConfig& config, int64_t batches_per_epoch);

}  // namespace kiln::cli
