// `kiln train`: builds a reference model (or the graph of --graph), its optimizer, scheduler (engine/optim/
// factory.h) and data loaders from the flags (train_config.h), trains it with a live progress bar (train_loop.h),
// evaluates it on the test set and writes the run directory (run_files.h). --gpus N launches N ranks of it
// (train_launch.h); --distributed makes it one rank of a data-parallel job (train_distributed.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/data/class_filter.h"
#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "app/cli/datasets.h"
#include "app/cli/image_data.h"
#include "app/cli/interrupt.h"
#include "app/cli/progress.h"
#include "app/cli/run_files.h"
#include "app/cli/table_data.h"
#include "app/cli/text_run.h"
#include "app/cli/train_balance.h"
#include "app/cli/train_config.h"
#include "app/cli/train_data.h"
#include "app/cli/train_distributed.h"
#include "app/cli/train_graph.h"
#include "app/cli/train_launch.h"
#include "app/cli/train_loop.h"
#include "app/cli/train_transfer.h"
#include "engine/core/autocast.h"
#include "engine/core/plural.h"
#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/distributed/environment.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/io/safetensors.h"
#include "engine/nn/functional.h"
#include "engine/optim/factory.h"
#include "engine/train/evaluate.h"
#include "engine/train/reference_models.h"
#include "engine/train/trainer.h"

namespace kiln::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::string display_path(const std::filesystem::path& p) { return p.lexically_normal().string(); }

// Never overwrite a finished or interrupted run by accident.
void check_new_run(const TrainConfig& c, const std::filesystem::path& out) {
  KILN_CHECK(c.resume || !std::filesystem::exists(out / "checkpoint"), ValueError, display_path(out),
             " already holds a run (", display_path(out / "checkpoint"),
             "); continue it with --resume, or choose another --out");
}

// A rank > 0 of a data-parallel job: trains in step with the others, silently (Note [Rank 0 speaks]).
int train_rank(train::Trainer& trainer, const Loaders& loaders, DataParallel& dp, const TrainConfig& c) {
  dp.barrier("start of training");  // a rank that died before it is named here, not at a collective
  InterruptGuard interrupt;
  const FitResult fit = run_fit(trainer, *loaders.train, loaders.validation.get(), c.threads, nullptr, nullptr);
  return fit.cancelled ? kExitInterrupted : kExitOk;
}

