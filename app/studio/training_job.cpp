#include "app/studio/training_job.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <chrono>
#include <thread>
#include <variant>

#include "app/studio/run_predictor.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/data/class_filter.h"
#include "engine/data/dataloader.h"
#include "engine/data/fashion_mnist.h"
#include "engine/data/text/utf8.h"
#include "engine/graph/footprint.h"
#include "engine/graph/graph_module.h"
#include "engine/nn/functional.h"
#include "engine/optim/factory.h"
#include "engine/train/evaluate.h"
#include "projects/index_store.h"
#include "projects/project.h"

namespace kiln::studio {

namespace {

// The two splits stay loaded for the life of the process (47 MB + 8 MB).
std::shared_ptr<const data::FashionMNIST> fashion_mnist(const std::string& dir, bool train) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, bool>, std::shared_ptr<const data::FashionMNIST>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[{dir, train}];
  if (!slot) slot = std::make_shared<data::FashionMNIST>(train, dir);
  return slot;
}

std::string dataset_name(const DatasetSettings& d) {
  return (d.name == "csv"      ? "the table '"
          : d.name == "images" ? "the image manifest '"
          : d.name == "text"   ? "the texts '"
                               : "the image folder '") +
         std::filesystem::path(d.path).filename().string() + "'";
}

std::string node_label(const graph::Graph& g, graph::NodeId id) {
  return g.contains(id) ? "'" + g.node(id).name + "'" : "";
}

}  // namespace

std::vector<graph::Problem> training_problems(const graph::Graph& g, const graph::Analysis& a, int64_t batch_size,
                                              int64_t num_classes, const graph::SymShape& expected, const std::string& data,
                                              DType input_dtype) {
  const bool fashion = data == "Fashion-MNIST";
  const bool text = input_dtype == DType::i64;
  const std::string samples = text ? "texts" : expected.size() == 1 ? "rows" : "images";
  std::vector<graph::Problem> out;
  const auto inputs = g.input_nodes(), outputs = g.output_nodes();
  // The data set check comes first and does not need the rest of the graph to be valid.
  if (inputs.size() == 1 && !expected.empty()) {
    auto in = a.nodes.find(inputs[0]);
    if (in != a.nodes.end() && !in->second.outputs.empty()) {
      const graph::TensorType& t = in->second.outputs[0];
      graph::SymShape sample(t.shape.begin() + (t.shape.empty() ? 0 : 1), t.shape.end());
      const bool sample_ok = !t.shape.empty() && sample == expected;
      const bool batch_ok = !t.shape.empty() && t.shape[0] == graph::kBatch;
      if (!sample_ok)
        out.push_back({inputs[0], "the dataset's " + samples + " are " + graph::shape_str(expected) +
                                      (text ? " token ids" : "") + " (" + data + ") but the graph's Input " +
                                      node_label(g, inputs[0]) + " expects " + graph::shape_str(sample) +
                                      "; set the Input's shape to " + graph::shape_str(expected)});
      if (!t.shape.empty() && !batch_ok) {
        // An imported model's fixed batch (its input is [1, 1, 28, 28]): the samples fit, the batches do not.
        const std::string fixed = t.shape[0] >= 0 ? "fixes the batch at " + std::to_string(t.shape[0])
                                                  : "names its batch '" + graph::dim_str(t.shape[0]) + "', not N";
        const std::string size = batch_size > 0 ? std::to_string(batch_size) : std::string("the batch size's");
        out.push_back({inputs[0], "the graph's Input " + node_label(g, inputs[0]) + " " + fixed + ", but training takes batches of " +
                      size + " images (and validation and test of 256); set the Input's batch to 0 (any batch size)"});
      }
      if (sample_ok && batch_ok && t.dtype != input_dtype)
        out.push_back({inputs[0], "the dataset's " + samples + " are " + (text ? "i64 token ids" : "f32") +
                                      " but the graph's Input " + node_label(g, inputs[0]) + " is " + t.str() +
                                      "; set the Input's dtype to " + (text ? "i64" : "f32")});
    }
  }
  out.insert(out.end(), a.problems.begin(), a.problems.end());
  if (!a.ok()) return out;
  if (inputs.size() != 1) out.push_back({-1, "the graph needs exactly one Input node for images, it has " + std::to_string(inputs.size())});
  if (outputs.size() != 1) out.push_back({-1, "the graph needs exactly one Output node, it has " + std::to_string(outputs.size())});
  if (outputs.size() != 1) return out;
  auto o = a.nodes.find(outputs[0]);
  if (o != a.nodes.end() && !o->second.inputs.empty() && !expected.empty()) {
    const graph::TensorType& t = o->second.inputs[0];
    const std::string k = std::to_string(num_classes);
    const std::string needs = !fashion                            ? "the " + k + " classes of " + data + " need"
                              : num_classes == kFashionMnistClasses ? std::string("Fashion-MNIST needs")
                                                                    : "the dataset's " + k + " classes (its class filter) need";
    if (t.shape.size() != 2 || t.shape[1] != num_classes)
      out.push_back({outputs[0], "the graph's Output " + node_label(g, outputs[0]) + " receives " + t.str() + " but " +
                                     needs + " class scores [N, " + k + "]: end with a Linear layer of " + k + " outputs"});
  }
  // Frozen nodes (transfer learning) leave the optimizer nothing when every layer is frozen.
  int64_t trainable = 0, frozen = 0;
  for (const auto& [id, info] : a.nodes) (g.node(id).trainable ? trainable : frozen) += info.parameters;
  if (frozen > 0 && trainable == 0)
    out.push_back({-1, "every layer with parameters is frozen, so training would change nothing: "
                       "unfreeze some (Edit > Unfreeze All, or a node's Trainable box)"});
  return out;
}

