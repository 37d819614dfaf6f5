#include "widgets/project/runs_view.h"

#include <qcustomplot.h>

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>

#include "widgets/project/run_commands.h"
#include "widgets/training/plot_ticks.h"

namespace kiln::studio {

namespace {

// The legend in a row of its own above the axes, or out of the layout: an empty legend
// left in the grid caps its column's width at 0 (QCustomPlot 2.1 takes an element's
// maximum size from its items), which squeezed the axes to ~50 px with no run selected.
void show_legend(QCustomPlot* plot, bool on) {
  QCPLayoutGrid* grid = plot->plotLayout();
  const bool in_layout = plot->legend->layout() == grid;
  if (on && !in_layout) {
    grid->insertRow(0);
    grid->addElement(0, 0, plot->legend);
    grid->setRowStretchFactor(0, 0.001);
  } else if (!on && in_layout) {
    grid->take(plot->legend);
    grid->simplify();
  }
  plot->legend->setVisible(on);
}

QCustomPlot* make_plot(const QString& x_label, const QString& y_label) {
  auto* plot = new QCustomPlot;
  plot->xAxis->setLabel(x_label);
  plot->yAxis->setLabel(y_label);
  // The legend above the axes (inside them it covered the newest epochs); two runs a row.
  plot->legend->setBrush(Qt::NoBrush);
  plot->legend->setBorderPen(Qt::NoPen);
  plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot->legend->setWrap(2);
  plot->axisRect()->insetLayout()->take(plot->legend);
  show_legend(plot, false);  // until runs are selected
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot->setMinimumHeight(RunsView::kMinimumPlotHeight);
  fitTickCountToHeight(plot);
  return plot;
}

// A run name as a plot legend: at most kLegendName characters (then fitted to the plot's
// width by fit_legend).
constexpr int kLegendName = 26;
QString legend_name(int64_t id, const QString& name) {
  return QString("#%1 %2").arg(id).arg(name.size() <= kLegendName ? name : name.left(kLegendName - 1) + QChar(0x2026));
}

// The Name column's editor: a QLineEdit that takes at most RunsView::kMaxNameLength characters.
class RunNameDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    QWidget* editor = QStyledItemDelegate::createEditor(parent, option, index);
    if (auto* line = qobject_cast<QLineEdit*>(editor)) line->setMaxLength(RunsView::kMaxNameLength);
    return editor;
  }
};

