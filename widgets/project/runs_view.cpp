#include "widgets/project/runs_view.h"

#include <qcustomplot.h>

#include <QDateTime>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace kiln::studio {

namespace {

QJsonObject parse_object(const std::string& json) {
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json));
  return doc.isObject() ? doc.object() : QJsonObject{};
}

// NaN (missing) -> empty cell.
QString fixed(double v, int decimals) { return std::isfinite(v) ? QString::number(v, 'f', decimals) : QString(); }
QString percent(double v) { return std::isfinite(v) ? QString::number(100.0 * v, 'f', 2) + " %" : QString(); }

double number(const QJsonObject& o, const char* key) {
  const QJsonValue v = o.value(key);
  return v.isDouble() ? v.toDouble() : std::nan("");
}

QString duration_text(qint64 seconds) {
  if (seconds < 60) return QString("%1 s").arg(seconds);
  if (seconds < 3600) return QString("%1 min %2 s").arg(seconds / 60).arg(seconds % 60, 2, 10, QChar('0'));
  return QString("%1 h %2 min").arg(seconds / 3600).arg((seconds % 3600) / 60, 2, 10, QChar('0'));
}

QDateTime parse_time(const std::string& iso) {
  return QDateTime::fromString(QString::fromStdString(iso), Qt::ISODateWithMs);
}

// Sorts by SortRole as a number when both cells have one, else by text.
class RunItem : public QTableWidgetItem {
 public:
  using QTableWidgetItem::QTableWidgetItem;
  bool operator<(const QTableWidgetItem& other) const override {
    const QVariant a = data(RunsView::SortRole), b = other.data(RunsView::SortRole);
    if (a.isValid() && b.isValid()) {
      const double x = a.toDouble(), y = b.toDouble();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && !std::isnan(y);
      return x < y;
    }
    return QTableWidgetItem::operator<(other);
  }
};

QCustomPlot* make_plot(const QString& x_label, const QString& y_label) {
  auto* plot = new QCustomPlot;
  plot->xAxis->setLabel(x_label);
  plot->yAxis->setLabel(y_label);
  plot->legend->setVisible(true);
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot->setMinimumHeight(160);
  return plot;
}

}  // namespace

QColor RunsView::runColor(int index) {
  static const QColor palette[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44),
                                   QColor(214, 39, 40),  QColor(148, 103, 189), QColor(140, 86, 75),
                                   QColor(227, 119, 194), QColor(127, 127, 127), QColor(188, 189, 34),
                                   QColor(23, 190, 207)};
  return palette[index % 10];
}

RunsView::RunsView(projects::Project* project, QWidget* parent) : QWidget(parent) {
  table_ = new QTableWidget(0, ColumnCount);
  table_->setHorizontalHeaderLabels({tr("Run"), tr("Status"), tr("Device"), tr("Started"), tr("Duration"),
                                     tr("Epochs"), tr("Train loss"), tr("Train acc."), tr("Val. loss"),
                                     tr("Val. acc."), tr("Test acc."), tr("Optimizer"), tr("LR")});
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // Interactive widths, fitted to the contents on every refresh; the last column takes the rest.
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setSortIndicator(Name, Qt::AscendingOrder);
  table_->setSortingEnabled(true);
  // Room for at least five runs before the table scrolls (the plots below take the rest).
  table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() +
                           5 * table_->verticalHeader()->defaultSectionSize() + 2 * table_->frameWidth());

  lossPlot_ = make_plot(tr("step"), tr("training loss"));
  accuracyPlot_ = make_plot(tr("epoch"), tr("val. accuracy (%)"));
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();  // whole epochs
  ticker->setTickStep(1.0);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  accuracyPlot_->xAxis->setTicker(ticker);

  export_ = new QPushButton(tr("Export CSV…"));
  export_->setToolTip(tr("Write the selected runs' per-step and per-epoch metrics to a CSV file"));
  export_->setEnabled(false);
  auto* refresh_button = new QPushButton(tr("Refresh"));
  hint_ = new QLabel(tr("Select runs (Ctrl/Shift-click for several) to compare their curves."));

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(hint_, 1);
  buttons->addWidget(refresh_button);
  buttons->addWidget(export_);
  auto* top = new QWidget;
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  top_layout->addWidget(table_);
  top_layout->addLayout(buttons);
  auto* plots = new QSplitter(Qt::Horizontal);
  plots->addWidget(lossPlot_);
  plots->addWidget(accuracyPlot_);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(top);
  split->addWidget(plots);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split);

  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    export_->setEnabled(!selectedRuns().isEmpty());
    updatePlots();
  });
  connect(refresh_button, &QPushButton::clicked, this, &RunsView::refresh);
  connect(export_, &QPushButton::clicked, this, &RunsView::exportClicked);
  setProject(project);
}