// One training run; dp: this process's part of a data-parallel job, or null. Only the rank that
// speaks (rank 0, or the only process) prints and writes files (Note [Rank 0 speaks]).
int train(const Args& args, TrainConfig c, DataParallel* dp, Clock::time_point started) {
  const bool speaks = !dp || dp->speaks();
  const int world_size = dp ? dp->world_size() : 1;
  set_threads(c.threads);
  const Device device = dp ? dp->device() : device_flag(args);
  if (c.out_dir.empty()) c.out_dir = default_run_dir(c.model);
  const std::filesystem::path out(c.out_dir);
  if (speaks) check_new_run(c, out);
  manual_seed(c.seed);
  // A graph is read and checked before the data set is (an invalid one lists its problems).
  std::optional<graph::Graph> net;
  net = transfer_graph(c, /*quiet=*/!speaks);  // --graph or --onnx, with a new head and frozen nodes (train_transfer.h)
  // The dataset and its splits: a user's through data::open_dataset, as Kiln Studio (train_data.h).
  TrainData opened = open_train_data(c);
  const bool csv = opened.table.has_value();
  std::optional<data::TabularData>& table = opened.table;
  const bool image = opened.images.has_value();
  std::optional<ImageData>& images = opened.images;
  std::optional<TextData>& text_data = opened.text;
  if (text_data && !net)  // a built-in text model: its graph, sized by the data (text_run.h)
    net = text_model_graph(c.model, c.text.max_length, text_data->tokenizer->vocab_size(),
                           static_cast<int64_t>(text_data->index->classes.size()), c.text_model);
  const bool regression = csv && table->schema.task == data::Task::regression;
  const std::vector<int64_t>& classes = opened.classes;
  Loaders loaders = make_loaders(c, opened, dp ? dp->rank() : 0, world_size);
  const int64_t outputs = csv     ? table->schema.num_outputs()
                          : image ? static_cast<int64_t>(images->run.classes.size())
                          : text_data  ? static_cast<int64_t>(text_data->index->classes.size())
                                  : static_cast<int64_t>(classes.size());
  // --class-weights and --sampler weighted (train_balance.h): read the training labels, maybe a weighted loader.
  const ClassBalance balance = class_balance(c, loaders.train, outputs, regression,
                                             csv ? c.table.path + "'s label '" + table->schema.label + "'" : c.dataset,
                                             device);
  if (net)
    check_graph_fits(*net, c.classes.empty() ? c.dataset : c.dataset + " --classes " + c.classes,
                     loaders.train->dataset(), outputs);

  std::shared_ptr<nn::Module> model =
      net ? std::static_pointer_cast<nn::Module>(std::make_shared<graph::GraphModule>(*net))
      : csv   ? train::make_model(c.model, table->schema.num_features(), outputs)
      : image ? train::make_image_model(c.model, images->run.channels, images->run.height, images->run.width, outputs)
      : c.classes.empty()
          ? train::make_model(c.model)
          : train::make_model(c.model, loaders.train->dataset().get_batch({0}).input.numel(), outputs);  // k classes
  model->to(device);
  // Frozen nodes' parameters (--freeze-*) stay out of the optimizer.
  auto* graph_module = dynamic_cast<graph::GraphModule*>(model.get());
  auto optimizer = optim::make_optimizer(optimizer_config(c), graph_module ? graph_module->trainable_parameters()
                                                                           : model->parameters());
  const train::PrecisionPlan precision = train::plan_precision(c.precision, device);
  if (!precision.note.empty() && speaks)
    std::fprintf(stderr, "kiln: --precision %s: %s\n", c.precision.c_str(), precision.note.c_str());
  AutocastGuard autocast_scope(precision.autocast);
  train::TrainerOptions options;
  if (precision.loss_scaling) options.grad_scaler = std::make_shared<train::GradScaler>();
  options.epochs = c.epochs;
  options.num_classes = outputs;
  options.device = device;
  options.checkpoint_dir = speaks ? (out / "checkpoint").string() : "";  // rank 0 checkpoints the job
  options.checkpoint_every_steps = c.checkpoint_every_steps;
  options.checkpoint_every_seconds = c.checkpoint_every_steps > 0 ? 0 : 60 * c.checkpoint_every_minutes;
  options.checkpoint_on_cancel = true;  // Ctrl-C checkpoints where it stops: --resume loses nothing
  options.run_started = started;        // the seconds a checkpoint carries (summary.json "seconds")
  options.cuda_graph = !args.given("no-cuda-graph");
  auto text = [](double v) { return nlohmann::json(v).dump(); };
  options.run_settings = {{"dataset", c.dataset}, {"model", c.model}, {"batch_size", std::to_string(c.batch_size)},
                          {"optimizer", c.optimizer}, {"lr", text(c.lr)}, {"momentum", text(c.momentum)},
                          {"weight_decay", text(c.weight_decay)}, {"scheduler", c.scheduler},
                          {"seed", std::to_string(c.seed)}, {"val_fraction", text(c.val_fraction)},
                          {"limit_batches", std::to_string(c.limit_batches)}, {"precision", c.precision},
                          {"classes", c.classes}, {"train_subset", std::to_string(c.train_subset)},
                          {"onnx", c.onnx}, {"replace_head", std::to_string(c.replace_head)},
                          {"freeze_until", c.freeze_until}, {"freeze_all_but_head", c.freeze_all_but_head ? "1" : "0"},
                          {"class_weights", c.class_weights}, {"sampler", c.sampler}};
  if (csv) {  // a resumed run must read and split the table the same way
    options.run_settings["table"] = run_table_json(c.table, table->schema);
  }
  if (text_data) {
    options.run_settings["text"] = nlohmann::json::parse(run_text_json(*text_data)).dump();
    options.run_settings["embedding_dim"] = std::to_string(c.text_model.embedding_dim);
    options.run_settings["dropout"] = text(c.text_model.dropout);
  }
  if (image)  // one line, so that a mismatch on --resume is one line too
    options.run_settings["images"] = nlohmann::json::parse(run_images_json(images->run)).dump();
  // Data parallel: rank 0's state on every rank, and gradients averaged over the ranks in backward.
  if (dp) dp->wrap(*model, options);
  optim::Scheduler scheduler = optim::make_scheduler(scheduler_config(c, loaders.train->size()), *optimizer);
  options.scheduler_per_batch = scheduler.per_batch;
  train::Trainer trainer(
      model, optimizer, scheduler.scheduler,
      [regression, weight = balance.weight](const Tensor& output, const Tensor& target) {
        return regression ? nn::F::mse_loss(output, target) : nn::F::cross_entropy(output, target, weight);
      },
      options);
  if (c.resume) {  // every rank reads it (on several machines --out is on a shared file system)
    const std::string note = trainer.load_checkpoint((out / "checkpoint").string());
    if (!note.empty() && speaks) std::fprintf(stderr, "kiln: %s\n", note.c_str());
    KILN_CHECK(trainer.epoch() < c.epochs, ValueError, "the run in ", display_path(out), " has already trained ",
               trainer.epoch(), " epochs; ask for more with --epochs (e.g. --epochs ", trainer.epoch() + 1, ")");
  }

  if (!speaks) return train_rank(trainer, loaders, *dp, c);

  std::filesystem::create_directories(out);
  if (net) graph::save_graph(*net, (out / kRunGraphFile).string());  // the run keeps the network it trains
  if (csv) write_file_atomically((out / kRunTableFile).string(), run_table_json(c.table, table->schema));
  if (image) write_file_atomically((out / kRunImagesFile).string(), run_images_json(images->run));
  if (text_data) {  // the tokenizer fitted on the training split, so that eval and predict tokenize the same way
    write_file_atomically((out / kRunTokenizerFile).string(), text_data->tokenizer->to_json() + "\n");
    write_file_atomically((out / kRunTextFile).string(), run_text_json(*text_data));
  }
  MetricsCsv metrics((out / "metrics.csv").string(), c.resume ? trainer.epoch() : 0, c.resume ? trainer.step() : 0);
  if (csv)
    std::fprintf(stderr, "%s: %lld rows (%lld dropped), %lld features, label '%s' (%s%s)\n", c.table.path.c_str(),
                 static_cast<long long>(table->rows), static_cast<long long>(table->rows_dropped),
                 static_cast<long long>(table->schema.num_features()), table->schema.label.c_str(),
                 data::task_name(table->schema.task),
                 regression ? "" : (", " + std::to_string(table->schema.classes.size()) + " classes").c_str());
  if (csv)
    for (const std::string& n : table->notes) std::fprintf(stderr, "kiln: note: %s\n", n.c_str());
  if (image) {
    std::fprintf(stderr, "%s: %lld classes, %lld channel(s), %lldx%lld, %s split, augment %s; %s skipped%s\n",
                 c.images.path.c_str(), static_cast<long long>(outputs), static_cast<long long>(images->run.channels),
                 static_cast<long long>(images->run.height), static_cast<long long>(images->run.width),
                 images->summary["split"].get<std::string>().c_str(), c.images.augment.c_str(),
                 count_of(static_cast<long long>(images->skipped.size()), "file").c_str(),
                 images->skipped.empty() ? "" : ":");
    for (const std::string& s : images->skipped) std::fprintf(stderr, "  skipped %s\n", s.c_str());
  }
  if (text_data) {
    std::fprintf(stderr, "%s: %zu texts, %zu classes, %lld duplicates dropped; %s tokenizer fitted on the %lld training "
                 "texts, vocabulary %lld, max length %lld (longer texts truncated: %lld training, %lld test); %zu files "
                 "skipped%s\n",
                 c.text.path.c_str(), text_data->index->samples.size(), text_data->index->classes.size(),
                 static_cast<long long>(text_data->index->duplicates_dropped), text_data->tokenizer->kind().c_str(),
                 static_cast<long long>(text_data->train->size()), static_cast<long long>(text_data->tokenizer->vocab_size()),
                 static_cast<long long>(c.text.max_length), static_cast<long long>(text_data->train->truncated()),
                 static_cast<long long>(text_data->test->truncated()), text_data->index->skipped.size(), text_data->index->skipped.empty() ? "" : ":");
    for (const data::SkippedText& s : text_data->index->skipped)
      std::fprintf(stderr, "  skipped %s: %s\n", s.origin.c_str(), s.reason.c_str());
  }
  if (balance.summary.contains("train_class_counts")) {
    std::string text;
    for (const auto& n : balance.summary["train_class_counts"]) text += (text.empty() ? "" : " ") + n.dump();
    std::fprintf(stderr, "class balance: training samples per class %s; loss weights %s; sampler %s\n", text.c_str(),
                 balance.loss_weights.empty() ? "none" : balance.summary["class_weights"].dump().c_str(),
                 c.sampler.c_str());
  }
  const std::string resume_text =
      !c.resume ? ""
      : trainer.batch_in_epoch() == loaders.train->size()  // stopped after an epoch's last batch
          ? ", resuming after step " + std::to_string(trainer.step()) + " (the last batch of epoch " +
                std::to_string(trainer.epoch() + 1) + ": its validation and checkpoint)"
      : trainer.batch_in_epoch() > 0 ? ", resuming at step " + std::to_string(trainer.step() + 1) + " (batch " +
                                           std::to_string(trainer.batch_in_epoch() + 1) + " of epoch " +
                                           std::to_string(trainer.epoch() + 1) + ")"
                                     : ", resuming after epoch " + std::to_string(trainer.epoch());
  if (dp)  // --batch-size is per GPU, as in PyTorch's DistributedDataParallel
    std::fprintf(stderr, "data parallel: %s (%s), batch %lld per GPU, %lld in all\n",
                 count_of(world_size, "GPU").c_str(), dp->library().c_str(), static_cast<long long>(c.batch_size),
                 static_cast<long long>(c.batch_size * world_size));
  std::fprintf(stderr, "training %s (%lld parameters) on %s, %s on %s: %lld samples, %lld batches of %lld%s%s\n",
               c.model.c_str(), static_cast<long long>(model->num_parameters()), c.dataset.c_str(),
               c.optimizer.c_str(), device.str().c_str(), static_cast<long long>(loaders.train->dataset().size()),
               static_cast<long long>(loaders.train->size()), static_cast<long long>(c.batch_size),
               dp ? " per GPU" : "", resume_text.c_str());
  if (dp) dp->barrier("start of training");

  // Ctrl-C from here to the end: run_fit's own guard turns it into Trainer::cancel(); this one
  // stops the test pass after the last epoch (exit 130 too), so that no Ctrl-C goes unheard.
  InterruptGuard interrupt;
  ProgressBar progress(c.epochs);
  FitResult fit = run_fit(trainer, *loaders.train, loaders.validation.get(), c.threads, progress, metrics);
  if (fit.cancelled) {
    std::fprintf(stderr, "kiln: training cancelled; ");
    if (fit.checkpoint_step > 0)
      std::fprintf(stderr, "the checkpoint of step %lld (epoch %d) is in %s (continue with --out %s --resume)\n",
                   static_cast<long long>(fit.checkpoint_step), fit.checkpoint_epoch + 1,
                   display_path(out / "checkpoint").c_str(), display_path(out).c_str());
    else if (c.resume)
      std::fprintf(stderr, "the checkpoint it resumed from is still in %s\n", display_path(out / "checkpoint").c_str());
    else
      std::fprintf(stderr, "no checkpoint was taken yet (see --checkpoint-every)\n");
    return kExitInterrupted;
  }

  if (device.type == DeviceType::cuda || device.type == DeviceType::hip)  // the backends that record graphs
    std::fprintf(stderr, "CUDA graph: %s\n", trainer.cuda_graph_note().c_str());
  // The weights are saved before the test pass, so that a Ctrl-C in it loses nothing of the training.
  std::map<std::string, std::string> metadata{{"format", "pt"}, {"kiln.model", c.model}, {"kiln.dataset", c.dataset}};
  if (csv) metadata[kTableMetadataKey] = kRunTableFile;  // `kiln eval` rebuilds the test split from it
  if (image) metadata[kImagesMetadataKey] = kRunImagesFile;
  if (text_data) metadata[kTextMetadataKey] = kRunTextFile;
  if (net) metadata[kGraphMetadataKey] = kRunGraphFile;  // `kiln eval` rebuilds the network from it
  if (!c.classes.empty()) metadata[data::kClassesMetadataKey] = data::classes_str(classes);  // `kiln eval` keeps the same classes
  const std::filesystem::path weights = out / "model.safetensors";
  io::save_safetensors(weights.string(), model->state_dict(), metadata);

  const int64_t test_samples = loaders.test->dataset().size();  // 0: --test-fraction 0 (NaN figures, null in summary.json)
  if (test_samples > 0)
    std::fprintf(stderr, "evaluating on %lld test samples ... (Ctrl-C stops)\n", static_cast<long long>(test_samples));
  train::EvaluateOptions test_options = trainer.evaluate_options();
  test_options.should_stop = [] { return InterruptGuard::interrupted(); };
  const train::Evaluation evaluation = train::evaluate(*model, *loaders.test, test_options);
  if (evaluation.stopped) {
    std::fprintf(stderr,
                 "kiln: evaluation interrupted after %lld of %lld test samples; the training is kept: the weights in "
                 "%s, the checkpoint of epoch %d in %s; evaluate them with kiln eval --model-file %s\n",
                 static_cast<long long>(evaluation.metrics.count()),
                 static_cast<long long>(loaders.test->dataset().size()), display_path(weights).c_str(),
                 trainer.epoch(), display_path(out / "checkpoint").c_str(), display_path(weights).c_str());
    return kExitInterrupted;
  }
  const train::ClassificationMetrics& test = evaluation.metrics;
  const double seconds_training = trainer.seconds_training();
  // Every rank trains as many samples as rank 0 (Note [Distributed sampling]): the job's rate is world_size times.
  const double images_per_second =
      seconds_training > 0 ? static_cast<double>(trainer.samples_trained()) * world_size / seconds_training : 0.0;
  // A resumed run's whole time: the seconds its checkpoint carried and this process's.
  const double seconds = trainer.resumed_seconds() + std::chrono::duration<double>(Clock::now() - started).count();
  nlohmann::ordered_json summary = {
      {"model", c.model},
      {"dataset", c.dataset},
      {"test_accuracy", test.accuracy()},
      {"test_loss", test.loss()},
      {"epochs", c.epochs},
      {"batch_size", c.batch_size},
      {"optimizer", c.optimizer},
      {"lr", c.lr},
      {"seed", c.seed},
      {"images_per_second", images_per_second},
      {"device", device.str()},
      {"seconds", seconds},
      {"parameters", model->num_parameters()},
      {"peak_memory_bytes", backend_for(device)->memory_stats().peak_allocated},
      {"reserved_memory_bytes", backend_for(device)->memory_stats().reserved},
      {"precision", precision.autocast ? dtype_name(*precision.autocast) : "f32"},
      {"skipped_steps", options.grad_scaler ? options.grad_scaler->skipped_steps() : 0},
      {"cuda_graph", trainer.cuda_graph_note()},
  };
  if (dp) {
    summary["world_size"] = world_size;  // batch_size is per GPU; images_per_second is the job's
    summary["collectives"] = dp->library();
  }
  for (const auto& [key, value] : balance.summary.items()) summary[key] = value;
  if (net) summary["graph"] = kRunGraphFile;
  if (!c.classes.empty()) summary["classes"] = classes;  // label i of the model is data set class classes[i]
  if (c.train_subset > 0) summary["train_subset"] = c.train_subset;
  if (graph_module) summary["trainable_parameters"] = [&] {
    int64_t n = 0;
    for (const Tensor& p : graph_module->trainable_parameters()) n += p.numel();
    return n;
  }();
  if (csv) {
    summary["data"] = table_summary(c.table, *table, loaders.train->dataset().size(),
                                    loaders.validation ? loaders.validation->dataset().size() : 0,
                                    loaders.test->dataset().size());
    if (regression) {
      summary.erase("test_accuracy");
      summary["test_rmse"] = std::sqrt(test.loss());
    }
  }
  if (image) summary["data"] = images->summary;
  if (text_data) {  // the evaluation of a text run: confusion matrix and the misclassified texts with their tokens
    summary["data"] = text_summary(*text_data);
    const int64_t k = outputs;
    nlohmann::ordered_json confusion = nlohmann::ordered_json::array();
    for (int64_t t = 0; t < k; ++t) {
      std::vector<int64_t> row(test.confusion().begin() + t * k, test.confusion().begin() + (t + 1) * k);
      confusion.push_back(row);
    }
    summary["confusion_matrix"] = confusion;
    summary["misclassified"] =
        mistakes_json(text_mistakes(*model, *text_data->test, text_data->index->classes, device, 20));
  }
  if (options.grad_scaler)
    std::fprintf(stderr, "f16 loss scaling: %lld of %lld steps skipped (non-finite gradients), final scale %g\n",
                 static_cast<long long>(options.grad_scaler->skipped_steps()),
                 static_cast<long long>(options.grad_scaler->steps()), options.grad_scaler->get_scale());
  write_file_atomically((out / "summary.json").string(), summary.dump(2) + "\n");

  char result[96];
  if (test_samples == 0)
    std::snprintf(result, sizeof result, "no test split (--test-fraction 0): not evaluated");
  else if (regression)
    std::snprintf(result, sizeof result, "test mse %.4g (rmse %.4g)", test.loss(), std::sqrt(test.loss()));
  else
    std::snprintf(result, sizeof result, "test accuracy %.2f%% (loss %.4f)", 100 * test.accuracy(), test.loss());
  std::printf("%s, %.0f %s/s training, %s total; files in %s/: model.safetensors metrics.csv summary.json "
              "checkpoint/%s%s\n",
              result, images_per_second, csv || text_data ? "samples" : "images", format_duration(seconds).c_str(),
              display_path(out).c_str(), net ? " graph.json" : "",
              csv ? " table.json" : image ? " images.json"   : text_data ? " text.json tokenizer.json" : "");
  return kExitOk;
}

}  // namespace

