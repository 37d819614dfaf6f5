// RunsView: the project's training runs in a sortable table (name, status, device,
// start, duration, epochs, final train/validation loss and accuracy, test accuracy,
// optimizer and learning rate; columns fit their contents, the last one stretches;
// clicking a header sorts numerically where the column is a number), and the curves of the selected runs overlaid in two QCustomPlots (training
// loss per step; validation accuracy per epoch), one colour per run, with a legend.
// "Export CSV…" writes the selected runs' metrics (Project::export_runs_csv).
//
// Columns read from each run: config_json keys "optimizer", "lr" (or "learning_rate")
// and "epochs" (widgets/training/training_config.h); final_metrics_json keys
// "train_loss", "train_accuracy", "val_loss", "val_accuracy", falling back to the last
// epoch_metrics row when the run has not ended, and "test_accuracy" (else the stored
// evaluation, Project::evaluation). Sorting by the Run column orders by run id (the
// default order).
#pragma once
#include <QList>
#include <QWidget>
#include <cstdint>

#include "projects/project.h"

class QCustomPlot;
class QLabel;
class QPushButton;
class QTableWidget;

namespace kiln::studio {

class RunsView : public QWidget {
  Q_OBJECT
 public:
  enum Column { Name, Status, Device, Started, Duration, Epochs, TrainLoss, TrainAccuracy, ValLoss, ValAccuracy,
                TestAccuracy, Optimizer, LearningRate, ColumnCount };

  // project may be null (an empty view); it is not owned and must outlive the view or
  // be replaced with setProject(nullptr) first.
  explicit RunsView(projects::Project* project = nullptr, QWidget* parent = nullptr);
  void setProject(projects::Project* project);  // and refresh()

  QList<int64_t> selectedRuns() const;  // run ids, in table order
  void selectRuns(const QList<int64_t>& ids);
  // Writes the selected runs' metrics to path; on failure returns false with the
  // reason in *error (the button shows it in a message box).
  bool exportCsv(const QString& path, QString* error = nullptr);

  QTableWidget* table() const { return table_; }
  QCustomPlot* lossPlot() const { return lossPlot_; }
  QCustomPlot* accuracyPlot() const { return accuracyPlot_; }
  static QColor runColor(int index);  // the palette, cycled (Tableau 10)
  static constexpr int SortRole = Qt::UserRole + 1;  // the number a cell sorts by (NaN: empty cell, sorts first)

 public slots:
  void refresh();  // reloads the runs (keeping the selection) and the curves

 signals:
  void message(const QString& text);  // "Exported 2 runs to ..."

 private:
  void fillRow(int row, const projects::RunRecord& run);
  void updatePlots();
  void exportClicked();

  projects::Project* project_ = nullptr;
  QTableWidget* table_ = nullptr;
  QCustomPlot* lossPlot_ = nullptr;
  QCustomPlot* accuracyPlot_ = nullptr;
  QPushButton* export_ = nullptr;
  QLabel* hint_ = nullptr;
};

}  // namespace kiln::studio
