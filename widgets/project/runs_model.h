// RunsModel: a project's training runs as a table model (one row per run, by id), read
// with Project::run_summaries (one SQL query) so a project with 1,000 runs loads in a few
// milliseconds; RunsFilterModel sorts it (numbers as numbers) and filters it.
//
// Columns read from each run: config_json keys "optimizer", "lr" (or "learning_rate"),
// "epochs", "batch_size" and "dataset" / "train_size" (widgets/training/training_config.h);
// final_metrics_json keys "train_loss", "val_loss", "val_accuracy", "images_per_second"
// falling back to the last epoch_metrics row (and the mean of the step rows' images/s),
// and "test_accuracy" (else the stored evaluation's accuracy). A regression run ("dataset" /
// "task" is "regression", or final metrics with "test_r2") shows R² in the test column and
// no validation accuracy.
// The Name and Tags cells are editable (Qt::EditRole; tags as "a, b"): setData renames
// or re-tags the run through the edit function given with setEditor (RunsView routes it
// through its undo stack), else directly in the project.
#pragma once
#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QStringList>
#include <QVector>
#include <functional>

#include "projects/project.h"

namespace kiln::studio {

class RunsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Status, Tags, Started, Duration, Epochs, TrainSize, BatchSize, Optimizer, LearningRate, Device,
                ImagesPerSecond, TrainLoss, ValLoss, ValAccuracy, TestAccuracy, ColumnCount };
  // SortRole: a double for number columns (NaN: an empty cell, sorting first), the run id
  // for Name (the default order), else the text (Started: its ISO-8601 UTC text);
  // RunIdRole: the run's id (qint64).
  enum Role { SortRole = Qt::UserRole + 1, RunIdRole };
  // What the filter searches in a row, lower-case (tags one per line).
  struct FilterText {
    QString name, tags, device, status;
  };

  explicit RunsModel(QObject* parent = nullptr);
  void setProject(projects::Project* project);  // not owned; null: no rows; reloads
  projects::Project* project() const { return project_; }
  // Reads the runs again (a model reset). A failed read leaves no rows and emits error.
  void reload();

  int rowForRun(int64_t id) const;  // -1 when not shown
  int64_t runAt(int row) const;
  const projects::RunRecord& recordAt(int row) const { return rows_[row].run; }
  const FilterText& filterTextAt(int row) const { return rows_[row].filter; }
  bool hasEvaluationAt(int row) const { return rows_[row].hasEvaluation; }  // Project::evaluation has one
  static bool isNumberColumn(int column);

  // Edits: (run, new name) / (run, new tags); they throw ProjectError on bad input.
  using RenameFn = std::function<void(int64_t, const QString&)>;
  using TagsFn = std::function<void(int64_t, const QStringList&)>;
  void setEditors(RenameFn rename, TagsFn tags);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 signals:
  void error(const QString& text);  // a refused edit or a failed read, for the log

 private:
  struct Row {
    projects::RunRecord run;
    QString text[ColumnCount];
    double number[ColumnCount];  // NaN: none / not a number column
    double started = NAN;        // seconds since 1970 (UTC)
    bool hasEvaluation = false;
    FilterText filter;
  };
  Row makeRow(const projects::RunSummary& s) const;

  projects::Project* project_ = nullptr;
  QVector<Row> rows_;
  RenameFn rename_;
  TagsFn tags_;
};

// Sorts by RunsModel::SortRole (numbers numerically, empty cells first when ascending;
// text case-insensitively; ties by run id) and keeps the rows whose text matches every
// word of the filter: a plain word anywhere in the name, tags, device or status;
// "tag:x", "status:x", "device:x" or "name:x" in that field only (case-insensitive
// substrings). Example: "tag:baseline cuda".
class RunsFilterModel : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit RunsFilterModel(QObject* parent = nullptr);
  void setFilterText(const QString& text);
  QString filterText() const { return text_; }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  struct Term {
    QString field;  // "" = any
    QString word;
  };
  QString text_;
  QVector<Term> terms_;
};

}  // namespace kiln::studio
