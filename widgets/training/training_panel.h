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
class QScrollArea;
class QSpinBox;
class QToolButton;

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
  // status line says how many there are and shows the first, at most kStatusLines lines (words
  // over kLongWord characters shortened with "…", the rest elided), so that the settings keep
  // their fields in view (an imported resnet18's three reasons took 6 lines and left two
  // fields at 1366x768); the status line's tooltip and its Details area list all of them.
  static constexpr int kStatusLines = 2;
  static constexpr int kDetailsLines = 6;  // the Details area's height at most (it scrolls)
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
  // A message in the status line (at most kStatusLines lines, as the reasons above); the
  // full text in its tooltip and Details area.
  void setStatusText(const QString&);
  QString statusText() const;

  QPushButton* startButton() const { return start_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* stopButton() const { return stop_; }
  QLabel* statusLabel() const { return status_; }
  // Shown when the status line is shortened: checked, the Details label below it shows the
  // whole message or every reason (one a line).
  QToolButton* detailsButton() const { return detailsButton_; }
  QLabel* detailsLabel() const { return details_; }
  QComboBox* deviceCombo() const { return device_; }

 signals:
  void startRequested();
  void pauseRequested(bool pause);  // true: pause, false: resume
  void stopRequested();
  void configChanged();

 private:
  void updateButtons();
  void updateOptimizerFields();
  void resizeEvent(QResizeEvent*) override;  // the shortened status line fitted to the new width
  // Shows `text` in the status line fitted to kStatusLines lines; `details` (or text) in full in
  // its tooltip and the Details label. fitStatus() fits it anew to the label's width.
  void showFittedStatus(const QString& text, const QString& details = {});
  void fitStatus();
  void showPlainStatus(const QString& text);  // a short progress line, not fitted

  QComboBox *optimizer_, *scheduler_, *device_;
  QDoubleSpinBox *lr_, *momentum_, *weightDecay_;
  QSpinBox *epochs_, *batchSize_, *seed_;
  QPushButton *start_, *pause_, *stop_;
  QProgressBar* progress_;
  QLabel* status_;
  QToolButton* detailsButton_;
  QLabel* details_;
  QScrollArea* detailsArea_;
  QString statusFull_, statusDetails_;  // the fitted status text in full, and its details
  bool statusFitted_ = false;           // status_ shows statusFull_ fitted (else a progress line)
  QStringList blockers_;
  State state_ = State::Idle;
  void showProgressText();
  int64_t lastStep_ = 0, lastTotal_ = 0;
  int lastEpoch_ = 0, lastEpochs_ = 0;
  double lastImagesPerSecond_ = 0, lastEta_ = 0;
  Phase phase_ = Phase::Training;
  bool showingBlockers_ = false;  // status_ shows the blockers (replaced once they are gone)
  TrainingConfig stored_;  // setConfig's, for the fields without a widget
};

// "1:05:03" / "4:07" for a duration in seconds; "—" when not finite.
QString formatDuration(double seconds);

}  // namespace kiln::studio
