#include "engine/train/trainer.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>
#include <vector>

#include "engine/core/async_read.h"
#include "engine/core/grad_mode.h"
#include "engine/core/random.h"
#include "engine/core/registry.h"
#include "engine/io/checkpoint.h"
#include "engine/train/captured_step.h"

namespace kiln::train {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The paths ("source.path") of the values that differ between two JSON objects, nested objects
// entered, into `out`.
void differing_keys(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, value] : a.items()) {
    const std::string path = prefix + key;
    if (!b.contains(key)) out.push_back(path);
    else if (value.is_object() && b[key].is_object()) differing_keys(value, b[key], path + ".", out);
    else if (value != b[key]) out.push_back(path);
  }
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) out.push_back(prefix + key);
}

// Why checkpoint `dir`'s run setting `key` (`saved`) is not this run's (`now`), in one line. A
// setting that is a JSON object (a dataset's description, as images.json) is not shown whole: only
// the keys that differ, and when only its file list's fingerprint does, that its files changed.
std::string setting_mismatch(const std::string& dir, const std::string& key, const std::string& saved, const std::string& now) {
  const nlohmann::json a = nlohmann::json::parse(saved, nullptr, false), b = nlohmann::json::parse(now, nullptr, false);
  if (!a.is_object() || !b.is_object())
    return "checkpoint " + dir + " was made with " + key + " = " + saved + ", not " + now +
           "; resume with the same settings, or start a new run";
  std::vector<std::string> keys;
  differing_keys(a, b, "", keys);
  if (keys == std::vector<std::string>{"fingerprint"})
    return (key == "images" ? std::string("the image folder's files") : "the files of the run's " + key) +
           " changed since the run started (fingerprint " + a["fingerprint"].dump() + ", now " + b["fingerprint"].dump() +
           ", checkpoint " + dir + "); resume on the same files, or start a new run";
  std::string what;
  for (const std::string& k : keys) {
    std::string pointer = "/" + k;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const nlohmann::json::json_pointer at(pointer);
    const std::string was = a.contains(at) ? a[at].dump() : "none", is = b.contains(at) ? b[at].dump() : "none";
    what += (what.empty() ? "'" : ", '") + k + "'" + (was.size() + is.size() <= 80 ? " (was " + was + ", now " + is + ")" : "");
  }
  return "checkpoint " + dir + " was made with other " + key + " settings: " + what +
         " differ; resume with the same settings, or start a new run";
}

// A step whose loss and logits are on their way to the host: Trainer::fit reads them once the
// next step is enqueued, so that the device does not idle while the host reads them, updates
// the metrics and prepares the next batch (on the CPU the values are there at once).
struct PendingStep {
  AsyncRead loss, logits;
  Tensor target;  // the batch's targets as the loader gave them (host)
  int64_t batch = 0, step = 0;
  double lr = 0;
};
}  // namespace

Trainer::Trainer(std::shared_ptr<nn::Module> model, std::shared_ptr<optim::Optimizer> optimizer,
                 std::shared_ptr<optim::LRScheduler> scheduler, LossFn loss, TrainerOptions options)
    : model_(std::move(model)), optimizer_(std::move(optimizer)), scheduler_(std::move(scheduler)),
      loss_(std::move(loss)), options_(std::move(options)) {
  KILN_CHECK(model_ && optimizer_ && loss_, ValueError, "Trainer: model, optimizer and loss are required");
  KILN_CHECK(options_.epochs >= 0, ValueError, "Trainer: epochs must be non-negative, got ", options_.epochs);
}

void Trainer::cancel() {
  {
    std::lock_guard<std::mutex> lock(pause_mutex_);
    cancelled_ = true;
  }
  pause_cv_.notify_all();
}

void Trainer::pause() {
  std::lock_guard<std::mutex> lock(pause_mutex_);
  paused_ = true;
}

void Trainer::resume() {
  {
    std::lock_guard<std::mutex> lock(pause_mutex_);
    paused_ = false;
  }
  pause_cv_.notify_all();
}

double Trainer::wait_while_paused() {
  if (!paused_) return 0;
  auto start = Clock::now();
  std::unique_lock<std::mutex> lock(pause_mutex_);
  pause_cv_.wait(lock, [&] { return !paused_ || cancelled_; });
  return seconds_since(start);
}