std::vector<std::string> training_blockers(const graph::Graph& g, const graph::Analysis& a, int64_t batch_size,
                                           int64_t num_classes, const graph::SymShape& sample, const std::string& data,
                                           DType input_dtype) {
  std::vector<std::string> out;
  for (const graph::Problem& p : training_problems(g, a, batch_size, num_classes, sample, data, input_dtype)) {
    const bool analysis = std::find(a.problems.begin(), a.problems.end(), p) != a.problems.end();
    out.push_back(analysis && p.node >= 0 && g.contains(p.node) ? g.node(p.node).name + ": " + p.message : p.message);
  }
  return out;
}

std::string cpu_memory_problem(const graph::Graph& g, const graph::Analysis& a, const TrainingConfig& c,
                               const Device& device, int64_t samples) {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (device.type != DeviceType::cpu || pages <= 0 || page_size <= 0 || !a.ok()) return "";
  const double memory = double(pages) * double(page_size);
  const int64_t batch = samples > 0 ? std::min<int64_t>(c.batch_size, samples) : c.batch_size;
  const graph::MemoryEstimate m =
      graph::estimate_memory(g, a, {.batch = batch, .optimizer = c.optimizer, .momentum = c.momentum});
  if (double(m.training) <= memory) return "";
  return "training needs about " + graph::bytes_str(m.training) + " at batch size " + std::to_string(batch) +
         " (activations " + graph::bytes_str(m.activations) + ", parameters, gradients and optimizer state " +
         graph::bytes_str(m.parameters + m.gradients + m.optimizer_state) + "; Model > Analyze Network), more than "
         "this machine's " + graph::bytes_str(int64_t(memory)) + " of memory: lower the batch size" +
         (a.total_parameters > 0 ? ", the input size or the layers' widths" : "");
}

std::string plain_error(const std::exception& e) {
  const std::string what = e.what();
  if (dynamic_cast<const train::NonFiniteLossError*>(&e)) return what;  // already says what to do
  if (dynamic_cast<const DeviceError*>(&e)) return "device problem: " + what;
  if (dynamic_cast<const IoError*>(&e)) return "file problem: " + what;
  if (dynamic_cast<const ShapeError*>(&e)) return "the shapes do not fit: " + what;
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of memory: try a smaller batch size or model";
  return what;
}

TrainingJob::TrainingJob(JobSpec spec) : spec_(std::move(spec)) {}

void TrainingJob::message(const std::string& m) {
  std::lock_guard<std::mutex> lock(mutex_);
  messages_.push_back(m);
}

