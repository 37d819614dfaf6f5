// DeviceComparePanel: the Studio's device comparison (Model > Compare devices), `kiln bench
// --graph` in a dock. The document's graph on each checked (device, precision) at a batch size:
// a table (device, precision, name, inference and train-step ms and samples/s, peak memory,
// speed-ups against the CPU f32 row, largest output and gradient differences against the CPU
// f32 reference, status) and a QCustomPlot bar chart of samples/s (inference and training).
//
// The comparison (engine/graph/device_compare.h) runs on a worker thread (QThread::create, as
// NetworkAnalyzer's measurement): each finished row reaches the UI thread through a queued call,
// so the UI never waits on it; cancel() is checked between iterations. When it ends,
// comparisonFinished carries the graph::compare_json document (the project stores it, and
// showDocument shows it again after reopening); exportTo writes it as JSON or CSV.
#pragma once
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QThread>
#include <atomic>
#include <vector>

#include "engine/core/backend.h"
#include "engine/graph/device_compare.h"
#include "widgets/graph/graph_document.h"

class QCustomPlot;

namespace kiln::studio {

class DeviceComparePanel : public QWidget {
  Q_OBJECT
 public:
  enum Column {
    DeviceCol, PrecisionCol, NameCol, InferMs, InferRate, TrainMs, TrainRate, Peak, InferSpeedup, TrainSpeedup,
    OutputDiff, GradDiff, Status, ColumnCount
  };
  static constexpr int kTargetRole = Qt::UserRole;  // "device|precision" on each target item

  explicit DeviceComparePanel(GraphDocument* document, QWidget* parent = nullptr);
  ~DeviceComparePanel() override;  // cancels a comparison and waits for its thread

  // One checkable item per device and each precision it runs (graph::compare_precisions): f32
  // checked, the others not. The devices' order is kept.
  void setDevices(const std::vector<DeviceInfo>& devices);
  // Timed iterations per row and warm-up (defaults: graph::CompareOptions's).
  void setIterations(int steps, int warmup);

  QSpinBox* batchSpin() const { return batch_; }
  QListWidget* targetList() const { return targets_; }
  QPushButton* runButton() const { return run_; }
  QPushButton* cancelButton() const { return cancel_; }
  QPushButton* exportButton() const { return export_; }  // asks for a .json or .csv file, then exportTo
  QTableWidget* table() const { return table_; }
  QCustomPlot* chart() const { return chart_; }
  QLabel* statusLabel() const { return status_; }
  bool isRunning() const { return worker_ != nullptr; }
  // The rows shown: of the last comparison (as they arrive during one), or of showDocument.
  const graph::CompareDocument& document() const { return doc_result_; }
  // Shows a compare_json document (a comparison stored in the project); false (nothing changed)
  // when it is not one.
  bool showDocument(const QString& json);
  // Writes the rows shown as JSON (path ending .json) or CSV (otherwise), atomically (QSaveFile).
  // False with *error set when nothing is shown or the file cannot be written.
  bool exportTo(const QString& path, QString* error = nullptr) const;
  // No rows (another project opened); no-op while running.
  void clear();

 public slots:
  // Runs the checked targets; no-op while running, with none checked or with graph problems.
  void run();
  void cancel();

 signals:
  // After the last row (or a cancel): the graph::compare_json document, every row in the table.
  void comparisonFinished(const QString& json, int batch);

 private:
  void addRow(const graph::CompareRow& row);
  void render();  // the table and the chart from doc_result_
  void onWorkerFinished(std::vector<graph::CompareRow> rows);
  void updateButtons();

  GraphDocument* doc_;
  QSpinBox* batch_;
  QListWidget* targets_;
  QPushButton* run_;
  QPushButton* cancel_;
  QPushButton* export_;
  QLabel* status_;
  QTableWidget* table_;
  QCustomPlot* chart_;
  graph::CompareOptions options_;
  graph::CompareDocument doc_result_;
  QThread* worker_ = nullptr;
  std::atomic<bool> cancelled_{false};
};

}  // namespace kiln::studio