void Trainer::fit(data::DataLoader& train, data::DataLoader* validation) {
  fit_started_ = options_.run_started ? *options_.run_started : Clock::now();
  try {
    const int64_t batches = train.size();
    const int64_t total_batches = batches * options_.epochs;
    world_size_ = train.options().world_size;
    KILN_CHECK(resume_batch_ == 0 || resume_world_size_ == world_size_, ValueError, "the checkpoint was taken after ",
               resume_batch_, " batches of epoch ", epoch_ + 1, " on ", resume_world_size_, " rank(s), and this run has ",
               world_size_, ": resume it on ", resume_world_size_, ", or from a checkpoint taken at an epoch's end");
    // The captured step (TrainerOptions::cuda_graph) and the fixed tensors it reads and writes.
    std::optional<CapturedStep> captured;
    std::string graph_note = "turned off";
    if (options_.cuda_graph && options_.grad_scaler)
      graph_note = "f16 loss scaling reads the gradients' finite check back every step";
    else if (options_.cuda_graph)
      captured.emplace(options_.device, *optimizer_);
    Tensor x_static, y_static, static_logits, static_loss;
    auto last_checkpoint = Clock::now();
    int64_t checkpoint_step = -1;  // of the last mid-epoch checkpoint: a Stop right after it saves none again
    while (epoch_ < options_.epochs && !cancelled_) {
      model_->train();
      ClassificationMetrics metrics(options_.num_classes, options_.top_k);
      double epoch_lr = optimizer_->lr();
      auto epoch_start = Clock::now();
      int64_t batch_index = 0;
      if (resume_batch_ > 0) {  // a mid-epoch checkpoint: the rest of its epoch, in the same order
        batch_index = resume_batch_;
        metrics.load_state_dict(resume_metrics_);
        epoch_lr = resume_epoch_lr_;
        const std::chrono::duration<double> done_seconds(resume_epoch_seconds_);
        epoch_start -= std::chrono::duration_cast<Clock::duration>(done_seconds);
        resume_batch_ = 0;
      }
      // The last step's loss and logits, read after the next step is enqueued (or before a
      // pause, a checkpoint and the epoch's end): its NaN check, metrics and BatchEnd.
      std::optional<PendingStep> pending;
      auto finish = [&](PendingStep& p) {
        const double loss_value = p.loss.wait().item<double>();
        if (!std::isfinite(loss_value)) {
          std::ostringstream os;
          os << "training stopped: " << kNonFiniteLossWords << loss_value << " at epoch " << epoch_ + 1 << ", step "
             << p.step << " (batch " << p.batch << " of " << batches << ") with learning rate " << p.lr
             << "; try a lower learning rate (e.g. " << p.lr / 10 << ")";
          throw NonFiniteLossError(os.str());
        }
        const int64_t count_before = metrics.count(), correct_before = metrics.correct();
        metrics.update(p.logits.wait(), p.target, loss_value);
        BatchEnd e;
        e.epoch = epoch_;
        e.step = p.step;
        e.batch = p.batch;
        e.batches_per_epoch = batches;
        e.loss = loss_value;
        e.accuracy = static_cast<double>(metrics.correct() - correct_before) /
                     static_cast<double>(std::max<int64_t>(metrics.count() - count_before, 1));
        e.lr = p.lr;
        double elapsed = seconds_since(epoch_start);
        e.samples_per_second = static_cast<double>(metrics.count()) / std::max(elapsed, 1e-9);
        int64_t done = static_cast<int64_t>(epoch_) * batches + p.batch;
        double per_batch = (train_seconds_ + elapsed) / static_cast<double>(std::max<int64_t>(done, 1));
        e.eta_seconds = per_batch * static_cast<double>(total_batches - done);
        events_.push(e);
      };
      train.set_epoch(epoch_, batch_index);
      while (!cancelled_) {
        if (pending && paused_) {  // the step before a pause is shown while paused
          finish(*pending);
          pending.reset();
        }
        // Paused time is left out of the epoch's clock (images/s, ETA, seconds).
        const std::chrono::duration<double> paused_seconds(wait_while_paused());
        const auto paused = std::chrono::duration_cast<Clock::duration>(paused_seconds);
        epoch_start += paused;
        last_checkpoint += paused;
        if (cancelled_) break;
        std::optional<data::Batch> batch = train.next();
        if (!batch) break;
        ++batch_index;
        Tensor x = batch->input.to(options_.device), y = batch->target.to(options_.device);
        const double lr = optimizer_->lr();
        // One eager step on (xs, ys); nothing is read back (the loss is read a step late).
        auto train_step = [&](const Tensor& xs, const Tensor& ys, Tensor& logits, Tensor& loss) {
          optimizer_->zero_grad();
          logits = model_->forward(xs);
          loss = loss_(logits, ys);
          auto backward = [&](const Tensor& l) { options_.backward ? options_.backward(l) : l.backward(); };
          if (options_.grad_scaler) {
            backward(options_.grad_scaler->scale(loss));
            options_.grad_scaler->step(*optimizer_);
          } else {
            backward(loss);
            optimizer_->step();
          }
        };
        Tensor logits, loss;
        const bool fixed_shape = !x_static.defined() || (x.shape() == x_static.shape() && y.shape() == y_static.shape());
        if (captured && !captured->eager_for_good() && fixed_shape) {
          if (!x_static.defined()) {  // the full batch's shape: the first batch's
            x_static = Tensor::empty(x.shape(), x.dtype(), options_.device);
            y_static = Tensor::empty(y.shape(), y.dtype(), options_.device);
          }
          x_static.copy_(x);
          y_static.copy_(y);
          captured->run([&] { train_step(x_static, y_static, static_logits, static_loss); });
          logits = static_logits, loss = static_loss;  // rewritten by each replay
        } else {
          train_step(x, y, logits, loss);
        }
        ++step_;
        if (scheduler_ && options_.scheduler_per_batch) scheduler_->step();
        // Read in stream order before the next step rewrites them, waited for after it is enqueued.
        PendingStep done{AsyncRead(loss), AsyncRead(logits.detach()), batch->target, batch_index, step_, lr};
        if (pending) finish(*pending);
        pending = std::move(done);
        // A mid-epoch checkpoint (TrainerOptions::checkpoint_every_steps / _seconds).
        const bool every_steps = options_.checkpoint_every_steps > 0 && step_ % options_.checkpoint_every_steps == 0;
        const bool every_seconds = options_.checkpoint_every_seconds > 0 &&
                                   seconds_since(last_checkpoint) >= options_.checkpoint_every_seconds;
        if (!options_.checkpoint_dir.empty() && batch_index < batches && (every_steps || every_seconds)) {
          finish(*pending);  // the checkpoint's metrics count this step
          pending.reset();
          save_mid_epoch(batch_index, metrics, epoch_lr, seconds_since(epoch_start));
          last_checkpoint = Clock::now();
          checkpoint_step = step_;
        }
      }
      if (pending) finish(*pending);
      double epoch_seconds = seconds_since(epoch_start);
      if (cancelled_ && options_.checkpoint_on_cancel && batch_index > 0 && checkpoint_step != step_)
        save_mid_epoch(batch_index, metrics, epoch_lr, epoch_seconds);
      train_seconds_ += epoch_seconds;
      samples_trained_ += metrics.count();
      if (cancelled_) break;
      ++epoch_;
      if (scheduler_ && !options_.scheduler_per_batch) scheduler_->step();
      EpochEnd end;
      end.epoch = epoch_ - 1;
      end.train_loss = metrics.loss();
      end.train_accuracy = metrics.accuracy();
      end.val_loss = end.val_accuracy = NAN;
      if (validation) {
        ClassificationMetrics v = evaluate(*validation);
        end.val_loss = v.loss();
        end.val_accuracy = v.accuracy();
      }
      end.seconds = epoch_seconds;
      end.samples_per_second = static_cast<double>(metrics.count()) / std::max(epoch_seconds, 1e-9);
      end.lr = epoch_lr;
      events_.push(end);
      if (!options_.checkpoint_dir.empty()) {
        save_checkpoint(options_.checkpoint_dir);
        last_checkpoint = Clock::now();
        if (options_.on_checkpoint) options_.on_checkpoint(end);
        events_.push(CheckpointSaved{epoch_ - 1, options_.checkpoint_dir, 0, step_});
      }
    }
    Finished fin{cancelled_.load(), "", 0, 0, ""};
    fin.cuda_graph = !captured                     ? graph_note
                     : captured->replaying()       ? "replaying"
                     : !captured->note().empty()   ? captured->note()
                                                   : "not recorded: training ended during the eager warm-up steps";
    cuda_graph_note_ = fin.cuda_graph;
    const MemoryStats mem = backend_for(options_.device)->memory_stats();
    fin.peak_allocated_bytes = mem.peak_allocated;
    fin.reserved_bytes = mem.reserved;
    events_.push(fin);
  } catch (const std::exception& e) {
    events_.push(Finished{false, e.what(), 0, 0, ""});
    throw;
  }
}

