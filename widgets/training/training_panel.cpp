#include "widgets/training/training_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "engine/core/registry.h"
#include "engine/optim/factory.h"
#include "widgets/elide.h"

namespace kiln::studio {

QString formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QString::fromUtf8("\u2014");
  const qint64 s = std::llround(seconds);
  if (s >= 3600) return QString("%1:%2:%3").arg(s / 3600).arg(s / 60 % 60, 2, 10, QChar('0')).arg(s % 60, 2, 10, QChar('0'));
  return QString("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
}

namespace {

// The engine's names (engine/optim/factory.h) as items whose data is the name: those of
// `labels` first, in its order and words, then any other the engine knows under its own name.
void addChoices(QComboBox* combo, const std::vector<std::string>& names,
                std::initializer_list<std::pair<const char*, QString>> labels) {
  for (const auto& [name, label] : labels)
    if (std::find(names.begin(), names.end(), name) != names.end()) combo->addItem(label, QString(name));
  for (const std::string& name : names)
    if (combo->findData(QString::fromStdString(name)) < 0) combo->addItem(QString::fromStdString(name), QString::fromStdString(name));
}

}  // namespace

TrainingPanel::TrainingPanel(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);  // compact: at 1280 x 720 the form shows Epochs to Learning rate
  outer->setSpacing(3);
  // The settings scroll when the dock is short (a laptop screen); the buttons, the progress
  // bar and the status line below them stay in view.
  auto* settings = new QWidget;
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // the form follows the dock's width
  auto* form = new QFormLayout(settings);
  form->setContentsMargins(0, 0, 0, 0);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setVerticalSpacing(2);

  // The fields used most come first: they stay in view when the dock is short (1366 x 768).
  epochs_ = new QSpinBox(settings);
  epochs_->setRange(1, 100000);
  epochs_->setToolTip(tr("Passes over the training images."));
  form->addRow(tr("&Epochs"), epochs_);

  batchSize_ = new QSpinBox(settings);
  batchSize_->setRange(1, 65536);
  batchSize_->setToolTip(tr("Images per optimizer step."));
  form->addRow(tr("&Batch size"), batchSize_);

  optimizer_ = new QComboBox(settings);
  addChoices(optimizer_, optim::optimizer_names(),
             {{"adam", "Adam"}, {"adamw", "AdamW"}, {"sgd", tr("SGD (momentum)")}, {"rmsprop", "RMSprop"}});
  optimizer_->setToolTip(tr("The optimizer that updates the weights (torch.optim names)."));
  form->addRow(tr("&Optimizer"), optimizer_);

  lr_ = new QDoubleSpinBox(settings);
  lr_->setDecimals(6);
  lr_->setRange(1e-6, 10);
  lr_->setSingleStep(1e-4);
  lr_->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
  lr_->setToolTip(tr("Initial learning rate, in (0, 10]. Adam: 0.001; SGD: 0.01 to 0.1."));
  form->addRow(tr("&Learning rate"), lr_);

  scheduler_ = new QComboBox(settings);
  addChoices(scheduler_, optim::scheduler_names(),
             {{"none", tr("Constant")}, {"step", tr("Step (x0.1 after each third of the epochs)")},
              {"cosine", tr("Cosine annealing")}, {"onecycle", tr("One-cycle")}});
  scheduler_->setToolTip(tr("How the learning rate changes during training."));
  form->addRow(tr("&Schedule"), scheduler_);

  momentum_ = new QDoubleSpinBox(settings);
  momentum_->setDecimals(3);
  momentum_->setRange(0, 0.999);
  momentum_->setSingleStep(0.05);
  momentum_->setToolTip(tr("Momentum of SGD and RMSprop, in [0, 1)."));
  form->addRow(tr("&Momentum"), momentum_);

  weightDecay_ = new QDoubleSpinBox(settings);
  weightDecay_->setDecimals(6);
  weightDecay_->setRange(0, 1);
  weightDecay_->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
  weightDecay_->setToolTip(tr("L2 penalty (decoupled for AdamW), >= 0."));
  form->addRow(tr("&Weight decay"), weightDecay_);

  seed_ = new QSpinBox(settings);
  seed_->setRange(0, 2147483647);
  seed_->setToolTip(tr("Seed of the weight initialization, split and shuffle order: the same seed gives the same run on the CPU."));
  form->addRow(tr("S&eed"), seed_);