std::vector<std::string> TrainingJob::drainMessages() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(messages_, {});
}

// Note [Metrics before a checkpoint]
// The session drains the trainer's events about 30 times a second and the writer commits every
// ~200 ms, so a checkpoint stored by fit()'s thread could be committed before the step metrics
// that precede it; a kill then would leave steps that the resumed run never trains again, a hole
// in the curve. So the rows are written here, where the events are drained, and before a
// checkpoint is stored commit_metrics drains the rest on fit()'s thread and commits them first.
std::vector<train::Event> TrainingJob::drainEvents(std::string* write_error) {
  std::lock_guard<std::mutex> events_lock(events_mutex_);
  std::shared_ptr<train::Trainer> t;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    t = trainer_;
  }
  std::vector<train::Event> out = std::exchange(drained_, {});
  if (t) {
    std::vector<train::Event> more = t->events().drain();
    write_metrics(more, write_error);
    out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return out;
}

void TrainingJob::write_metrics(const std::vector<train::Event>& events, std::string* error) {
  const std::shared_ptr<projects::MetricsWriter> w = metricsWriter();
  if (!w) return;
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  try {
    for (const train::Event& event : events) {
      if (const auto* b = std::get_if<train::BatchEnd>(&event))
        w->step({b->step, b->epoch + 1, b->loss, b->lr, b->samples_per_second, now});
      else if (const auto* e = std::get_if<train::EpochEnd>(&event))
        w->epoch({e->epoch + 1, e->train_loss, e->train_accuracy, e->val_loss, e->val_accuracy, e->lr, e->seconds});
    }
  } catch (const std::exception& e) {
    if (error && error->empty()) *error = e.what();
  }
}

void TrainingJob::commit_metrics(train::Trainer& trainer) {
  std::lock_guard<std::mutex> events_lock(events_mutex_);
  std::vector<train::Event> events = trainer.events().drain();
  std::string error;
  write_metrics(events, &error);
  if (auto w = metricsWriter()) w->flush();  // throws what a failed commit said: the checkpoint is not stored
  drained_.insert(drained_.end(), std::make_move_iterator(events.begin()), std::make_move_iterator(events.end()));
}

void TrainingJob::pause(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  paused_ = on;
  if (trainer_) on ? trainer_->pause() : trainer_->resume();
}

void TrainingJob::cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
  if (trainer_) trainer_->cancel();
}

void TrainingJob::open_writer(int64_t run) {
  auto writer = std::make_shared<projects::MetricsWriter>(spec_.project_path, run);
  std::lock_guard<std::mutex> lock(mutex_);
  writer_ = writer;
  run_ = run;
}

std::shared_ptr<projects::MetricsWriter> TrainingJob::metricsWriter() {
  std::lock_guard<std::mutex> lock(mutex_);
  return writer_;
}

