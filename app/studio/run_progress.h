// RunProgress: which phase a training run is in — training, validating (after each epoch,
// when there is a validation split) or testing (after the last epoch, when test images are
// evaluated) — how far that phase is and its own ETA, from the job's events and a clock
// the caller passes in (seconds). Paused time does not count: while paused the ETA stands.
// Training's ETA: its active seconds per step so far (timed from the first batch's end:
// before it the job loads the data) times the steps left. Validation runs
// inside Trainer::fit without events of its own, so its length is estimated: the previous
// validation pass's measured length, or before the first one validation images at
// kInferenceSpeedup x the training throughput. Testing reports its batches (testBatch).
#pragma once
#include <cstdint>
#include <limits>

namespace kiln::studio {

class RunProgress;
const char* phase_name(int phase);  // "starting", "training", "validating", "testing"

class RunProgress {
 public:
  enum class Phase { Starting, Training, Validating, Testing };
  // A forward pass is about a third of a training step (forward + backward, the backward
  // pass costing about twice the forward: Kaplan et al. 2020, "Scaling Laws for Neural
  // Language Models", section 2.1), so evaluation runs at about 3x the training images/s.
  static constexpr double kInferenceSpeedup = 3.0;

  RunProgress(int epochs, int64_t validationImages, int64_t testImages)
      : epochs_(epochs), validationImages_(validationImages), testImages_(testImages) {}

  void setPaused(bool paused, double now);
  // A training batch ended (BatchEnd: 0-based epoch, 1-based global step and batch);
  // the epoch's last batch starts validation when there is a validation split.
  void batchEnded(int epoch, int64_t step, int64_t batch, int64_t batchesPerEpoch, double imagesPerSecond, double now);
  // Validation of `epoch` (0-based) ended; after the last epoch, testing follows when
  // there are test images.
  void epochEnded(int epoch, double now);
  // Test batch `started` (1-based) of `total` begins.
  void testBatch(int64_t started, int64_t total, double now);

  Phase phase() const { return phase_; }
  int epoch() const { return epoch_; }  // 1-based, of the training or validation phase
  double fraction(double now) const;    // of the current phase, in [0, 1]
  // Seconds left in the current phase; NaN when not known yet (Starting, no batch timed).
  double etaSeconds(double now) const;
  double activeSeconds(double now) const;  // since the start, without paused time

 private:
  double phaseSeconds(double now) const { return activeSeconds(now) - phaseStart_; }
  double expectedEvalSeconds(int64_t images) const;
  void enter(Phase p, double now);

  int epochs_;
  int64_t validationImages_, testImages_;
  Phase phase_ = Phase::Starting;
  int epoch_ = 0;
  int64_t step_ = 0, totalSteps_ = 0, testStarted_ = 0, testTotal_ = 0;
  int64_t firstStep_ = 0;        // the step of the first batch seen (its own time is unknown)
  double trainSeconds_ = 0;      // active seconds of the training phases before the current one
  double trainAtLastBatch_ = 0;  // active training seconds when the last batch ended
  double lastBatch_ = 0;         // activeSeconds at the last batch
  double trainImagesPerSecond_ = 0;
  double validationSeconds_ = std::numeric_limits<double>::quiet_NaN();  // the last pass, measured
  double phaseStart_ = 0;        // activeSeconds when the phase began
  bool paused_ = false;
  double pausedAt_ = 0, pausedTotal_ = 0;
};

}  // namespace kiln::studio