void RunsView::setProject(projects::Project* project) {
  project_ = project;
  table_->clearSelection();
  refresh();
}

void RunsView::refresh() {
  const QList<int64_t> selected = selectedRuns();
  {
    const QSignalBlocker block(table_);
    table_->setSortingEnabled(false);  // rows stay where fillRow puts them
    table_->clearSelection();
    table_->setRowCount(0);
    if (project_) {
      const auto runs = project_->runs();
      table_->setRowCount(static_cast<int>(runs.size()));
      for (size_t i = 0; i < runs.size(); ++i) fillRow(static_cast<int>(i), runs[i]);
    }
    table_->setSortingEnabled(true);  // sorts by the header's current indicator
  }
  table_->resizeColumnsToContents();
  selectRuns(selected);
  updatePlots();
}

void RunsView::fillRow(int row, const projects::RunRecord& run) {
  const QJsonObject config = parse_object(run.config_json);
  QJsonObject final_metrics = parse_object(run.final_metrics_json);
  const auto epochs = project_->epoch_metrics(run.id);
  if (!final_metrics.contains("val_accuracy") && !epochs.empty()) {
    const auto& last = epochs.back();
    final_metrics = {{"train_loss", last.train_loss}, {"train_accuracy", last.train_accuracy},
                     {"val_loss", last.val_loss}, {"val_accuracy", last.val_accuracy}};
  }
  const QDateTime start = parse_time(run.started_at);
  const QDateTime end = run.ended_at.empty() ? QDateTime::currentDateTimeUtc() : parse_time(run.ended_at);
  const qint64 seconds = start.isValid() && end.isValid() ? start.secsTo(end) : -1;
  const int configured = config.value("epochs").toInt(0);
  const QString done = QString::number(epochs.empty() ? 0 : epochs.back().epoch);
  const QJsonValue lr = config.contains("lr") ? config.value("lr") : config.value("learning_rate");
  double test_accuracy = number(final_metrics, "test_accuracy");
  if (std::isnan(test_accuracy)) {
    try {
      if (auto e = project_->evaluation(run.id)) test_accuracy = e->accuracy;
    } catch (const std::exception&) {
      // A damaged stored evaluation: the cell stays empty.
    }
  }
  const double nan = std::nan("");
  const double configured_lr = lr.isDouble() ? lr.toDouble() : nan;
  const double sort_keys[ColumnCount] = {double(run.id), nan, nan, nan, double(seconds >= 0 ? seconds : -1),
                                         double(epochs.empty() ? 0 : epochs.back().epoch),
                                         number(final_metrics, "train_loss"), number(final_metrics, "train_accuracy"),
                                         number(final_metrics, "val_loss"), number(final_metrics, "val_accuracy"),
                                         test_accuracy, nan, configured_lr};

  const QString cells[ColumnCount] = {
      QString::fromStdString(run.name),
      QString::fromStdString(projects::to_string(run.status)),
      QString::fromStdString(run.device),
      start.isValid() ? start.toLocalTime().toString("yyyy-MM-dd HH:mm:ss") : QString::fromStdString(run.started_at),
      seconds >= 0 ? duration_text(seconds) : QString(),
      configured > 0 ? done + " / " + QString::number(configured) : done,
      fixed(number(final_metrics, "train_loss"), 4),
      percent(number(final_metrics, "train_accuracy")),
      fixed(number(final_metrics, "val_loss"), 4),
      percent(number(final_metrics, "val_accuracy")),
      percent(test_accuracy),
      config.value("optimizer").toString(),
      lr.isDouble() ? QString::number(lr.toDouble(), 'g', 6) : QString()};
  for (int c = 0; c < ColumnCount; ++c) {
    auto* item = new RunItem(cells[c]);
    if (c != Status && c != Device && c != Started && c != Optimizer) item->setData(SortRole, sort_keys[c]);
    if (c == Name) {
      item->setData(Qt::UserRole, QVariant::fromValue<qint64>(run.id));
      item->setToolTip(QString("#%1\n%2").arg(run.id).arg(QString::fromStdString(run.config_json)));
    }
    if (c == Status && !run.message.empty()) item->setToolTip(QString::fromStdString(run.message));
    if ((c >= Epochs && c <= TestAccuracy) || c == LearningRate) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(row, c, item);
  }
}