// Each legend entry's name elided (at its end, "…") to its share of the plot's width: the
// legend shows two entries a row above the axes, and a name wider than its cell was cut in
// the middle of a letter (at 1366x768 the plots beside the table are ~400 px wide). The
// graph's "fullName" property keeps the name; called when the runs or the plot's width change.
void fit_legend(QCustomPlot* plot) {
  QCPLegend* legend = plot->legend;
  const QFontMetrics fm(legend->font());
  const QMargins m = legend->margins();
  const int columns = std::max(1, std::min(legend->wrap(), plot->graphCount()));
  // An item: its margins (QCPAbstractLegendItem's, 8 + 8), the icon and the gap after it.
  const int room = (plot->width() - m.left() - m.right() - (columns - 1) * legend->columnSpacing()) / columns -
                   16 - legend->iconSize().width() - legend->iconTextPadding() - 4;
  for (int i = 0; i < plot->graphCount(); ++i) {
    QCPGraph* g = plot->graph(i);
    g->setName(fm.elidedText(g->property("fullName").toString(), Qt::ElideRight, std::max(room, 0)));
  }
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
  model_ = new RunsModel(this);
  // Queued: the edit reloads the model, which must not happen inside the delegate's setData.
  model_->setEditors(
      [this](int64_t id, const QString& name) {
        QMetaObject::invokeMethod(this, [this, id, name] { renameRun(id, name); }, Qt::QueuedConnection);
      },
      [this](int64_t id, const QStringList& tags) {
        QMetaObject::invokeMethod(this, [this, id, tags] { setRunTags(id, tags); }, Qt::QueuedConnection);
      });
  proxy_ = new RunsFilterModel(this);
  proxy_->setSourceModel(model_);
  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  table_->setTextElideMode(Qt::ElideRight);
  table_->setWordWrap(false);
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  table_->setItemDelegateForColumn(RunsModel::Name, new RunNameDelegate(table_));
  // Interactive widths, fitted to the contents (at most kMaxColumnWidth) when a project is
  // set; the last column takes the rest. Fitting measures at most 200 rows.
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setResizeContentsPrecision(200);
  table_->horizontalHeader()->setSortIndicator(RunsModel::Name, Qt::AscendingOrder);
  table_->setSortingEnabled(true);
  // Room for at least three runs before the table scrolls (the plots take the rest).
  table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() +
                           3 * table_->verticalHeader()->defaultSectionSize() + 2 * table_->frameWidth());
  table_->installEventFilter(this);

  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("Filter runs: words in the name, tags, device or status; tag:baseline, status:finished"));
  filter_->setClearButtonEnabled(true);
  count_ = new QLabel;

  lossPlot_ = make_plot(tr("step"), tr("training loss"));
  accuracyPlot_ = make_plot(tr("epoch"), tr("val. accuracy (%)"));
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();  // whole epochs
  ticker->setTickStep(1.0);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  accuracyPlot_->xAxis->setTicker(ticker);
  for (QCustomPlot* plot : {lossPlot_, accuracyPlot_}) plot->installEventFilter(this);  // fit_legend on resize

  export_ = new QPushButton(tr("Export CSV…"));
  export_->setToolTip(tr("Write the selected runs' per-step and per-epoch metrics to a CSV file"));
  export_->setEnabled(false);
  auto* refresh_button = new QPushButton(tr("Refresh"));
  compare_ = new QPushButton(tr("Compare evaluations"));
  compare_->setToolTip(tr("Select two runs with an evaluation: their test results side by side, with the per-class "
                          "precision, recall and F1 differences"));
  compare_->setEnabled(false);
  // One line beside the buttons, elided to its width ("…", the whole hint in its tooltip):
  // clipped, it was cut mid-word beside the table at 1280 and 1366 px.
  hint_ = new QLabel;
  hint_->setToolTip(tr("Select runs (Ctrl/Shift-click for several) to compare their curves; F2 renames, Delete deletes."));
  hint_->setMinimumWidth(0);
  hint_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  hint_->installEventFilter(this);

  auto* filter_row = new QHBoxLayout;
  filter_row->addWidget(filter_, 1);
  filter_row->addWidget(count_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(hint_, 1);
  buttons->addWidget(compare_);
  buttons->addWidget(refresh_button);
  buttons->addWidget(export_);
  auto* top = new QWidget;
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  top_layout->addLayout(filter_row);
  top_layout->addWidget(table_);
  top_layout->addLayout(buttons);
  auto* plots = new QSplitter(Qt::Horizontal);
  plots->addWidget(lossPlot_);
  plots->addWidget(accuracyPlot_);
  split_ = new QSplitter(Qt::Vertical);
  split_->addWidget(top);
  split_->addWidget(plots);
  split_->setStretchFactor(0, 2);
  split_->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split_);

  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const QList<int64_t> ids = selectedRuns();
    updateButtons();
    updatePlots();
    if (ids.size() == 1) emit currentRunChanged(ids.front());
  });
  connect(table_, &QTableView::activated, this, [this](const QModelIndex& index) {
    if (index.isValid()) emit evaluationRequested(index.data(RunsModel::RunIdRole).toLongLong());
  });
  connect(table_, &QTableView::customContextMenuRequested, this, &RunsView::showContextMenu);
  connect(filter_, &QLineEdit::textChanged, this, &RunsView::setFilterText);
  connect(model_, &RunsModel::error, this, &RunsView::message);
  connect(refresh_button, &QPushButton::clicked, this, &RunsView::refresh);
  connect(export_, &QPushButton::clicked, this, &RunsView::exportClicked);
  connect(compare_, &QPushButton::clicked, this, [this] {
    QList<int64_t> ids = selectedRuns();
    if (ids.size() != 2) return;
    std::sort(ids.begin(), ids.end());
    emit compareRequested(ids[0], ids[1]);
  });
  setProject(project);
}

