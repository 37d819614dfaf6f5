// TrainingJob: everything one training run does off the UI thread — load the data
// set, build the GraphModule, optimizer and scheduler, Trainer::fit with a checkpoint
// per epoch into the project (its latest and best kept, Project::add_epoch_checkpoint),
// and the evaluation on the test images (stored with Project::set_evaluation). No Qt: the
// TrainingSession (training_session.h) runs it on a QThread and polls it.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/data/dataloader.h"
#include "engine/data/dataset_source.h"
#include "engine/graph/analysis.h"
#include "engine/train/evaluate.h"
#include "engine/train/regression_metrics.h"
#include "engine/graph/graph.h"
#include "engine/train/trainer.h"
#include "projects/project.h"
#include "widgets/project/dataset_settings.h"
#include "widgets/training/training_config.h"

namespace kiln::studio {

// Fashion-MNIST samples: f32 [1, 28, 28], 10 classes.
inline const graph::SymShape kFashionMnistImageShape = {1, 28, 28};
inline constexpr int64_t kFashionMnistClasses = 10;

// Why `g` cannot be trained on Fashion-MNIST, one plain sentence per problem: the
// analysis problems (with node names), no or several Input/Output nodes, an Input whose
// per-sample shape is not [1, 28, 28] ("the dataset's images are [1, 28, 28] but the
// graph's Input 'x' expects [3, 32, 32]"), an Input with a fixed batch (an imported model's
// [1, 1, 28, 28]: "... fixes the batch at 1, but training takes batches of 128 images ...";
// batch_size: the run's, 0 when not known), an Output that is not [N, num_classes] (10, or
// the k classes of the dataset's class filter, DatasetSettings::classes), every layer with
// parameters frozen (Node::trainable). Empty: OK.
// Another dataset (an image folder, a table, texts) gives its own per-sample `sample` shape ([C, H, W],
// [features], [max_length]) and `data` name ("the image folder 'pets'"); an empty `sample` (the
// dataset is not read yet) leaves the Input and Output checks out. `input_dtype`: the samples'
// element type (i64 token ids for texts), which the Input must have.
std::vector<std::string> training_blockers(const graph::Graph& g, const graph::Analysis& a, int64_t batch_size = 0,
                                           int64_t num_classes = kFashionMnistClasses,
                                           const graph::SymShape& sample = kFashionMnistImageShape,
                                           const std::string& data = "Fashion-MNIST", DType input_dtype = DType::f32);
// The same problems with the node each one is about (-1: the graph), in the same order;
// those of the analysis are a.problems' own (message without the node name).
std::vector<graph::Problem> training_problems(const graph::Graph& g, const graph::Analysis& a, int64_t batch_size = 0,
                                              int64_t num_classes = kFashionMnistClasses,
                                              const graph::SymShape& sample = kFashionMnistImageShape,
                                              const std::string& data = "Fashion-MNIST", DType input_dtype = DType::f32);

// Why training `g` with config `c` on `device` would not fit in this machine's memory: the
// analyzer's training estimate (engine/graph/footprint.h, Note [Training memory estimate]) at the
// run's batch size and optimizer, in f32, is more than the physical memory (sysconf), so the run
// would swap or be killed (a 1000-class CNN on 500-pixel photos). `samples`: the training samples
// when known (> 0), the largest batch there can be. "" when it fits, when the memory is unknown,
// or off the CPU (a GPU's memory is the analyzer's warning, not a blocker).
std::string cpu_memory_problem(const graph::Graph& g, const graph::Analysis& a, const TrainingConfig& c,
                               const Device& device, int64_t samples = 0);

struct JobSpec {
  graph::Graph graph;
  TrainingConfig config;
  DatasetSettings dataset;
  // Test images evaluated at the end: all of the test split (of dataset.classes), or
  // test_subset_indices(available, n, dataset.test_seed) for n = min(test_size,
  // dataset.test_size when that is set (> 0)).
  int64_t test_size = 10000;
  // The project the run is recorded in. The job writes, through its own connection:
  // `graph` as a new graph version when graph_version is 0 (its weights in the project's
  // blobs), the settings (key ->
  // JSON), the run (begin_run with `run_config`), its metrics (metrics_writer()), a
  // checkpoint per epoch and the evaluation. "" = record nothing.
  std::string project_path;
  int64_t graph_version = 0;
  std::vector<std::pair<std::string, std::string>> settings;
  projects::RunConfig run_config;
  std::string work_dir;         // scratch directory for the checkpoint files
  int threads = 0;              // OpenMP threads for the kernels (0 = default)
  // An image folder is scanned and verified again instead of taken from the project's stored
  // file index. Without it, a stored index is still checked file by file (size and modification
  // time, a stat each) and the folder read again when a file changed in place since it was stored
  // (image_index_store.h Note [What the folder check misses]): an undecodable file is then
  // skipped and named, as in a first reading, instead of failing the run.
  bool rescan = false;
  // Continue this stopped, interrupted or failed run of the project (Project::why_not_resumable) from its
  // newest checkpoint instead of recording a new one: graph, config and dataset must be the run's
  // own (TrainingSession::resume); run_config and settings are not used. The run is reopened
  // (Project::reopen_run) only once the checkpoint is loaded. 0: a new run.
  int64_t resume_run = 0;
};

struct JobResult {
  bool cancelled = false;
  std::string error;            // plain-words message of what stopped the run ("" = none)
  std::string device;           // the device it ran on ("cpu")
  int64_t total_steps = 0;      // epochs * batches per epoch
  bool evaluated = false;       // `evaluation` is set
  // Test images: count, loss, accuracy, class names (those of dataset.classes, by new
  // label), confusion, up to kMaxMisclassified misclassified images (28 x 28 grey) and every
  // prediction, with their indices in Fashion-MNIST's test split. Another dataset: its test
  // split's samples, class names and (images) grey thumbnails of at most 64 x 64; (texts)
  // each evaluated text's origin, first 200 code points on one line and first 32 tokens.
  projects::Evaluation evaluation;
  std::vector<std::string> test_files;  // an image dataset's test split's files, by index (else empty)
  int checkpoint_epoch = -1;       // last epoch stored with Project::add_epoch_checkpoint (-1: none)
  // A continued run: its seconds before this job, as its checkpoint carried (Trainer::resumed_seconds).
  double resumed_seconds = 0;
  // A regression table (DatasetSettings::task): the test rows' MAE, RMSE and R² (in the label's
  // unit) and each evaluated row's predicted and actual value (also in `evaluation.regression`).
  std::optional<train::RegressionMetrics> regression;
  std::vector<double> predicted, actual;
};

class TrainingJob {
 public:
  static constexpr int kMaxMisclassified = 48;
  explicit TrainingJob(JobSpec spec);
  // Runs the whole job on the calling thread; never throws (errors go to result()).
  void run();

