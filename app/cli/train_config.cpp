#include "app/cli/train_config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "app/cli/datasets.h"
#include "app/cli/text_run.h"
#include "app/cli/train_transfer.h"
#include "engine/train/checkpoint_every.h"
#include "engine/train/reference_models.h"

namespace kiln::cli {

ArgParser train_parser() {
  ArgParser p("train",
              "Trains a reference model on a dataset with a live progress bar, evaluates it on the test\n"
              "set and writes model.safetensors, metrics.csv, summary.json and checkpoint/ into --out.");
  p.flag("dataset", "NAME", "fashion-mnist", "dataset to train on: fashion-mnist, csv:FILE for a CSV/TSV table\n"
                                             "(.csv, .tsv, .csv.gz; see the csv: flags below), imagefolder:DIR\n"
                                             "(DIR/<class>/<image>, or DIR/train/ and DIR/test/ so) or images:FILE.csv\n"
                                             "(columns path,label; paths relative to the file) or text:DIR|FILE (a\n"
                                             "folder per class of .txt files, a CSV/TSV with text and label columns,\n"
                                             "or JSON lines; see the text: flags below)")
      .flag("model", "NAME", "mlp", "reference model (engine/train/reference_models.h), or for text:\n"
                                    "text-bow (Embedding -> mean over the tokens -> Linear; the default there),\n"
                                    "text-lstm (Embedding -> LSTM -> mean -> Linear) or text-transformer\n"
                                    "(Embedding -> positions -> 2 Transformer encoder layers -> mean -> Linear)",
            [] {
              std::vector<std::string> names = train::reference_model_names();
              for (const std::string& n : text_model_names()) names.push_back(n);
              return names;
            }())
      .flag("graph", "FILE", "", "train the network a graph JSON file describes (Kiln Studio's format,\n"
                                 "e.g. projects/templates/fashion_mnist_cnn.json) instead of --model")
      .flag("epochs", "N", "5", "epochs to train")
      .flag("batch-size", "B", "128", "samples per batch (per GPU with --gpus or --distributed)")
      .flag("lr", "X", "0.001", "learning rate (the peak rate with --scheduler onecycle)")
      .flag("optimizer", "NAME", "adam", "optimizer (torch.optim defaults otherwise)", optim::optimizer_names())
      .flag("momentum", "X", "0.9", "momentum of sgd and rmsprop")
      .flag("weight-decay", "X", "0", "weight decay (L2 for sgd, adam and rmsprop, decoupled for adamw)")
      .flag("scheduler", "NAME", "cosine",
            "learning-rate schedule: cosine = CosineAnnealingLR over the run (stepped each epoch;\n"
            "the last epochs' smaller steps settle the weights: +1 to 2 points of test accuracy\n"
            "after 5 epochs), step = StepLR, onecycle = OneCycleLR stepped every batch, none",
            optim::scheduler_names())
      .flag("step-size", "N", "", "step: epochs between decays (default: max(1, epochs / 3))")
      .flag("gamma", "X", "0.1", "step: decay factor")
      .flag("device", "D", "auto", "device (cpu, cuda:0, vulkan:0 ...; auto = the best, or KILN_DEVICE)")
      .flag("precision", "P", "f32",
            "bf16 / f16: matmul and conv in that type with f32 weights (mixed precision); f16 adds\n"
            "dynamic loss scaling; on a CPU without bf16 dot products training runs in f32 (a note says so)",
            {"f32", "bf16", "f16"})
      .flag("seed", "S", "0", "seed of the weights, the shuffle order and the validation split")
      .flag("val-fraction", "F", "0", "fraction of the training set held out for validation (0: none)")
      .flag("data-dir", "DIR", "", std::string("dataset directory (default: ") + default_data_dir("fashion-mnist") + ")")
      .flag("threads", "N", "", "CPU threads (default: all cores, or OMP_NUM_THREADS when set)")
      .flag("out", "DIR", "", "run directory (default: runs/<model>-<timestamp>)")
      .toggle("resume", "continue the run in --out from its checkpoint/ (the flags must match)")
      .flag("checkpoint-every", "N|Nm", "10m",
            "a checkpoint in the middle of an epoch too, every N optimizer steps or every N minutes\n"
            "(Nm), with the position in the epoch, so that --resume continues at the next batch (0: only\n"
            "at each epoch's end)")
      .flag("class-weights", "W", "none",
            "weights of the classes in the loss, for imbalanced data: none, balanced (scikit-learn's\n"
            "n_samples / (n_classes * count of the class) over the training split) or W0,W1,... (one\n"
            "positive number per class, in class order); cross_entropy's weight= as PyTorch's (the mean\n"
            "divides by the summed weights of the batch's targets; the test loss is weighted too)")
      .flag("sampler", "NAME", "random",
            "how an epoch draws training samples: random = a shuffle (each sample once), weighted =\n"
            "WeightedRandomSampler with replacement, weight 1 / count of the sample's class, so every\n"
            "class is drawn equally often on average (seeded by --seed and the epoch)",
            {"random", "weighted"})
      .flag("limit-batches", "N", "0", "train, validate and test on at most N batches each (for smoke tests)")
      .toggle("no-cuda-graph",
              "on a CUDA device, run every training step eagerly instead of recording the step once\n"
              "and replaying it as a CUDA graph (also KILN_CUDA_GRAPH=0); the captured step is used\n"
              "unless f16 loss scaling or a step that reads the host keeps it eager (dropout is drawn\n"
              "on the device, anew at each replay), and\n"
              "kiln train prints which it was");
  add_parallel_flags(p);
  add_transfer_flags(p);
  add_table_flags(p);
  add_image_flags(p);
  add_text_flags(p);
  p.flag("embedding-dim", "N", "64", "text models: the embedding's width, kept by the layers after it\n"
                                    "(text-transformer: a multiple of its 4 heads)")
   .flag("dropout", "P", "model's", "text models: Dropout(P) after the embedding and before the classifier, and P\n"
                                   "inside the Transformer layers (default: text-transformer 0.1 inside its layers only,\n"
                                   "the others none)");
  p.epilog(
      "Ctrl-C stops after the current batch (exit status 130) and checkpoints there, so that\n"
      "`--resume` continues with the next batch; a killed run keeps its last checkpoint (of the last\n"
      "finished epoch, or --checkpoint-every's in the middle of one): a checkpoint replaces the\n"
      "last one atomically. Ctrl-C in the test-set evaluation after the last epoch stops it too (exit\n"
      "status 130), with the weights already in model.safetensors for `kiln eval`.\n\n"
      "Several GPUs (data parallel, as PyTorch's DistributedDataParallel): --gpus N starts one process per\n"
      "GPU of this machine; each trains on its shard of every epoch (--batch-size per GPU) and the\n"
      "gradients are averaged through NCCL after every backward pass. Rank 0 prints the progress, writes\n"
      "the checkpoints and the run, and evaluates the test set; every rank evaluates the validation set.\n"
      "On several machines start `kiln train --distributed` on each GPU with a torchrun-style launcher\n"
      "(MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK; each process uses cuda:LOCAL_RANK; --out\n"
      "on a shared file system for --resume). NVLink multicast stays off (NCCL_NVLS_ENABLE=0). A rank\n"
      "that fails or dies stops the others; see docs/multi-gpu.md.\n\n"
      "example: kiln train --model cnn --epochs 3 --val-fraction 0.1 --out runs/cnn\n"
      "         kiln train --model cnn --gpus 2 --batch-size 256 --precision bf16 --out runs/cnn2\n"
      "         kiln train --dataset csv:wine_data.csv --skip-rows 1 --no-header --label -1 --lr 0.01 --epochs 40\n"
      "         kiln train --dataset imagefolder:photos --model cnn --image-size 64 --augment flip\n"
      "         kiln train --dataset text:mails --tokenizer word --max-length 256 --vocab-size 20000");
  return p;
}

TrainConfig train_config(const Args& args) {
  TrainConfig c;
  c.dataset = args.str("dataset");
  const std::vector<std::string>& known = dataset_names();
  if (!is_csv_dataset(c.dataset) && !is_image_dataset(c.dataset) && !is_text_dataset(c.dataset) &&
      std::find(known.begin(), known.end(), c.dataset) == known.end())
    args.fail("unknown dataset '" + c.dataset + "'; known: fashion-mnist, csv:FILE, imagefolder:DIR, images:FILE.csv, text:DIR|FILE");
  c.model = args.str("model");
  read_transfer_flags(args, c);
  if (args.given("graph")) {
    if (args.given("model")) args.fail("--graph and --model are exclusive (the graph is the model)");
    c.graph = args.str("graph");
    if (c.graph.empty()) args.fail("--graph needs a graph JSON file");
    c.model = "graph-" + std::filesystem::path(c.graph).stem().string();
  }
  c.epochs = static_cast<int>(std::min<int64_t>(args.integer("epochs", 1), 1'000'000));
  c.batch_size = args.integer("batch-size", 1);
  c.lr = args.number("lr", 0, 1e6);
  c.optimizer = args.str("optimizer");
  c.momentum = args.number("momentum", 0, 1);
  c.weight_decay = args.number("weight-decay", 0, 1e6);
  c.scheduler = args.str("scheduler");
  c.step_size = args.given("step-size") ? static_cast<int>(std::min<int64_t>(args.integer("step-size", 1), 1'000'000))
                                        : 0;  // the engine's default, max(1, epochs / 3)
  c.gamma = args.number("gamma", 0, 1);
  c.device = args.str("device");
  c.precision = args.str("precision");
  c.seed = static_cast<uint64_t>(args.integer("seed", 0));
  c.val_fraction = args.number("val-fraction", 0, 0.99);
  const bool own_data = is_csv_dataset(c.dataset) || is_image_dataset(c.dataset) || is_text_dataset(c.dataset);
  if (own_data && args.given("data-dir")) args.fail("--data-dir applies to fashion-mnist, not " + c.dataset);
  c.data_dir = args.given("data-dir") ? args.str("data-dir") : own_data ? "" : default_data_dir(c.dataset);
  c.table = table_config(args, c.dataset, c.seed);
  c.images = image_config(args, c.dataset, args.number("test-fraction", 0, 0.95), c.seed);
  const bool text_model = std::count(text_model_names().begin(), text_model_names().end(), c.model) > 0;
  if (is_text_dataset(c.dataset)) {
    c.text = text_config(args, c.dataset, args.number("test-fraction", 0, 0.95), c.seed);
    c.text_model.embedding_dim = args.integer("embedding-dim", 1);
    if (args.given("dropout")) c.text_model.dropout = args.number("dropout", 0, 0.99);
    if ((args.given("embedding-dim") || args.given("dropout")) && (args.given("graph") || args.given("onnx")))
      args.fail("--embedding-dim and --dropout shape the built-in text models, not a --graph");
    if (!args.given("model") && !args.given("graph") && !args.given("onnx")) c.model = text_model_names().front();
    else if (args.given("model") && !text_model)
      args.fail("--model " + c.model + " reads images or tables; a text dataset trains a text model (text-bow, text-lstm, "
                "text-transformer) or a --graph whose Input is token ids (dtype i64, shape [max-length])");
  } else {
    if (text_model) args.fail("--model " + c.model + " trains on text:DIR|FILE only");
    for (const char* f : {"tokenizer", "max-length", "vocab-size", "min-freq", "sp-model", "no-lowercase",
                          "text-column", "label-column", "keep-duplicates", "embedding-dim", "dropout"})
      if (args.given(f)) args.fail(std::string("--") + f + " applies to --dataset text:DIR|FILE only");
  }
  c.threads = args.given("threads") ? static_cast<int>(std::min<int64_t>(args.integer("threads", 1), 4096)) : 0;
  c.resume = args.given("resume");
  c.limit_batches = args.integer("limit-batches", 0);
  c.class_weights = args.str("class-weights");
  if (c.class_weights.empty()) args.fail("--class-weights needs none, balanced or W0,W1,... (one weight per class)");
  c.sampler = args.str("sampler");
  {
    const std::string every = args.str("checkpoint-every");
    const std::optional<train::CheckpointEvery> e = train::parse_checkpoint_every(every);
    if (!e) args.fail(train::checkpoint_every_problem(every));
    c.checkpoint_every_steps = e->steps;
    c.checkpoint_every_minutes = e->minutes;
  }
  c.parallel = parallel_config(args);
  if (c.resume && !args.given("out")) args.fail("--resume needs --out DIR (the run to continue)");
  c.out_dir = args.given("out") ? args.str("out") : "";
  if (args.given("out") && c.out_dir.empty()) args.fail("--out needs a directory");
  if (args.given("momentum") && c.optimizer != "sgd" && c.optimizer != "rmsprop")
    args.fail("--momentum applies to --optimizer sgd and rmsprop only");
  if ((args.given("step-size") || args.given("gamma")) && c.scheduler != "step")
    args.fail("--step-size and --gamma apply to --scheduler step only");
  return c;
}

optim::OptimizerConfig optimizer_config(const TrainConfig& c) {
  return {.name = c.optimizer, .lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay};
}

optim::SchedulerConfig scheduler_config(const TrainConfig& c, int64_t batches_per_epoch) {
  return {.name = c.scheduler, .epochs = c.epochs, .steps_per_epoch = batches_per_epoch, .step_size = c.step_size,
          .gamma = c.gamma};
}

}  // namespace kiln::cli