Qt::Orientation RunsView::arrangement() const { return split_->orientation(); }

void RunsView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const Qt::Orientation o = width() >= 3 * height() ? Qt::Horizontal : Qt::Vertical;
  if (split_->orientation() == o) return;
  split_->setOrientation(o);
  // Side by side: the table gets 2/5 of the width; one above the other, 2/5 of the height.
  const int along = o == Qt::Horizontal ? width() : height();
  split_->setSizes({along * 2 / 5, along - along * 2 / 5});
}

void RunsView::setProject(projects::Project* project) {
  {
    const QSignalBlocker block(table_->selectionModel());
    table_->clearSelection();
  }
  model_->setProject(project);
  fitColumns();
  updateCount();
  updatePlots();
}

void RunsView::refresh() {
  const QList<int64_t> selected = selectedRuns();
  const int before = model_->rowCount();
  model_->reload();
  // A new run (the first ones of a new project above all) gets columns fitted to it; an
  // update of the same runs keeps the widths the user dragged.
  if (model_->rowCount() > before) fitColumns();
  updateCount();
  selectRuns(selected);
}

void RunsView::fitColumns() {
  table_->resizeColumnsToContents();
  QHeaderView* header = table_->horizontalHeader();
  for (int c = 0; c < RunsModel::ColumnCount; ++c) {
    const int cap = c == RunsModel::Name ? kMaxColumnWidth : kMaxOtherColumnWidth;
    if (header->sectionSize(c) > cap) header->resizeSection(c, cap);
  }
}

void RunsView::updateCount() {
  count_->setText(proxy_->rowCount() == model_->rowCount()
                      ? tr("%n run(s)", nullptr, model_->rowCount())
                      : tr("%1 of %n run(s)", nullptr, model_->rowCount()).arg(proxy_->rowCount()));
}

void RunsView::setFilterText(const QString& text) {
  if (filter_->text() != text) {
    const QSignalBlocker block(filter_);
    filter_->setText(text);
  }
  proxy_->setFilterText(text);
  updateCount();
}

int RunsView::rowCount() const { return proxy_->rowCount(); }

QString RunsView::cellText(int row, int column) const { return proxy_->index(row, column).data().toString(); }

int64_t RunsView::runAtRow(int row) const { return proxy_->index(row, 0).data(RunsModel::RunIdRole).toLongLong(); }