  device_ = new QComboBox(settings);
  device_->setToolTip(tr("Where training runs; Auto picks the best detected device."));
  form->addRow(tr("&Device"), device_);
  scroll->setWidget(settings);
  scroll->setMinimumHeight(kMinimumSettingsHeight);
  outer->addWidget(scroll, 1);

  auto* buttons = new QHBoxLayout;
  start_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Train"), this);
  pause_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaPause), tr("Pause"), this);
  stop_ = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), tr("Stop"), this);
  pause_->setCheckable(true);
  buttons->addWidget(start_);
  buttons->addWidget(pause_);
  buttons->addWidget(stop_);
  outer->addLayout(buttons);
  connect(start_, &QPushButton::clicked, this, &TrainingPanel::startRequested);
  connect(pause_, &QPushButton::clicked, this, [this](bool checked) { emit pauseRequested(checked); });
  connect(stop_, &QPushButton::clicked, this, &TrainingPanel::stopRequested);

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setFormat("%p%");
  outer->addWidget(progress_);
  status_ = new QLabel(tr("Ready: press Train."), this);
  status_->setTextFormat(Qt::PlainText);  // node names and paths are never markup
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Its width follows the panel's (never the text's); the height follows the wrapped text.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  detailsButton_ = new QToolButton(this);
  detailsButton_->setText(tr("Details"));
  detailsButton_->setCheckable(true);
  detailsButton_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  detailsButton_->setArrowType(Qt::RightArrow);
  detailsButton_->setAutoRaise(true);
  detailsButton_->setToolTip(tr("Show the whole message below"));
  detailsButton_->hide();
  auto* statusRow = new QHBoxLayout;
  statusRow->setContentsMargins(0, 0, 0, 0);
  statusRow->addWidget(status_, 1);
  statusRow->addWidget(detailsButton_, 0, Qt::AlignTop);
  outer->addLayout(statusRow);
  // The whole message, at most kDetailsLines lines tall (it scrolls): open, it takes its
  // height from the settings, which scroll.
  details_ = new QLabel;
  details_->setTextFormat(Qt::PlainText);
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  detailsArea_ = new QScrollArea(this);
  detailsArea_->setWidget(details_);
  detailsArea_->setWidgetResizable(true);
  detailsArea_->setFrameShape(QFrame::NoFrame);
  detailsArea_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  detailsArea_->setMaximumHeight(kDetailsLines * details_->fontMetrics().lineSpacing() + 4);
  detailsArea_->hide();
  outer->addWidget(detailsArea_);
  connect(detailsButton_, &QToolButton::toggled, this, [this](bool on) {
    detailsButton_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    detailsArea_->setVisible(on && !detailsButton_->isHidden());
  });

  // Long choices ("Step (x0.1 after each third of the epochs)", a GPU's name) are elided in
  // the closed combo box, not widening the panel: it fits a 300 px dock.
  // Spin boxes size themselves for their whole range (the seed's 2147483647), combo boxes for
  // their longest choice: they may be narrower, so that the form fits a 300 px dock at 125% scaling without a horizontal scroll.
  for (QWidget* w : std::initializer_list<QWidget*>{optimizer_, scheduler_, device_, lr_, momentum_, weightDecay_,
                                                    epochs_, batchSize_, seed_})
    w->setMinimumWidth(kFieldMinimumWidth);
  for (QComboBox* c : {optimizer_, scheduler_, device_}) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(12);
  }
  refreshDevices();
  setConfig(TrainingConfig{});
  for (QComboBox* c : {optimizer_, scheduler_, device_})
    connect(c, &QComboBox::currentIndexChanged, this, &TrainingPanel::configChanged);
  for (QDoubleSpinBox* s : {lr_, momentum_, weightDecay_})
    connect(s, &QDoubleSpinBox::valueChanged, this, &TrainingPanel::configChanged);
  for (QSpinBox* s : {epochs_, batchSize_, seed_}) connect(s, &QSpinBox::valueChanged, this, &TrainingPanel::configChanged);
  connect(optimizer_, &QComboBox::currentIndexChanged, this, &TrainingPanel::updateOptimizerFields);
  updateButtons();
}

void TrainingPanel::refreshDevices() {
  const QString current = device_->currentData().toString();
  device_->clear();
  device_->addItem(tr("Auto (best detected)"), "auto");
  for (const DeviceInfo& d : list_devices())
    device_->addItem(QString("%1 — %2").arg(QString::fromStdString(d.device.str()), QString::fromStdString(d.name)),
                     QString::fromStdString(d.device.str()));
  const int i = device_->findData(current);
  device_->setCurrentIndex(i >= 0 ? i : 0);
}