void TrainingJob::run() {
  try {
    if (spec_.threads > 0) omp_set_num_threads(spec_.threads);
    const TrainingConfig& c = spec_.config;
    c.validate();
    spec_.dataset.validate();
    const Device device = resolve_device(c.device);  // DeviceError naming the devices that exist
    result_.device = device.str();
    // One connection for the whole run, used only from this thread. SQLite commits wait
    // on the disk: never on the UI thread.
    std::optional<projects::Project> project;
    // The run the job records: a new one, or (spec_.resume_run) a stopped, interrupted or failed one that
    // is reopened once its checkpoint is loaded, so that a failure before leaves it as it was.
    int64_t record = spec_.resume_run;
    const bool resuming = record != 0;
    if (resuming) {
      KILN_CHECK(!spec_.project_path.empty() && !spec_.work_dir.empty(), ValueError,
                 "continuing run ", record, " needs its project and a folder for the checkpoint");
      project.emplace(projects::Project::open(spec_.project_path));
      const std::string why = project->why_not_resumable(record);
      KILN_CHECK(why.empty(), ValueError, why);
    } else if (!spec_.project_path.empty()) {
      project.emplace(projects::Project::open(spec_.project_path));
      projects::RunConfig rc = spec_.run_config;
      rc.device = device.str();
      rc.graph_version = spec_.graph_version ? spec_.graph_version : project->save_graph(graph::to_json(spec_.graph, &project->blobs()), "trained");
      for (auto& [key, json] : spec_.settings)
        if (project->setting(key) != json) project->set_setting(key, json);
      record = project->begin_run(rc);
      open_writer(record);
    }
    graph::Analysis analysis = graph::analyze(spec_.graph);
    std::optional<data::OpenedDataset> opened;
    std::shared_ptr<const data::Dataset> train_set, val_set;
    int64_t k = 0;
    if (!spec_.dataset.is_fashion_mnist()) {
      message("reading " + spec_.dataset.spec());
      data::DatasetSource source = spec_.dataset.source(c.seed);
      if (!spec_.project_path.empty()) source.index_store = std::make_shared<projects::ProjectIndexStore>(spec_.project_path);
      source.rescan = spec_.rescan;
      opened = data::open_dataset(source);
      if (opened->images && opened->images->index_reused > 0) {
        // The stored index does not see a file rewritten in place (truncated, corrupted, edited):
        // one stat a file finds those, and the folder is then read and verified again, so that a
        // file that no longer decodes is skipped and named instead of failing the run mid-way.
        const std::vector<std::string> changed =
            data::changed_image_files({opened->train.get(), opened->validation.get(), opened->test.get()});
        if (!changed.empty()) {
          message(std::to_string(changed.size()) + " file(s) changed since the project's index of the folder was stored (" +
                  changed.front() + (changed.size() > 1 ? ", ..." : "") + "): reading the folder again");
          source.rescan = true;
          opened = data::open_dataset(source);
        }
      }
      message(opened->description());
      for (const std::string& note : opened->notes) message(note);
      // The preprocessing fitted on the data, kept with the run for Predict (run_predictor.h).
      if (project && !resuming && (opened->images || opened->table))
        project->set_run_preprocessing(record, preprocessing_json(*opened));
      for (const std::string& f : opened->skipped) message("skipped " + f);
      k = opened->regression ? 1 : static_cast<int64_t>(opened->classes.size());
      const graph::SymShape sample(opened->sample_shape.begin(), opened->sample_shape.end());
      std::vector<std::string> blockers =
          training_blockers(spec_.graph, analysis, c.batch_size, k, sample, dataset_name(spec_.dataset),
                            opened->text ? DType::i64 : DType::f32);
      KILN_CHECK(blockers.empty(), ValueError, "the graph cannot be trained: ", blockers.front());
      train_set = opened->train;
      val_set = opened->validation;
    } else {
      const std::vector<int64_t> classes = spec_.dataset.class_list();
      k = static_cast<int64_t>(classes.size());
      std::vector<std::string> blockers = training_blockers(spec_.graph, analysis, c.batch_size, k);
      KILN_CHECK(blockers.empty(), ValueError, "the graph cannot be trained: ", blockers.front());

      message("loading Fashion-MNIST from " + spec_.dataset.dir);
      std::shared_ptr<const data::Dataset> full = fashion_mnist(spec_.dataset.dir, true);
      if (k < kFashionMnistClasses) {
        full = std::make_shared<data::ClassFilter>(full, classes);
        message("classes " + data::classes_str(classes) + " only, relabelled 0 to " + std::to_string(k - 1) + ": " +
                std::to_string(full->size()) + " training images");
      }
      const int64_t n_train = spec_.dataset.train_size, n_val = spec_.dataset.validation_size;
      KILN_CHECK(n_train + n_val <= full->size(), ValueError, "the dataset settings ask for ", n_train, " training and ",
                 n_val, " validation images, but the training split has ", full->size());
      auto parts = data::random_split(full, {n_train, n_val, full->size() - n_train - n_val}, c.seed);
      train_set = parts[0];
      if (n_val > 0) val_set = parts[1];
    }
    const int64_t n_train = train_set->size(), n_val = val_set ? val_set->size() : 0;
    if (const std::string why = cpu_memory_problem(spec_.graph, analysis, c, device, n_train); !why.empty())
      throw ValueError("the graph cannot be trained on " + device.str() + ": " + why);
    // A continued run must read the data it started on: the preprocessing fitted on it (an image
    // folder's file list, a table's categories and standardization) and, below, the number of
    // training samples, which every checkpoint keeps (TrainerOptions::run_settings).
    if (resuming && opened && (opened->images || opened->table)) {
      const std::string stored = project->run_preprocessing(record);
      KILN_CHECK(stored.empty() || stored == preprocessing_json(*opened), ValueError, dataset_name(spec_.dataset),
                 " changed since run ", record, " started (its files, rows or values differ from those its preprocessing was ",
                 "fitted on); continuing would train the rest of the run on other data: start a new run instead");
    }

    data::DataLoader::Options lo;
    lo.batch_size = c.batch_size;
    lo.shuffle = true;
    lo.seed = c.seed;
    if (opened && opened->images) lo.num_workers = 2;  // decoding and augmentation off the training thread
    data::DataLoader train_loader(train_set, lo);
    std::unique_ptr<data::DataLoader> val_loader;
    if (val_set)
      val_loader = std::make_unique<data::DataLoader>(
          val_set, data::DataLoader::Options{.batch_size = 256, .num_workers = lo.num_workers});

    manual_seed(c.seed);
    auto model = std::make_shared<graph::GraphModule>(spec_.graph);
    model->to(device);
    // Only the trainable nodes' parameters (frozen ones keep their weights; GraphModule also
    // keeps their batch norms in eval mode).
    const std::vector<Tensor> params = model->trainable_parameters();
    int64_t trained = 0;
    for (const Tensor& p : params) trained += p.numel();
    auto optimizer = optim::make_optimizer(c.optimizer_config(), params);
    train::TrainerOptions to;
    to.run_settings = {{"training_samples", std::to_string(n_train)}};
    to.epochs = c.epochs;
    to.num_classes = k;
    to.device = device;
    const std::string checkpoint_dir = spec_.work_dir + "/checkpoint";
    std::shared_ptr<train::Trainer> trainer;
    const int64_t batches = train_loader.size();
    if (project && !spec_.work_dir.empty()) {
      to.checkpoint_dir = checkpoint_dir;
      to.on_checkpoint = [&](const train::EpochEnd& e) {
        commit_metrics(*trainer);  // Note [Metrics before a checkpoint]
        // A regression run (mse_loss, no accuracy) ranks its epochs by validation loss, lowest best.
        project->add_epoch_checkpoint(record, e.epoch + 1, checkpoint_dir,
                                      opened && opened->regression ? -e.val_loss : e.val_accuracy, trainer->step());
        result_.checkpoint_epoch = e.epoch + 1;
      };
      // Mid-epoch checkpoints (TrainingConfig::checkpoint_minutes / _steps) and one at a Stop, so that
      // Resume continues a killed or stopped run at the next batch of the same order.
      to.checkpoint_every_steps = c.checkpoint_steps;
      to.checkpoint_every_seconds = c.checkpoint_steps > 0 ? 0 : 60 * c.checkpoint_minutes;
      to.checkpoint_on_cancel = true;
      to.run_started = started_;  // the job's clock, before a continued run's seconds are added to it
      to.on_mid_epoch_checkpoint = [&](const train::CheckpointSaved& saved) {
        commit_metrics(*trainer);
        project->add_mid_epoch_checkpoint(record, saved.epoch, saved.batch, saved.step, checkpoint_dir);
        message("checkpoint stored in the project at step " + std::to_string(saved.step) + " (batch " +
                std::to_string(saved.batch) + " of " + std::to_string(batches) + ", epoch " +
                std::to_string(saved.epoch + 1) + "); Resume Run continues from it");
      };
    }
    optim::Scheduler scheduler = optim::make_scheduler(c.scheduler_config(train_loader.size()), *optimizer);
    to.scheduler_per_batch = scheduler.per_batch;
    const bool regression = opened && opened->regression;
    auto loss = [regression](const Tensor& output, const Tensor& target) {
      return regression ? nn::functional::mse_loss(output, target) : nn::functional::cross_entropy(output, target);
    };
    trainer = std::make_shared<train::Trainer>(model, optimizer, scheduler.scheduler, loss, to);
    total_steps_ = result_.total_steps = train_loader.size() * c.epochs;
    if (resuming) {
      project->restore_resume_point(record, checkpoint_dir);
      const std::string note = trainer->load_checkpoint(checkpoint_dir);
      if (!note.empty()) message(note);
      project->reopen_run(record, trainer->step(), trainer->epoch());
      // The run's clock goes on (StepMetric::time_s, the final seconds): set before the writer opens.
      resumed_seconds_ = result_.resumed_seconds = trainer->resumed_seconds();
      started_ -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(result_.resumed_seconds));
      open_writer(record);
      const int64_t b = trainer->batch_in_epoch();
      message("continuing run " + std::to_string(record) +
              (b == batches ? " after step " + std::to_string(trainer->step()) + " (the last batch of epoch " +
                                  std::to_string(trainer->epoch() + 1) + ": its validation and checkpoint)"
               : b > 0      ? " at step " + std::to_string(trainer->step() + 1) + " (batch " + std::to_string(b + 1) +
                                  " of epoch " + std::to_string(trainer->epoch() + 1) + ")"
                            : " at step " + std::to_string(trainer->step() + 1) + " (after epoch " +
                                  std::to_string(trainer->epoch()) + ")"));
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (paused_) trainer->pause();
      if (cancelled_) trainer->cancel();
      trainer_ = trainer;
    }
    std::ostringstream os;
    const int64_t frozen = model->analysis().total_parameters - trained;
    os << "training " << trained << " parameters" << (frozen > 0 ? " (" + std::to_string(frozen) + " frozen)" : "")
       << " on " << device.str() << ": " << n_train
       << (opened && opened->table ? " rows (" : opened && opened->text ? " texts (" : " images (") << n_val
       << " for validation), " << c.epochs << " epoch(s) of " << train_loader.size()
       << " steps";
    message(os.str());
    trainer->fit(train_loader, val_loader.get());
    result_.cancelled = trainer->cancelled();

    if (result_.checkpoint_epoch > 0)
      message(std::string("checkpoints stored in the project: the latest and the best epoch by validation ") +
              (opened && opened->regression ? "loss" : "accuracy"));
    std::error_code ec;
    std::filesystem::remove_all(checkpoint_dir, ec);
    if (!result_.cancelled && spec_.test_size > 0) {
      if (opened && opened->regression) evaluate_regression(*model, device, *opened);
      else if (opened) evaluate_opened(*model, device, *opened);
      else evaluate(*model, device);
      if (project && result_.evaluated) project->set_evaluation(record, result_.evaluation);
    }
  } catch (const std::exception& e) {
    result_.error = plain_error(e);
  } catch (...) {
    result_.error = "unknown error";
  }
  done_ = true;
}

