#include "app/studio/run_progress.h"

#include <algorithm>
#include <cmath>

namespace kiln::studio {

const char* phase_name(int phase) {
  static const char* const names[] = {"starting", "training", "validating", "testing"};
  return phase >= 0 && phase < 4 ? names[phase] : "?";
}

void RunProgress::setPaused(bool paused, double now) {
  if (paused == paused_) return;
  if (paused) pausedAt_ = now;
  else pausedTotal_ += now - pausedAt_;
  paused_ = paused;
}

double RunProgress::activeSeconds(double now) const {
  return now - pausedTotal_ - (paused_ ? now - pausedAt_ : 0.0);
}

void RunProgress::enter(Phase p, double now) {
  if (phase_ == Phase::Training) trainSeconds_ += phaseSeconds(now);
  phase_ = p;
  phaseStart_ = activeSeconds(now);
}

void RunProgress::batchEnded(int epoch, int64_t step, int64_t batch, int64_t batchesPerEpoch, double imagesPerSecond,
                             double now) {
  if (phase_ == Phase::Starting) firstStep_ = step;  // the run's first batch: timing starts at its end
  if (phase_ != Phase::Training) enter(Phase::Training, now);
  epoch_ = epoch + 1;
  step_ = step;
  totalSteps_ = batchesPerEpoch * epochs_;
  trainImagesPerSecond_ = imagesPerSecond;
  lastBatch_ = activeSeconds(now);
  trainAtLastBatch_ = trainSeconds_ + phaseSeconds(now);
  if (batch >= batchesPerEpoch && validationImages_ > 0) enter(Phase::Validating, now);
}

void RunProgress::epochEnded(int epoch, double now) {
  if (phase_ == Phase::Validating) validationSeconds_ = phaseSeconds(now);
  if (epoch + 1 >= epochs_ && testImages_ > 0) {
    enter(Phase::Testing, now);
  } else if (phase_ != Phase::Training) {
    enter(Phase::Training, now);
  }
}

void RunProgress::testBatch(int64_t started, int64_t total, double now) {
  if (phase_ != Phase::Testing) enter(Phase::Testing, now);
  testStarted_ = started;
  testTotal_ = total;
}

double RunProgress::expectedEvalSeconds(int64_t images) const {
  if (std::isfinite(validationSeconds_) && validationImages_ > 0)
    return validationSeconds_ * static_cast<double>(images) / static_cast<double>(validationImages_);
  if (trainImagesPerSecond_ <= 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(images) / (kInferenceSpeedup * trainImagesPerSecond_);
}

double RunProgress::fraction(double now) const {
  switch (phase_) {
    case Phase::Starting: return 0;
    case Phase::Training: return totalSteps_ > 0 ? static_cast<double>(step_) / static_cast<double>(totalSteps_) : 0;
    case Phase::Validating: {
      const double expected = expectedEvalSeconds(validationImages_);
      return std::isfinite(expected) && expected > 0 ? std::clamp(phaseSeconds(now) / expected, 0.0, 1.0) : 0;
    }
    case Phase::Testing:
      if (testTotal_ > 0) return std::clamp(static_cast<double>(testStarted_ - 1) / static_cast<double>(testTotal_), 0.0, 1.0);
      return 0;
  }
  return 0;
}

double RunProgress::etaSeconds(double now) const {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (phase_) {
    case Phase::Starting: return nan;
    case Phase::Training: {
      if (step_ <= firstStep_ || totalSteps_ <= 0) return nan;
      const double perStep = trainAtLastBatch_ / static_cast<double>(step_ - firstStep_);
      return std::max(0.0, perStep * static_cast<double>(totalSteps_ - step_) - (activeSeconds(now) - lastBatch_));
    }
    case Phase::Validating: {
      const double expected = expectedEvalSeconds(validationImages_);
      return std::isfinite(expected) ? std::max(0.0, expected - phaseSeconds(now)) : nan;
    }
    case Phase::Testing: {
      const int64_t done = testStarted_ - 1;
      if (done > 0 && testTotal_ > 0)
        return std::max(0.0, phaseSeconds(now) / static_cast<double>(done) * static_cast<double>(testTotal_ - done));
      const double expected = expectedEvalSeconds(testImages_);
      return std::isfinite(expected) ? std::max(0.0, expected - phaseSeconds(now)) : nan;
    }
  }
  return nan;
}

}  // namespace kiln::studio