QList<int> RunsView::selectedSourceRows() const {
  QList<int> rows;
  QModelIndexList selected = table_->selectionModel()->selectedRows();
  std::sort(selected.begin(), selected.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  for (const QModelIndex& index : selected) rows << proxy_->mapToSource(index).row();
  return rows;
}

QList<int64_t> RunsView::selectedRuns() const {
  QList<int64_t> ids;
  for (int row : selectedSourceRows()) ids << model_->runAt(row);
  return ids;
}

void RunsView::selectRuns(const QList<int64_t>& ids) {
  {
    const QSignalBlocker block(table_->selectionModel());
    QItemSelection selection;
    for (int64_t id : ids) {
      const int row = model_->rowForRun(id);
      if (row < 0) continue;
      const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
      if (index.isValid()) selection.select(index, index.siblingAtColumn(RunsModel::ColumnCount - 1));
    }
    table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    if (!selection.isEmpty()) {
      table_->selectionModel()->setCurrentIndex(selection.indexes().front(), QItemSelectionModel::NoUpdate);
      table_->scrollTo(selection.indexes().front());
    }
  }
  table_->viewport()->update();
  updateButtons();
  updatePlots();
}

void RunsView::updateButtons() {
  const QList<int> rows = selectedSourceRows();
  export_->setEnabled(!rows.isEmpty());
  compare_->setEnabled(rows.size() == 2 && model_->hasEvaluationAt(rows[0]) && model_->hasEvaluationAt(rows[1]));
}

bool RunsView::renameRun(int64_t run, const QString& name, QString* error) {
  try {
    projects::Project* p = project();
    if (!p) throw projects::ProjectError("no project is open");
    const int row = model_->rowForRun(run);
    const QString before = row >= 0 ? QString::fromStdString(model_->recordAt(row).name) : QString();
    p->rename_run(run, name.toStdString());
    if (undoStack_) undoStack_->push(new RenameRunCommand(this, run, before, name.trimmed()));
    else refresh();
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    emit message(QString::fromUtf8(e.what()));
    return false;
  }
  return true;
}

bool RunsView::setRunTags(int64_t run, const QStringList& tags, QString* error) {
  try {
    projects::Project* p = project();
    if (!p) throw projects::ProjectError("no project is open");
    const int row = model_->rowForRun(run);
    QStringList before;
    if (row >= 0)
      for (const std::string& t : model_->recordAt(row).tags) before << QString::fromStdString(t);
    std::vector<std::string> v;
    for (const QString& t : tags) v.push_back(t.toStdString());
    p->set_run_tags(run, v);
    if (undoStack_) undoStack_->push(new TagRunCommand(this, run, before, tags));
    else refresh();
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    emit message(QString::fromUtf8(e.what()));
    return false;
  }
  return true;
}

bool RunsView::deleteRuns(const QList<int64_t>& runs, QString* error) {
  if (runs.isEmpty()) return false;
  projects::Project* p = project();
  QList<int64_t> done;
  try {
    if (!p) throw projects::ProjectError("no project is open");
    for (int64_t id : runs) {
      p->delete_run(id);
      done << id;
    }
  } catch (const std::exception& e) {
    for (int64_t id : done) p->restore_run(id);  // all or nothing
    if (error) *error = QString::fromUtf8(e.what());
    emit message(QString::fromUtf8(e.what()));
    return false;
  }
  const int row = model_->rowForRun(runs.front());
  const QString name = row >= 0 ? QString::fromStdString(model_->recordAt(row).name) : QString();
  if (undoStack_) undoStack_->push(new DeleteRunsCommand(this, runs, name));
  else refresh();
  emit message(tr("Deleted %n run(s); Edit > Undo brings them back until the project is closed", nullptr,
                  int(runs.size())));
  return true;
}

bool RunsView::eventFilter(QObject* watched, QEvent* event) {
  // The table takes Delete for itself (the window's graph Delete is the canvas's); an open
  // editor (a child) gets its own key events.
  if (watched == table_ && event->type() == QEvent::ShortcutOverride &&
      static_cast<QKeyEvent*>(event)->matches(QKeySequence::Delete)) {
    event->accept();
    return false;
  }
  if (watched == table_ && event->type() == QEvent::KeyPress &&
      static_cast<QKeyEvent*>(event)->matches(QKeySequence::Delete)) {
    deleteRuns(selectedRuns());
    return true;
  }
  if (watched == hint_ && (event->type() == QEvent::Resize || event->type() == QEvent::Show))
    hint_->setText(hint_->fontMetrics().elidedText(hint_->toolTip(), Qt::ElideRight, hint_->width()));
  if ((watched == lossPlot_ || watched == accuracyPlot_) && event->type() == QEvent::Resize) {
    auto* plot = static_cast<QCustomPlot*>(watched);
    fit_legend(plot);
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
  return QWidget::eventFilter(watched, event);
}

void RunsView::showContextMenu(const QPoint& pos) {
  const QModelIndex index = table_->indexAt(pos);
  if (!index.isValid()) return;
  if (!table_->selectionModel()->isRowSelected(index.row(), {}))
    table_->selectionModel()->select(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  const int64_t id = index.data(RunsModel::RunIdRole).toLongLong();
  const QList<int64_t> ids = selectedRuns();
  QMenu menu(this);
  menu.addAction(tr("Open Evaluation"), this, [this, id] { emit evaluationRequested(id); });
  if (compare_->isEnabled()) menu.addAction(compare_->text(), compare_, &QPushButton::click);
  const int source = model_->rowForRun(id);
  const projects::RunStatus status = source >= 0 ? model_->recordAt(source).status : projects::RunStatus::finished;
  if (ids.size() == 1 && (status == projects::RunStatus::stopped || status == projects::RunStatus::interrupted ||
                          status == projects::RunStatus::failed))  // Resume Run says why one cannot continue
    menu.addAction(tr("Resume Run"), this, [this, id] { emit resumeRequested(id); })
        ->setToolTip(tr("Continue the run from its newest checkpoint, with its own settings"));
  menu.addAction(tr("Rename…"), this, [this, index] { table_->edit(index.siblingAtColumn(RunsModel::Name)); });
  menu.addAction(tr("Edit Tags…"), this, [this, index] { table_->edit(index.siblingAtColumn(RunsModel::Tags)); });
  menu.addSeparator();
  menu.addAction(tr("Delete %n Run(s)", nullptr, int(ids.size())), this, [this, ids] { deleteRuns(ids); });
  menu.addAction(tr("Export CSV…"), this, &RunsView::exportClicked);
  menu.exec(table_->viewport()->mapToGlobal(pos));
}

void RunsView::updatePlots() {
  lossPlot_->clearGraphs();
  accuracyPlot_->clearGraphs();
  if (projects::Project* p = project()) {
    int index = 0;
    for (int row : selectedSourceRows()) {
      const int64_t id = model_->runAt(row);
      const QString name = legend_name(id, QString::fromStdString(model_->recordAt(row).name));
      const QColor color = runColor(index++);
      QVector<double> x, y;
      try {
        for (const auto& m : p->step_metrics(id)) {
          x << double(m.step);
          y << m.loss;
        }
      } catch (const std::exception& e) {
        emit message(QString::fromUtf8(e.what()));
      }
      QCPGraph* loss = lossPlot_->addGraph();
      loss->setProperty("fullName", name);
      loss->setPen(QPen(color, 1.5));
      loss->setData(x, y, true);
      x.clear();
      y.clear();
      try {
        for (const auto& m : p->epoch_metrics(id)) {
          x << double(m.epoch);
          y << 100.0 * m.val_accuracy;
        }
      } catch (const std::exception& e) {
        emit message(QString::fromUtf8(e.what()));
      }
      QCPGraph* acc = accuracyPlot_->addGraph();
      acc->setProperty("fullName", name);
      acc->setPen(QPen(color, 2));
      acc->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, color, 6));
      acc->setData(x, y, true);
    }
  }
  for (QCustomPlot* plot : {lossPlot_, accuracyPlot_}) {
    fit_legend(plot);
    show_legend(plot, plot->graphCount() > 0);
    plot->rescaleAxes();
    plot->yAxis->scaleRange(1.1, plot->yAxis->range().center());  // points off the frame
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

bool RunsView::exportCsv(const QString& path, QString* error) {
  const QList<int64_t> ids = selectedRuns();
  try {
    if (!project()) throw projects::ProjectError("no project is open");
    if (ids.isEmpty()) throw projects::ProjectError("no run is selected");
    project()->export_runs_csv(std::vector<int64_t>(ids.begin(), ids.end()), path.toStdString());
    project()->add_export("csv", path.toStdString());
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