EvaluateOptions Trainer::evaluate_options() const {
  EvaluateOptions o;
  o.num_classes = options_.num_classes;
  o.top_k = options_.top_k;
  o.device = options_.device;
  o.loss = loss_;
  return o;
}

ClassificationMetrics Trainer::evaluate(data::DataLoader& loader) {
  return train::evaluate(*model_, loader, evaluate_options()).metrics;
}

void Trainer::save_checkpoint(const std::string& dir) const { save_checkpoint_at(dir, 0, nullptr, 0, 0); }

void Trainer::save_mid_epoch(int64_t batch, const ClassificationMetrics& metrics, double epoch_lr, double epoch_seconds) {
  if (options_.checkpoint_dir.empty()) return;
  save_checkpoint_at(options_.checkpoint_dir, batch, &metrics, epoch_lr, epoch_seconds);
  const CheckpointSaved saved{epoch_, options_.checkpoint_dir, batch, step_};
  if (options_.on_mid_epoch_checkpoint) options_.on_mid_epoch_checkpoint(saved);
  events_.push(saved);
}

void Trainer::save_checkpoint_at(const std::string& dir, int64_t batch, const ClassificationMetrics* metrics,
                                 double epoch_lr, double epoch_seconds) const {
  io::Checkpoint c;
  c.model = model_->state_dict();
  optim::OptimizerState opt = optimizer_->state_dict();
  c.optimizer = opt.tensors;
  c.optimizer_scalars = opt.scalars;
  c.trainer_scalars["epoch"] = epoch_;
  c.trainer_scalars["step"] = static_cast<double>(step_);
  c.trainer_scalars["train_seconds"] = train_seconds_;
  c.trainer_scalars["run_seconds"] = resumed_seconds_ + (fit_started_ ? seconds_since(*fit_started_) : 0.0);
  c.trainer_scalars["samples_trained"] = static_cast<double>(samples_trained_);
  c.trainer["generator"] = default_generator().state();
  if (batch > 0) {
    c.trainer_scalars["batch"] = static_cast<double>(batch);
    c.trainer_scalars["world_size"] = world_size_;
    c.trainer_scalars["epoch_lr"] = epoch_lr;
    c.trainer_scalars["epoch_seconds"] = epoch_seconds;
    for (auto& [key, value] : metrics->state_dict()) c.trainer_scalars["epoch_metrics." + key] = value;
  }
  for (auto& [key, value] : options_.run_settings) c.trainer["run." + key] = value;
  if (scheduler_)
    for (auto& [key, value] : scheduler_->state_dict()) c.trainer_scalars["scheduler." + key] = value;
  io::save_checkpoint(dir, c);
}

