// TrainingPanel: the training settings form (validated widgets, scrolling when the panel is
// short), Start / Pause / Stop, and a progress bar with the phase, ETA and images/s, always
// in view below the form. It only edits and shows; the
// TrainingSession (app/studio) runs the training.
#pragma once
#include <QStringList>
#include <QWidget>

#include "widgets/training/training_config.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace kiln::studio {

class TrainingPanel : public QWidget {
  Q_OBJECT
 public:
  enum class State { Idle, Running, Paused, Stopping };
  explicit TrainingPanel(QWidget* parent = nullptr);

  TrainingConfig config() const;
  void setConfig(const TrainingConfig&);  // unknown device names are added to the combo
  // Fills the device combo from kiln::list_devices() (best first; "auto" on top).
  void refreshDevices();

  // Start is enabled only when `reasons` is empty; otherwise its tooltip lists them, and the
  // status line shows the first kShownBlockers (words over kLongWord characters shortened
  // with "…", so the line wraps inside the panel's width) and its tooltip all of them.
  static constexpr int kShownBlockers = 3;
  static constexpr int kMinimumSettingsHeight = 60;  // px of the form shown at least
  static constexpr int kFieldMinimumWidth = 72;      // px a settings field may shrink to
  static constexpr int kLongWord = 40;
  void setStartBlockers(const QStringList& reasons);
  void setState(State);
  State state() const { return state_; }
  // The phase of a run: training batches, validating after an epoch, testing at the end.
  enum class Phase { Training, Validating, Testing };
  // Progress of the run: step of total steps, epoch (1-based) of epochs, images/s, and the
  // phase with its ETA (s; NaN: unknown) and, for Validating / Testing, its fraction done in
  // [0, 1] (the bar shows that phase: "Testing · 40% · ETA 0:45"). While paused the bar
  // says "Paused" and no ETA (the state is set by setState).
  void setProgress(int64_t step, int64_t totalSteps, int epoch, int epochs, double imagesPerSecond, double etaSeconds,
                   Phase phase = Phase::Training, double phaseFraction = 0);
  // The run ended: status "finished" shows 100% "Done"; "stopped" / "failed" show
  // "Stopped at epoch E, step S" / "Failed at epoch E, step S" (the last setProgress) and no ETA.
  void setEnded(const QString& status);
  // Back to before any run (0%, "Ready: press Train." or the blockers), as for another project.
  void clearProgress();
  QString progressText() const;  // the progress bar's text as shown
  void setStatusText(const QString&);  // long words shortened; the full text in the tooltip
  QString statusText() const;

  QPushButton* startButton() const { return start_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* stopButton() const { return stop_; }
  QLabel* statusLabel() const { return status_; }
  QComboBox* deviceCombo() const { return device_; }

 signals:
  void startRequested();
  void pauseRequested(bool pause);  // true: pause, false: resume
  void stopRequested();
  void configChanged();

 private:
  void updateButtons();
  void updateOptimizerFields();

  QComboBox *optimizer_, *scheduler_, *device_;
  QDoubleSpinBox *lr_, *momentum_, *weightDecay_;
  QSpinBox *epochs_, *batchSize_, *seed_;
  QPushButton *start_, *pause_, *stop_;
  QProgressBar* progress_;
  QLabel* status_;
  QStringList blockers_;
  State state_ = State::Idle;
  void showProgressText();
  int64_t lastStep_ = 0, lastTotal_ = 0;
  int lastEpoch_ = 0, lastEpochs_ = 0;
  double lastImagesPerSecond_ = 0, lastEta_ = 0;
  Phase phase_ = Phase::Training;
  bool showingBlockers_ = false;  // status_ shows the blockers (replaced once they are gone)
};

// "1:05:03" / "4:07" for a duration in seconds; "—" when not finite.
QString formatDuration(double seconds);

}  // namespace kiln::studio