QList<int64_t> RunsView::selectedRuns() const {
  QList<int64_t> ids;
  for (int row = 0; row < table_->rowCount(); ++row) {
    QTableWidgetItem* item = table_->item(row, Name);
    if (item && item->isSelected()) ids << item->data(Qt::UserRole).toLongLong();
  }
  return ids;
}

void RunsView::selectRuns(const QList<int64_t>& ids) {
  {
    const QSignalBlocker block(table_);
    table_->clearSelection();
    for (int row = 0; row < table_->rowCount(); ++row)
      if (ids.contains(table_->item(row, Name)->data(Qt::UserRole).toLongLong()))
        table_->selectionModel()->select(table_->model()->index(row, 0),
                                         QItemSelectionModel::Select | QItemSelectionModel::Rows);
  }
  export_->setEnabled(!selectedRuns().isEmpty());
  updatePlots();
}

void RunsView::updatePlots() {
  lossPlot_->clearGraphs();
  accuracyPlot_->clearGraphs();
  if (project_) {
    int index = 0;
    for (int row = 0; row < table_->rowCount(); ++row) {
      QTableWidgetItem* item = table_->item(row, Name);
      if (!item->isSelected()) continue;
      const int64_t id = item->data(Qt::UserRole).toLongLong();
      const QString name = QString("#%1 %2").arg(id).arg(item->text());
      const QColor color = runColor(index++);
      QVector<double> x, y;
      for (const auto& m : project_->step_metrics(id)) {
        x << double(m.step);
        y << m.loss;
      }
      QCPGraph* loss = lossPlot_->addGraph();
      loss->setName(name);
      loss->setPen(QPen(color, 1.5));
      loss->setData(x, y, true);
      x.clear();
      y.clear();
      for (const auto& m : project_->epoch_metrics(id)) {
        x << double(m.epoch);
        y << 100.0 * m.val_accuracy;
      }
      QCPGraph* acc = accuracyPlot_->addGraph();
      acc->setName(name);
      acc->setPen(QPen(color, 2));
      acc->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, color, 6));
      acc->setData(x, y, true);
    }
  }
  for (QCustomPlot* plot : {lossPlot_, accuracyPlot_}) {
    plot->legend->setVisible(plot->graphCount() > 0);
    plot->rescaleAxes();
    plot->yAxis->scaleRange(1.1, plot->yAxis->range().center());  // points off the frame
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

bool RunsView::exportCsv(const QString& path, QString* error) {
  const QList<int64_t> ids = selectedRuns();
  try {
    if (!project_) throw projects::ProjectError("no project is open");
    if (ids.isEmpty()) throw projects::ProjectError("no run is selected");
    project_->export_runs_csv(std::vector<int64_t>(ids.begin(), ids.end()), path.toStdString());
    project_->add_export("csv", path.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  emit message(tr("Exported %n run(s) to %1", nullptr, int(ids.size())).arg(path));
  return true;
}

void RunsView::exportClicked() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export runs to CSV"), "runs.csv", tr("CSV files (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportCsv(path, &error)) QMessageBox::warning(this, tr("Export CSV"), error);
}

}  // namespace kiln::studio
