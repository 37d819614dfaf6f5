// RunsView: the project's training runs in a sortable, filterable table (RunsModel through
// RunsFilterModel in a QTableView: name, status, tags, start, duration, epochs, training
// set size, batch size, optimizer, learning rate, device, images/s, final losses,
// validation and test accuracy; numbers sort numerically; long names are elided, with the
// whole name in the tooltip, and no column is fitted wider than kMaxColumnWidth), and the
// curves of the selected runs overlaid in two QCustomPlots (training loss per step;
// validation accuracy per epoch), one colour per run, with a legend.
//
// Editing: F2 or a double-click renames a run (Name column) or edits its tags (Tags
// column, "a, b"); Delete or the context menu's "Delete run" deletes the selected runs
// softly. With setUndoStack the edits are undoable commands (widgets/project/run_commands.h;
// Ctrl+Z brings a deleted run back with its metrics); without one they are made directly.
// The filter field keeps the runs matching every word (RunsFilterModel: "tag:baseline",
// "status:finished", "device:cuda", or a word anywhere). "Export CSV…" writes the
// selected runs' metrics (Project::export_runs_csv).
#pragma once
#include <QList>
#include <QWidget>
#include <cstdint>

#include "projects/project.h"
#include "widgets/project/runs_model.h"

class QCustomPlot;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;
class QUndoStack;

class QSplitter;

namespace kiln::studio {

class RunsView : public QWidget {
  Q_OBJECT
 public:
  using Column = RunsModel::Column;
  static constexpr int kMaxColumnWidth = 260;  // px a column is fitted to at most (the Run column)
  static constexpr int kMaxOtherColumnWidth = 160;  // px, the other columns
  static constexpr int kMinimumPlotHeight = 120;    // px of each overlay plot at least
  // Characters (UTF-16 units, QLineEdit::maxLength) the name editor takes: the project stores
  // at most Project::kMaxRunNameBytes of UTF-8 and one UTF-16 unit takes at most 3 of them, so
  // whatever the editor takes is stored; without a limit a long paste was refused only on Enter.
  static constexpr int kMaxNameLength = static_cast<int>(projects::Project::kMaxRunNameBytes / 3);

  // project may be null (an empty view); it is not owned and must outlive the view or
  // be replaced with setProject(nullptr) first.
  explicit RunsView(projects::Project* project = nullptr, QWidget* parent = nullptr);
  void setProject(projects::Project* project);  // and refresh(), columns fitted again
  projects::Project* project() const { return model_->project(); }
  // Where rename, tag and delete commands go (not owned; null: edits are not undoable).
  void setUndoStack(QUndoStack* stack) { undoStack_ = stack; }

  QList<int64_t> selectedRuns() const;  // run ids, in table order
  // Selects these runs (without emitting currentRunChanged) and scrolls to the first.
  void selectRuns(const QList<int64_t>& ids);
  // Writes the selected runs' metrics to path; on failure returns false with the
  // reason in *error (the button shows it in a message box).
  bool exportCsv(const QString& path, QString* error = nullptr);

  // Edits (undoable when an undo stack is set); false with the ProjectError's text in
  // *error (and the message signal) when the project refuses them.
  bool renameRun(int64_t run, const QString& name, QString* error = nullptr);
  bool setRunTags(int64_t run, const QStringList& tags, QString* error = nullptr);
  bool deleteRuns(const QList<int64_t>& runs, QString* error = nullptr);
  void setFilterText(const QString& text);  // as typing in the filter field

  QTableView* table() const { return table_; }
  RunsModel* model() const { return model_; }
  RunsFilterModel* proxy() const { return proxy_; }
  QLineEdit* filterField() const { return filter_; }
  int rowCount() const;                           // rows shown (after the filter)
  QString cellText(int row, int column) const;    // in table order
  int64_t runAtRow(int row) const;                // in table order
  QCustomPlot* lossPlot() const { return lossPlot_; }
  QCustomPlot* accuracyPlot() const { return accuracyPlot_; }
  // "Compare evaluations": enabled while exactly two selected runs have an evaluation.
  QPushButton* compareButton() const { return compare_; }
  // The table beside the plots when the view is wide and low (width >= 3 x height: a
  // laptop's bottom dock, where one above the other left the plots below the fold), else
  // the plots below the table.
  Qt::Orientation arrangement() const;
  static QColor runColor(int index);  // the palette, cycled (Tableau 10)

 public slots:
  void refresh();  // reloads the runs (keeping the selection) and the curves; columns fitted again when runs were added

 signals:
  void message(const QString& text);        // "Exported 2 runs to ...", a refused edit
  void currentRunChanged(qint64 run);       // the user selected exactly this run
  void evaluationRequested(qint64 run);     // "Open evaluation", Enter or a double-click on a figure
  void compareRequested(qint64 older, qint64 newer);  // "Compare evaluations" on two runs
  // "Resume Run" on a stopped, interrupted or failed run: continue it from its newest checkpoint.
  void resumeRequested(qint64 run);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void fitColumns();
  void updatePlots();
  void updateButtons();  // Export (a run selected) and Compare (two with an evaluation)
  void updateCount();
  void exportClicked();
  void showContextMenu(const QPoint& pos);
  QList<int> selectedSourceRows() const;  // in table order

  RunsModel* model_ = nullptr;
  RunsFilterModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QLabel* count_ = nullptr;
  QCustomPlot* lossPlot_ = nullptr;
  QCustomPlot* accuracyPlot_ = nullptr;
  QPushButton* export_ = nullptr;
  QPushButton* compare_ = nullptr;
  QSplitter* split_ = nullptr;
  QLabel* hint_ = nullptr;
  QUndoStack* undoStack_ = nullptr;
};

}  // namespace kiln::studio