  // Any thread. Applied to the Trainer as soon as it exists.
  void pause(bool on);
  void cancel();
  // Any thread: events from the Trainer and progress messages of the job since the last call.
  // drainEvents also writes the events' step and epoch metrics to the run's MetricsWriter (see
  // Note [Metrics before a checkpoint] in training_job.cpp); a write that fails (disk full ...)
  // is said in *write_error and training goes on.
  std::vector<train::Event> drainEvents(std::string* write_error = nullptr);
  std::vector<std::string> drainMessages();
  int64_t totalSteps() const { return total_steps_; }  // 0 until the data is loaded
  // Any thread: JobResult::resumed_seconds once the checkpoint is loaded (0 before, and for a new run).
  double resumedSeconds() const { return resumed_seconds_; }
  // Any thread: the test pass's batches, the one being evaluated (1-based; 0 before the
  // test pass) and how many; a pause holds the test pass before its next batch.
  int64_t testBatchStarted() const { return test_started_; }
  int64_t testBatches() const { return test_batches_; }
  // Any thread: the run's id and metrics writer once the job has recorded the run (0 / null before).
  int64_t runId() const { return run_; }
  std::shared_ptr<projects::MetricsWriter> metricsWriter();
  bool done() const { return done_; }
  const JobResult& result() const { return result_; }  // valid once done()

 private:
  void message(const std::string&);
  void open_writer(int64_t run);  // the run's MetricsWriter; runId() says `run` from now on
  // The rows of `events` to the writer (INSERT OR REPLACE: written twice changes nothing); caller
  // holds events_mutex_. Errors go to *error (the first kept).
  void write_metrics(const std::vector<train::Event>& events, std::string* error);
  // On fit()'s thread before a checkpoint is stored: the trainer's pending events written and
  // committed, and kept for the next drainEvents.
  void commit_metrics(train::Trainer& trainer);
  void evaluate(nn::Module& model, const Device& device);
  void evaluate_opened(nn::Module& model, const Device& device, const data::OpenedDataset& d);
  void evaluate_regression(nn::Module& model, const Device& device, const data::OpenedDataset& d);
  // Runs train::evaluate on `loader` with the pause/stop hooks (regression: mse_loss, outputs
  // kept); nullopt when stopped.
  std::optional<train::Evaluation> run_test(nn::Module& model, const Device& device, data::DataLoader& loader,
                                            int64_t classes, bool regression = false);

  JobSpec spec_;
  JobResult result_;
  std::mutex mutex_;
  std::shared_ptr<train::Trainer> trainer_;  // guarded by mutex_
  bool paused_ = false, cancelled_ = false;  // guarded by mutex_
  std::vector<std::string> messages_;        // guarded by mutex_
  std::mutex events_mutex_;                  // held while events are drained and their rows written
  std::vector<train::Event> drained_;        // commit_metrics's, for drainEvents; guarded by events_mutex_
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();  // StepMetric::time_s
  std::atomic<int64_t> total_steps_{0};
  std::atomic<double> resumed_seconds_{0};
  std::atomic<int64_t> test_started_{0}, test_batches_{0};
  std::atomic<int64_t> run_{0};
  std::shared_ptr<projects::MetricsWriter> writer_;  // guarded by mutex_
  std::atomic<bool> done_{false};
};

// Turns an engine exception into one plain sentence for the log and message boxes.
std::string plain_error(const std::exception& e);

}  // namespace kiln::studio