int train_command(const std::vector<std::string>& argv) {
  const auto started = Clock::now();
  ArgParser parser = train_parser();
  Args args = parser.parse(argv);
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  TrainConfig c = train_config(args);
  if (c.parallel.gpus > 0) {
    // The launcher checks what it can once, before N ranks would each say it.
    if (!c.out_dir.empty()) check_new_run(c, c.out_dir);
    return launch_ranks(argv, args, c.parallel.gpus);
  }
  if (!c.parallel.distributed) return train(args, c, nullptr, started);
  // One rank of a data-parallel job: its errors name it (ValueError naming the variable before it is known).
  const distributed::DistributedEnvironment env = distributed::from_environment();
  std::unique_ptr<DataParallel> dp;
  try {
    dp = std::make_unique<DataParallel>(env, args, c.parallel.timeout_s);
    const int status = train(args, c, dp.get(), started);
    // Stopped by Ctrl-C, the ranks may be at different steps: a clean finalize would wait for the
    // collectives a rank will not join, until the timeout.
    if (status != kExitOk) dp->abort();
    return status;
  } catch (const UsageError& e) {
    if (dp) dp->abort();
    const std::string prefix = "kiln train: ", what = e.what();
    if (what.rfind(prefix, 0) != 0) throw;
    throw UsageError(prefix + rank_message(env.rank, what.substr(prefix.size())));  // "kiln train: rank R: ..."
  } catch (const std::exception& e) {
    if (dp) dp->abort();
    std::fprintf(stderr, "kiln: error: %s\n", rank_message(env.rank, e.what()).c_str());
    return kExitError;
  }
}

}  // namespace kiln::cli
