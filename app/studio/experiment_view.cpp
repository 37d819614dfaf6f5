#include "app/studio/experiment_view.h"

#include <QComboBox>
#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "app/studio/new_sweep_dialog.h"
#include "app/studio/sweep_report.h"
#include "app/studio/sweep_runner.h"
#include "app/studio/sweep_space.h"
#include "app/studio/training_job.h"
#include "widgets/training/parallel_coordinates.h"

namespace kiln::studio {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// A cell sorted by its kSortRole value: numbers as numbers, else the text.
class SortItem : public QTableWidgetItem {
 public:
  using QTableWidgetItem::QTableWidgetItem;
  bool operator<(const QTableWidgetItem& other) const override {
    const QVariant a = data(ExperimentView::kSortRole), b = other.data(ExperimentView::kSortRole);
    if (a.typeId() == QMetaType::Double && b.typeId() == QMetaType::Double) return a.toDouble() < b.toDouble();
    return QTableWidgetItem::operator<(other);
  }
};

QTableWidgetItem* cell(const QString& text, std::optional<double> key = std::nullopt) {
  auto* it = new SortItem(text);
  it->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
  if (key) {
    // A missing figure sorts below every number.
    it->setData(ExperimentView::kSortRole, std::isnan(*key) ? std::numeric_limits<double>::lowest() : *key);
    it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  return it;
}

bool greyedStatus(const std::string& s) { return s == "pruned" || s == "failed" || s == "stopped" || s == "interrupted"; }

// The axis of a sweep parameter: a list's values as categories (numbers ascending, names as
// given), a range linear or log from LO to HI.
ParallelAxis axisOf(const sweep::ParamSpec& p) {
  ParallelAxis a;
  a.name = q(p.name);
  if (p.range) {
    a.scale = p.log ? ParallelAxis::Scale::Log : ParallelAxis::Scale::Linear;
    a.lo = p.lo;
    a.hi = p.hi;
    return a;
  }
  a.scale = ParallelAxis::Scale::Categories;
  std::vector<nlohmann::json> values = p.values;
  if (!p.names)
    std::sort(values.begin(), values.end(), [](const nlohmann::json& x, const nlohmann::json& y) { return x.get<double>() < y.get<double>(); });
  for (const nlohmann::json& v : values) a.categories << q(sweep::value_text(v));
  return a;
}

// Where a trial's value sits on its parameter's axis (NaN: not there).
double axisValue(const ParallelAxis& a, const nlohmann::json& v) {
  if (v.is_null()) return NAN;
  if (a.scale == ParallelAxis::Scale::Categories) return a.categories.indexOf(q(sweep::value_text(v)));
  return v.is_number() ? v.get<double>() : NAN;
}

}  // namespace

ExperimentView::ExperimentView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Sweep"), this));
  list_ = new QComboBox(this);
  list_->setObjectName("sweepList");
  list_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  top->addWidget(list_, 1);
  new_ = new QPushButton(tr("New Sweep…"), this);
  new_->setObjectName("sweepNew");
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName("sweepStop");
  resume_ = new QPushButton(tr("Resume"), this);
  resume_->setObjectName("sweepResume");
  apply_ = new QPushButton(tr("Apply Best"), this);
  apply_->setObjectName("sweepApplyBest");
  apply_->setToolTip(tr("Use the best finished trial's settings: the Training panel's, and its graph attributes as an "
                        "edit you can undo"));
  for (QPushButton* b : {new_, stop_, resume_, apply_}) top->addWidget(b);
  layout->addLayout(top);
  status_ = new QLabel(tr("Open a project, then New Sweep… tries settings as runs of it."), this);
  status_->setObjectName("sweepStatus");
  status_->setWordWrap(true);
  layout->addWidget(status_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  table_ = new QTableWidget(0, FirstParamCol, split);
  table_->setObjectName("sweepTable");
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSortingEnabled(true);
  table_->sortByColumn(TrialCol, Qt::AscendingOrder);  // the plan's order until a header is clicked
  plot_ = new ParallelCoordinatesPlot(split);
  split->addWidget(table_);
  split->addWidget(plot_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);
  connect(list_, &QComboBox::currentIndexChanged, this, &ExperimentView::render);
  connect(new_, &QPushButton::clicked, this, &ExperimentView::openNewSweep);
  connect(stop_, &QPushButton::clicked, this, &ExperimentView::stop);
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (const QString why = resumeSweep(shownSweep()); !why.isEmpty()) emit logMessage(tr("Resume: %1").arg(why));
  });
  connect(apply_, &QPushButton::clicked, this, [this] {
    if (shownSweep() > 0) emit applyBestRequested(shownSweep());
  });
  updateButtons();
}