TrainingConfig TrainingPanel::config() const {
  TrainingConfig c = stored_;  // the settings the panel has no field for (checkpoint interval)
  c.optimizer = optimizer_->currentData().toString().toStdString();
  c.lr = lr_->value();
  c.momentum = momentum_->value();
  c.weight_decay = weightDecay_->value();
  c.scheduler = scheduler_->currentData().toString().toStdString();
  c.epochs = epochs_->value();
  c.batch_size = batchSize_->value();
  c.seed = static_cast<uint64_t>(seed_->value());
  c.device = device_->currentData().toString().toStdString();
  return c;
}

void TrainingPanel::setConfig(const TrainingConfig& c) {
  stored_ = c;
  auto select = [](QComboBox* box, const std::string& value) {
    int i = box->findData(QString::fromStdString(value));
    if (i < 0) {
      box->addItem(QString::fromStdString(value), QString::fromStdString(value));
      i = box->count() - 1;
    }
    box->setCurrentIndex(i);
  };
  select(optimizer_, c.optimizer);
  select(scheduler_, c.scheduler);
  select(device_, c.device);
  lr_->setValue(c.lr);
  momentum_->setValue(c.momentum);
  weightDecay_->setValue(c.weight_decay);
  epochs_->setValue(c.epochs);
  batchSize_->setValue(c.batch_size);
  seed_->setValue(static_cast<int>(std::min<uint64_t>(c.seed, 2147483647)));
  updateOptimizerFields();
}

void TrainingPanel::updateOptimizerFields() {
  const QString o = optimizer_->currentData().toString();
  momentum_->setEnabled(o == "sgd" || o == "rmsprop");
}

void TrainingPanel::setStartBlockers(const QStringList& reasons) {
  blockers_ = reasons;
  updateButtons();
}

void TrainingPanel::setState(State s) {
  if (state_ == State::Idle && s == State::Running) {  // a new run: no old "Stopped at ..." text
    lastStep_ = 0, lastEpoch_ = 0;
    phase_ = Phase::Training;
    progress_->setValue(0);
    progress_->setFormat("%p%");
  }
  const bool pauseChanged = (state_ == State::Paused) != (s == State::Paused);
  state_ = s;
  if (s == State::Idle) pause_->setChecked(false);
  updateButtons();
  if (pauseChanged && lastStep_ > 0) showProgressText();  // "Paused", no ETA / the ETA again
}

void TrainingPanel::updateButtons() {
  const bool idle = state_ == State::Idle;
  start_->setEnabled(idle && blockers_.isEmpty());
  start_->setToolTip(blockers_.isEmpty() ? tr("Train the graph with these settings")
                                         : tr("Cannot train yet:\n• ") + blockers_.join("\n• "));
  pause_->setEnabled(state_ == State::Running || state_ == State::Paused);
  pause_->setText(state_ == State::Paused ? tr("Resume") : tr("Pause"));
  stop_->setEnabled(state_ == State::Running || state_ == State::Paused);
  for (QWidget* w : std::initializer_list<QWidget*>{optimizer_, lr_, weightDecay_, scheduler_, epochs_, batchSize_, seed_, device_})
    w->setEnabled(idle);
  momentum_->setEnabled(idle && (optimizer_->currentData() == "sgd" || optimizer_->currentData() == "rmsprop"));
  if (idle && !blockers_.isEmpty()) {
    // How many reasons, and the first; all of them in the tooltip and the Details label.
    const QString text = blockers_.size() == 1
                             ? tr("Cannot train yet: %1").arg(blockers_.first())
                             : tr("Cannot train yet (%n reasons): %1", nullptr, int(blockers_.size())).arg(blockers_.first());
    showFittedStatus(text, tr("Cannot train yet:\n• ") + blockers_.join("\n• "));
    showingBlockers_ = true;
  } else if (idle && showingBlockers_) {
    showPlainStatus(tr("Ready: press Train."));
    showingBlockers_ = false;
  }
}