std::optional<train::Evaluation> TrainingJob::run_test(nn::Module& model, const Device& device,
                                                      data::DataLoader& loader, int64_t classes, bool regression) {
  train::EvaluateOptions options;
  options.num_classes = classes;
  if (regression) options.loss = [](const Tensor& y, const Tensor& t) { return nn::functional::mse_loss(y, t); };
  options.device = device;
  options.keep_predictions = true;
  test_batches_ = loader.size();
  // Before each batch: count it (the Studio's progress), hold while paused, end on Stop.
  options.should_stop = [this] {
    ++test_started_;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (cancelled_) return true;
        if (!paused_) return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  train::Evaluation e = train::evaluate(model, loader, options);
  if (e.stopped) {  // stopped during the test pass: the run ends as stopped, without an evaluation
    result_.cancelled = true;
    return std::nullopt;
  }
  return e;
}

void TrainingJob::evaluate_opened(nn::Module& model, const Device& device, const data::OpenedDataset& d) {
  const auto k = static_cast<int64_t>(d.classes.size());
  int64_t n = std::min(spec_.test_size, d.test->size());
  message("evaluating on " + std::to_string(n) + (n < d.test->size() ? " of the " + std::to_string(d.test->size()) : std::string()) +
          (d.table ? " test rows" : d.text ? " test texts" : " test images"));
  std::vector<int64_t> first(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) first[static_cast<size_t>(i)] = i;
  data::DataLoader loader(std::make_shared<data::Subset>(d.test, first),
                          data::DataLoader::Options{.batch_size = 256, .num_workers = d.images ? 2 : 0});
  const std::optional<train::Evaluation> tested = run_test(model, device, loader, k);
  if (!tested) return;
  const train::Evaluation& e = *tested;
  projects::Evaluation& ev = result_.evaluation;
  if (d.images) {
    // Grey thumbnails of one size (the model's, at most 64 on its longer side), nearest neighbour.
    const int64_t h = d.sample_shape[1], w = d.sample_shape[2], longer = std::max(h, w);
    const int64_t th = std::max<int64_t>(1, longer > 64 ? h * 64 / longer : h), tw = std::max<int64_t>(1, longer > 64 ? w * 64 / longer : w);
    ev.image_height = static_cast<int>(th), ev.image_width = static_cast<int>(tw);
    for (size_t i = 0; i < e.predictions.size() && ev.misclassified.size() < kMaxMisclassified; ++i) {
      if (e.predictions[i] == e.targets[i]) continue;
      const data::Thumbnail t = data::image_thumbnail(*d.test, static_cast<int64_t>(i), longer);
      if (t.pixels.empty()) continue;
      for (int64_t y = 0; y < th; ++y)
        for (int64_t x = 0; x < tw; ++x) {
          const size_t at = static_cast<size_t>(((y * t.height / th) * t.width + x * t.width / tw) * t.channels);
          const double v = t.channels == 3 ? 0.299 * t.pixels[at] + 0.587 * t.pixels[at + 1] + 0.114 * t.pixels[at + 2]
                                           : t.pixels[at];
          ev.images.push_back(static_cast<uint8_t>(std::min(255.0, v + 0.5)));
        }
      ev.misclassified.push_back({static_cast<int64_t>(i), static_cast<int>(e.targets[i]), static_cast<int>(e.predictions[i])});
    }
    for (int64_t i = 0; i < d.test->size(); ++i) result_.test_files.push_back(data::image_sample_path(*d.test, i));
  } else {
    if (d.text) {  // what a misclassified text said and which tokens the model saw
      const data::TextDataset& test = *d.text->test;
      for (int64_t i = 0; i < n; ++i) {
        const data::TextSample& s = test.index().samples[static_cast<size_t>(test.positions()[static_cast<size_t>(i)])];
        std::string tokens;
        const std::vector<int64_t>& ids = test.ids(i);
        for (size_t t = 0; t < std::min<size_t>(ids.size(), 32); ++t) {
          const std::string piece = test.tokenizer().piece(ids[t]);
          if (t) tokens += ' ';
          tokens += piece.find_first_not_of(" \t\r\n") == std::string::npos ? std::string("\u2423")  // a blank piece as U+2423
                                                                            : data::text_preview(piece, 40);
        }
        if (ids.size() > 32) tokens += " …";
        ev.texts.push_back({s.origin, data::text_preview(s.text, 200), tokens});
      }
    }
    for (size_t i = 0; i < e.predictions.size() && ev.misclassified.size() < kMaxMisclassified; ++i)
      if (e.predictions[i] != e.targets[i])
        ev.misclassified.push_back({static_cast<int64_t>(i), static_cast<int>(e.targets[i]), static_cast<int>(e.predictions[i])});
  }
  for (size_t i = 0; i < e.predictions.size(); ++i)
    ev.predictions.push_back({static_cast<int32_t>(i), static_cast<int32_t>(e.targets[i]), static_cast<int32_t>(e.predictions[i]),
                              e.probabilities[i]});
  ev.count = e.metrics.count();
  ev.loss = e.metrics.loss();
  ev.accuracy = e.metrics.accuracy();
  ev.confusion = e.metrics.confusion();
  ev.class_names = d.classes;
  for (std::string& name : ev.class_names) std::replace(name.begin(), name.end(), '\n', ' ');
  result_.evaluated = true;
}

void TrainingJob::evaluate_regression(nn::Module& model, const Device& device, const data::OpenedDataset& d) {
  const int64_t n = std::min(spec_.test_size, d.test->size());
  message("evaluating on " + std::to_string(n) + (n < d.test->size() ? " of the " + std::to_string(d.test->size()) : std::string()) +
          " test rows");
  std::vector<int64_t> first(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) first[static_cast<size_t>(i)] = i;
  data::DataLoader loader(std::make_shared<data::Subset>(d.test, first), data::DataLoader::Options{.batch_size = 256});
  const std::optional<train::Evaluation> tested = run_test(model, device, loader, 1, true);
  if (!tested || tested->actual.empty()) return;
  result_.predicted = tested->outputs;
  result_.actual = tested->actual;
  const train::RegressionMetrics m = train::regression_metrics(result_.predicted, result_.actual);
  result_.regression = m;
  projects::Evaluation& ev = result_.evaluation;  // stored with the run: the scatter of a reopened run
  ev.count = m.count;
  ev.loss = tested->metrics.loss();
  ev.accuracy = std::nan("");
  ev.target = d.table->schema.label;
  std::replace(ev.target.begin(), ev.target.end(), '\n', ' ');
  for (size_t i = 0; i < result_.actual.size(); ++i) ev.regression.push_back({result_.actual[i], result_.predicted[i]});
  result_.evaluated = true;
}

void TrainingJob::evaluate(nn::Module& model, const Device& device) {
  auto test = fashion_mnist(spec_.dataset.dir, false);
  const std::vector<int64_t> classes = spec_.dataset.class_list();
  const auto k = static_cast<int64_t>(classes.size());
  std::shared_ptr<const data::ClassFilter> filtered;
  if (k < kFashionMnistClasses) filtered = std::make_shared<data::ClassFilter>(test, classes);
  const int64_t available = filtered ? filtered->size() : test->size();
  int64_t n = std::min(spec_.test_size, available);
  if (spec_.dataset.test_size > 0) n = std::min(n, spec_.dataset.test_size);
  message("evaluating on " + std::to_string(n) +
          (n < available ? " of the " + std::to_string(available) + " (seed " + std::to_string(spec_.dataset.test_seed) + ")"
                         : std::string()) +
          " test images");
  // source[i]: the index in Fashion-MNIST's test split of evaluated sample i.
  // A seeded random subset (the same seed, the same images), ascending.
  const std::vector<int64_t> chosen = test_subset_indices(available, n, spec_.dataset.test_seed);
  std::vector<int64_t> source(chosen.size());
  for (size_t i = 0; i < chosen.size(); ++i) source[i] = filtered ? filtered->source_index(chosen[i]) : chosen[i];
  std::shared_ptr<const data::Dataset> from = filtered ? std::shared_ptr<const data::Dataset>(filtered) : test;
  auto subset = std::make_shared<data::Subset>(from, chosen);
  data::DataLoader loader(subset, data::DataLoader::Options{.batch_size = 256});
  const std::optional<train::Evaluation> tested = run_test(model, device, loader, k);
  if (!tested) return;
  const train::Evaluation& e = *tested;
  // The first kMaxMisclassified misclassified images; prediction i is test image source[i].
  projects::Evaluation& ev = result_.evaluation;
  const auto bytes = test->images().contiguous().to_vector<uint8_t>();
  for (size_t i = 0; i < e.predictions.size() && ev.misclassified.size() < kMaxMisclassified; ++i) {
    if (e.predictions[i] == e.targets[i]) continue;
    const size_t at = static_cast<size_t>(source[i]) * 28 * 28;
    ev.images.insert(ev.images.end(), bytes.begin() + at, bytes.begin() + at + 28 * 28);
    ev.misclassified.push_back({source[i], static_cast<int>(e.targets[i]), static_cast<int>(e.predictions[i])});
  }
  ev.predictions.reserve(e.predictions.size());
  for (size_t i = 0; i < e.predictions.size(); ++i)
    ev.predictions.push_back({static_cast<int32_t>(source[i]), static_cast<int32_t>(e.targets[i]),
                              static_cast<int32_t>(e.predictions[i]), e.probabilities[i]});
  ev.count = e.metrics.count();
  ev.loss = e.metrics.loss();
  ev.accuracy = e.metrics.accuracy();
  ev.confusion = e.metrics.confusion();
  ev.image_height = ev.image_width = 28;
  for (int64_t c : classes) ev.class_names.emplace_back(data::FashionMNIST::kClassNames[static_cast<size_t>(c)]);
  result_.evaluated = true;
}

}  // namespace kiln::studio