ExperimentView::~ExperimentView() { shutdown(); }

void ExperimentView::setProject(projects::Project* project) {
  shutdown();
  project_ = project;
  reload();
  if (list_->count() > 0) list_->setCurrentIndex(list_->count() - 1);  // the newest
}

void ExperimentView::shutdown() {
  if (!runner_) return;
  SweepRunner* r = runner_;
  const int64_t sweep = running_;
  runner_ = nullptr;
  running_ = 0;
  disconnect(r, nullptr, this, nullptr);
  r->stop();
  delete r;  // cancels the running trials and waits for their threads
  // Their sessions are gone before they could report: their rows end here.
  try {
    for (const projects::SweepTrial& t : project_->sweep_trials(sweep))
      if (t.status == "running") project_->end_trial(t.id, "stopped", NAN, "stopped: the sweep was closed with its project");
    project_->set_sweep_status(sweep, "stopped");
  } catch (const std::exception& e) {
    emit logMessage(tr("sweep %1: its trials' ends were not stored: %2").arg(sweep).arg(q(e.what())));
  }
  emit runningChanged(false);
  updateButtons();
}

int64_t ExperimentView::shownSweep() const { return list_->currentIndex() < 0 ? 0 : list_->currentData().toLongLong(); }

void ExperimentView::showSweep(int64_t sweep) {
  const int i = list_->findData(QVariant::fromValue<qint64>(sweep));
  if (i >= 0) list_->setCurrentIndex(i);
}

void ExperimentView::reload() {
  const int64_t shown = shownSweep();
  {
    const QSignalBlocker block(list_);
    list_->clear();
    if (project_) try {
        for (const projects::SweepRecord& s : project_->sweeps())
          list_->addItem(tr("%1: %2 (%3)").arg(s.id).arg(q(s.name), q(s.status)), QVariant::fromValue<qint64>(s.id));
      } catch (const std::exception& e) {
        status_->setText(tr("The project's sweeps cannot be read: %1").arg(q(e.what())));
      }
    const int i = list_->findData(QVariant::fromValue<qint64>(shown));
    list_->setCurrentIndex(i >= 0 ? i : list_->count() - 1);
  }
  render();
}