void TrainingPanel::setProgress(int64_t step, int64_t totalSteps, int epoch, int epochs, double imagesPerSecond,
                                double etaSeconds, Phase phase, double phaseFraction) {
  lastStep_ = step, lastTotal_ = totalSteps;
  lastEpoch_ = epoch, lastEpochs_ = epochs;
  lastImagesPerSecond_ = imagesPerSecond;
  lastEta_ = etaSeconds;
  phase_ = phase;
  const double fraction = phase == Phase::Training ? (totalSteps > 0 ? double(step) / double(totalSteps) : 0) : phaseFraction;
  progress_->setValue(static_cast<int>(std::lround(1000 * std::clamp(fraction, 0.0, 1.0))));
  showProgressText();
}

void TrainingPanel::showProgressText() {
  const QString phase = phase_ == Phase::Validating ? tr("Validating epoch %1").arg(lastEpoch_)
                        : phase_ == Phase::Testing  ? tr("Testing")
                                                    : tr("Training");
  if (state_ == State::Paused) {
    progress_->setFormat(tr("Paused · %1 · %p%").arg(phase));
    showPlainStatus(tr("Paused at epoch %1 of %2, step %3 of %4: press Resume.")
                         .arg(lastEpoch_).arg(lastEpochs_).arg(lastStep_).arg(lastTotal_));
    return;
  }
  progress_->setFormat(QString("%1 · %p% · ETA %2").arg(phase, formatDuration(lastEta_)));
  if (phase_ == Phase::Training)
    // One line in a 300 px dock (the phase and ETA are in the bar): two lines hid the
    // Learning rate field at 1280 x 720.
    showPlainStatus(tr("Epoch %1/%2 · step %3/%4 · %5 images/s")
                         .arg(lastEpoch_)
                         .arg(lastEpochs_)
                         .arg(lastStep_)
                         .arg(lastTotal_)
                         .arg(QLocale().toString(lastImagesPerSecond_, 'f', 0)));
  else if (phase_ == Phase::Validating)
    showPlainStatus(tr("Validating after epoch %1 of %2 · ETA %3 (estimated)")
                         .arg(lastEpoch_).arg(lastEpochs_).arg(formatDuration(lastEta_)));
  else
    showPlainStatus(tr("Testing on the test images · ETA %1").arg(formatDuration(lastEta_)));
}

void TrainingPanel::setEnded(const QString& status) {
  if (status == "finished") {
    progress_->setValue(progress_->maximum());
    progress_->setFormat(tr("Done"));
  } else if (status == "stopped") {
    progress_->setFormat(tr("Stopped at epoch %1, step %2").arg(lastEpoch_).arg(lastStep_));
  } else {
    progress_->setFormat(tr("Failed at epoch %1, step %2").arg(lastEpoch_).arg(lastStep_));
  }
}

void TrainingPanel::clearProgress() {
  lastStep_ = 0, lastEpoch_ = 0;
  phase_ = Phase::Training;
  progress_->setValue(0);
  progress_->setFormat("%p%");
  showingBlockers_ = true;  // updateButtons() writes the status anew: the blockers or "Ready"
  updateButtons();
}

QString TrainingPanel::progressText() const { return progress_->text(); }

void TrainingPanel::setStatusText(const QString& text) {
  showFittedStatus(text);
  showingBlockers_ = false;
}

void TrainingPanel::showFittedStatus(const QString& text, const QString& details) {
  statusFull_ = text;
  statusDetails_ = details.isEmpty() ? text : details;
  statusFitted_ = true;
  fitStatus();
}

void TrainingPanel::fitStatus() {
  if (!statusFitted_) return;
  // The status line's width beside the Details button (kept free for it whether shown or not).
  const int width = layout()->contentsRect().width() - detailsButton_->sizeHint().width() - layout()->spacing();
  const QString shown = elideToLines(elideLongWords(statusFull_, kLongWord), status_->font(), width, kStatusLines);
  status_->setText(shown);
  // Shortened (or more to say than it shows): the whole of it behind Details and in the tooltip.
  const bool more = shown != statusFull_ || statusDetails_ != statusFull_;
  status_->setToolTip(more ? statusDetails_ : QString());
  details_->setText(elideLongWords(statusDetails_, kLongWord));
  detailsButton_->setVisible(more);
  detailsArea_->setVisible(more && detailsButton_->isChecked());
}

void TrainingPanel::showPlainStatus(const QString& text) {
  statusFitted_ = false;
  status_->setText(text);
  status_->setToolTip({});
  detailsButton_->hide();
  detailsArea_->hide();
}

void TrainingPanel::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  fitStatus();  // after the layout gave status_ its new width
}
QString TrainingPanel::statusText() const { return status_->text(); }

}  // namespace kiln::studio