std::string Trainer::load_checkpoint(const std::string& dir) {
  io::Checkpoint c = io::load_checkpoint(dir);
  for (auto& [key, value] : options_.run_settings) {
    auto saved = c.trainer.find("run." + key);
    KILN_CHECK(saved == c.trainer.end() || saved->second == value, ValueError,
               setting_mismatch(dir, key, saved->second, value));
  }
  model_->load_state_dict(c.model);  // ValueError naming keys/shapes for another model
  optimizer_->load_state_dict({c.optimizer, c.optimizer_scalars});
  auto get = [&](const char* key) -> double {
    auto it = c.trainer_scalars.find(key);
    KILN_CHECK(it != c.trainer_scalars.end(), IoError, "checkpoint ", dir, ": trainer state lacks '", key, "'");
    return it->second;
  };
  epoch_ = static_cast<int>(get("epoch"));
  step_ = static_cast<int64_t>(get("step"));
  train_seconds_ = get("train_seconds");
  samples_trained_ = static_cast<int64_t>(get("samples_trained"));
  auto gen = c.trainer.find("generator");
  KILN_CHECK(gen != c.trainer.end(), IoError, "checkpoint ", dir, ": trainer state lacks the generator state");
  default_generator().set_state(gen->second);
  resume_batch_ = c.trainer_scalars.count("batch") ? static_cast<int64_t>(get("batch")) : 0;
  resume_world_size_ = c.trainer_scalars.count("world_size") ? static_cast<int>(get("world_size")) : 1;
  resume_metrics_.clear();
  if (resume_batch_ > 0) {
    resume_epoch_lr_ = get("epoch_lr");
    resume_epoch_seconds_ = get("epoch_seconds");
    for (auto& [key, value] : c.trainer_scalars)
      if (key.rfind("epoch_metrics.", 0) == 0) resume_metrics_[key.substr(14)] = value;
    KILN_CHECK(resume_metrics_.count("count"), IoError, "checkpoint ", dir, ": trainer state lacks the metrics of the "
               "epoch it was taken in");
  }
  resumed_seconds_ = c.trainer_scalars.count("run_seconds") ? get("run_seconds")
                                                             : train_seconds_ + (resume_batch_ > 0 ? resume_epoch_seconds_ : 0);
  if (scheduler_) {
    std::map<std::string, double> state;
    for (auto& [key, value] : c.trainer_scalars)
      if (key.rfind("scheduler.", 0) == 0) state[key.substr(10)] = value;
    scheduler_->load_state_dict(state);
  }
  return c.note;
}

}  // namespace kiln::train