void ExperimentView::render() {
  table_->setSortingEnabled(false);
  table_->setRowCount(0);
  hasBest_ = false;
  shownStatus_.clear();
  const int64_t id = shownSweep();
  if (!project_ || id == 0) {
    table_->setColumnCount(FirstParamCol);
    table_->setHorizontalHeaderLabels({tr("Trial"), tr("Run"), tr("Device"), tr("Status"), tr("Objective")});
    plot_->clear();
    status_->setText(project_ ? tr("No sweep in this project yet: New Sweep… tries settings as runs of it.")
                              : tr("Open a project, then New Sweep… tries settings as runs of it."));
    table_->setSortingEnabled(true);
    updateButtons();
    return;
  }
  SweepReport r;
  std::map<int64_t, std::string> devices;
  try {
    r = sweep_report(*project_, id);
    for (const projects::RunRecord& run : project_->runs(true)) devices[run.id] = run.device;
  } catch (const std::exception& e) {
    status_->setText(tr("Sweep %1 cannot be read: %2").arg(id).arg(q(e.what())));
    updateButtons();
    return;
  }
  // The parameters as planned, parsed again by the one parser (sweep_space.h).
  std::vector<sweep::ParamSpec> params;
  try {
    const nlohmann::json space = nlohmann::json::parse(r.sweep.space_json);  // alive through the loop
    for (const nlohmann::json& text : space.at("params")) params.push_back(sweep::parse_param(text.get<std::string>()));
  } catch (const std::exception& e) {
    emit logMessage(tr("sweep %1: its stored parameters cannot be read: %2").arg(id).arg(q(e.what())));
  }
  QStringList headers = {tr("Trial"), tr("Run"), tr("Device"), tr("Status"), q(r.sweep.objective)};
  std::vector<ParallelAxis> axes;
  for (const sweep::ParamSpec& p : params) {
    headers << q(p.name);
    axes.push_back(axisOf(p));
  }
  ParallelAxis objective;
  objective.name = q(r.sweep.objective);
  objective.lo = INFINITY;
  objective.hi = -INFINITY;
  for (const projects::SweepTrial& t : r.trials)
    if (!std::isnan(t.objective)) {
      objective.lo = std::min(objective.lo, t.objective);
      objective.hi = std::max(objective.hi, t.objective);
    }
  if (!(objective.lo <= objective.hi)) objective.lo = objective.hi = 0;
  axes.push_back(objective);

  table_->setColumnCount(int(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(int(r.trials.size()));
  std::vector<ParallelLine> lines;
  int done = 0, running = 0, queued = 0;
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const projects::SweepTrial& t = r.trials[i];
    const int row = int(i);
    const nlohmann::json values = nlohmann::json::parse(t.params_json, nullptr, false);
    table_->setItem(row, TrialCol, cell(QString::number(t.trial), t.trial));
    table_->setItem(row, RunCol, t.run > 0 ? cell(QString::number(t.run), double(t.run)) : cell("–", NAN));
    table_->setItem(row, DeviceCol, cell(t.run > 0 && devices.count(t.run) ? q(devices[t.run]) : QString()));
    table_->setItem(row, StatusCol, cell(q(t.status)));
    if (!t.message.empty()) table_->item(row, StatusCol)->setToolTip(q(t.message));
    table_->setItem(row, ObjectiveCol, cell(std::isnan(t.objective) ? "–" : QString::number(t.objective, 'f', 4), t.objective));
    ParallelLine line;
    for (size_t p = 0; p < params.size(); ++p) {
      const nlohmann::json v = values.is_object() && values.contains(params[p].name) ? values[params[p].name] : nlohmann::json();
      std::optional<double> key;
      if (v.is_number()) key = v.get<double>();
      table_->setItem(row, FirstParamCol + int(p), cell(v.is_null() ? QString() : q(sweep::value_text(v)), key));
      line.values.push_back(axisValue(axes[p], v));
    }
    line.values.push_back(t.objective);
    line.colour = t.objective;
    line.greyed = t.status != "finished";
    const bool grey = greyedStatus(t.status);
    if (grey)
      for (int c = 0; c < table_->columnCount(); ++c) table_->item(row, c)->setForeground(QColor(140, 140, 140));
    if (r.best && *r.best == i) {
      QFont bold = table_->font();
      bold.setBold(true);
      for (int c = 0; c < table_->columnCount(); ++c) table_->item(row, c)->setFont(bold);
    }
    if (t.status == "queued") ++queued;
    else if (t.status == "running") ++running;
    else ++done;
    if (t.status != "queued") lines.push_back(std::move(line));
  }
  table_->resizeColumnsToContents();
  table_->setSortingEnabled(true);
  plot_->setData(axes, lines, q(r.sweep.objective));
  hasBest_ = r.best.has_value();
  shownStatus_ = q(r.sweep.status);
  QString text = tr("Sweep %1, %2: %3 — %4 ended, %5 running, %6 queued.")
                     .arg(id)
                     .arg(q(r.sweep.name), q(r.sweep.status))
                     .arg(done)
                     .arg(running)
                     .arg(queued);
  if (r.best) {
    const projects::SweepTrial& b = r.trials[*r.best];
    text += tr(" Best: trial %1 (run %2), %3 %4.").arg(b.trial).arg(b.run).arg(q(r.sweep.objective)).arg(b.objective, 0, 'f', 4);
  }
  status_->setText(text);
  updateButtons();
}

void ExperimentView::updateButtons() {
  new_->setEnabled(project_ && !runner_);
  new_->setToolTip(!project_  ? tr("Open or save a project first: a sweep's trials are runs stored in it")
                   : runner_ ? tr("A sweep is running")
                             : tr("Try settings as runs of this project"));
  stop_->setEnabled(runner_ != nullptr);
  // A sweep stopped, or left "running" by a process that died, has trials left to run.
  resume_->setEnabled(project_ && !runner_ && shownSweep() > 0 && !shownStatus_.isEmpty() && shownStatus_ != "finished");
  resume_->setToolTip(tr("Run the shown sweep's queued, stopped and interrupted trials, with the settings it was "
                         "planned with"));
  apply_->setEnabled(project_ && hasBest_);
}

NewSweepDialog* ExperimentView::openNewSweep() {
  delete dialog_;
  const graph::Graph g = hooks_.graph ? hooks_.graph() : graph::Graph{};
  dialog_ = new NewSweepDialog(g, devices_, hooks_.device ? hooks_.device() : std::string("cpu"), this);
  dialog_->setStarter([this](const SweepRequest& r, const std::vector<std::string>& devices) { return startSweep(r, devices); });
  dialog_->open();
  return dialog_;
}

QString ExperimentView::startSweep(const SweepRequest& request, const std::vector<std::string>& devices) {
  if (runner_) return tr("a sweep is already running: stop it first");
  if (!project_) return tr("open or save a project first: a sweep's trials are runs stored in it");
  if (!hooks_.prepare) return tr("no window to take the settings from");
  QString why;
  std::optional<SweepSettings> start = hooks_.prepare(&why);
  if (!start) return why;
  start->devices = devices;
  SweepSettings settings;
  try {
    settings = plan_sweep(request, *project_, std::move(*start));
  } catch (const sweep::SweepUsageError& e) {
    return q(e.what());
  } catch (const std::exception& e) {
    return q(plain_error(e));
  }
  startRunner(std::move(settings), tr("started"));
  return {};
}

QString ExperimentView::resumeSweep(int64_t sweep) {
  if (runner_) return tr("a sweep is already running: stop it first");
  if (!project_) return tr("open a project first");
  if (hooks_.blocker)
    if (const QString why = hooks_.blocker(); !why.isEmpty()) return why;
  SweepSettings settings;
  int requeued = 0;
  try {
    // Its lanes must be devices of this machine (a project may come from another one).
    for (const projects::SweepRecord& r : project_->sweeps())
      if (r.id == sweep) {
        const nlohmann::json space = nlohmann::json::parse(r.space_json, nullptr, false);
        if (space.is_object() && space.contains("devices"))
          for (const std::string& d : space["devices"].get<std::vector<std::string>>())
            if (std::find(devices_.begin(), devices_.end(), d) == devices_.end())
              return tr("sweep %1 runs on %2, which this machine does not have").arg(sweep).arg(q(d));
      }
    settings = resume_sweep(*project_, sweep, &requeued);
  } catch (const sweep::SweepUsageError& e) {
    return q(e.what());
  } catch (const std::exception& e) {
    return q(plain_error(e));
  }
  startRunner(std::move(settings), tr("resumed (%1 interrupted or stopped trial(s) queued again)").arg(requeued));
  return {};
}

void ExperimentView::startRunner(SweepSettings settings, const QString& how) {
  QStringList lanes;
  for (const std::string& d : settings.devices) lanes << q(d);
  running_ = settings.sweep;
  runner_ = new SweepRunner(*project_, std::move(settings), this);
  connect(runner_, &SweepRunner::logMessage, this, &ExperimentView::logMessage);
  connect(runner_, &SweepRunner::trialStarted, this, [this](int trial, qint64 run, const QString& device, const QString& label) {
    emit logMessage(tr("sweep %1: trial %2 started as run %3 on %4 (%5)").arg(running_).arg(trial).arg(run).arg(device, label));
    render();
    emit trialsChanged();
  });
  connect(runner_, &SweepRunner::trialEnded, this, [this](int trial, const QString& status, double objective, const QString& m) {
    emit logMessage(tr("sweep %1: trial %2 %3, objective %4%5")
                        .arg(running_)
                        .arg(trial)
                        .arg(status)
                        .arg(objective, 0, 'g', 4)
                        .arg(m.isEmpty() ? QString() : " (" + m + ")"));
    render();
    emit trialsChanged();
  });
  connect(runner_, &SweepRunner::finished, this, &ExperimentView::onFinished);
  runner_->start();
  reload();
  showSweep(running_);
  emit logMessage(tr("sweep %1 %2: %3 on %4").arg(running_).arg(how, list_->currentText(), lanes.join(", ")));
  emit runningChanged(true);
  updateButtons();
}

void ExperimentView::stop() {
  if (runner_) runner_->stop();
}

void ExperimentView::onFinished(const QString& status) {
  const int64_t sweep = running_;
  runner_->deleteLater();
  runner_ = nullptr;
  running_ = 0;
  emit logMessage(tr("sweep %1 %2").arg(sweep).arg(status));
  reload();
  emit runningChanged(false);
  updateButtons();
}

}  // namespace kiln::studio
