// NetworkAnalyzer: the Studio's network analyzer (Model > Analyze Network), `kiln analyze` in
// a dock. For the document's graph at a chosen batch size, dtype and optimizer: a sortable
// per-layer table (name, op, output, parameters, multiply-adds per sample, activation memory),
// the totals (summaryText(), which the main window shows in its status bar), the warnings
// (engine/graph/footprint.h; activating one emits nodeActivated), and on request the step
// time measured on each device (engine/graph/step_time.h) in a second table, and the per-layer
// profile on a chosen device (LayerProfilePanel, at the dock's batch size and type).
//
// The table, totals and warnings follow every document change (analysis and estimate are
// cheap: no tensor is made). The measurement runs on a worker thread (QThread::create): the UI
// thread only receives each device's row through a queued call, so it never waits on it.
// cancelMeasurement() is honoured before each step (so within one step's time); destroying
// the widget cancels and waits for the worker. Measuring and profiling exclude each other, and
// setMeasureAllowed(false) blocks both.
#pragma once
#include <QComboBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableView>
#include <QTableWidget>
#include <QThread>
#include <atomic>
#include <vector>

#include "engine/core/backend.h"
#include "engine/graph/footprint.h"
#include "engine/graph/step_time.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/layer_profile_panel.h"

namespace kiln::studio {

class NetworkAnalyzer : public QWidget {
  Q_OBJECT
 public:
  // Columns of layerTable(); each sorts by its value (numbers numerically), not its text.
  enum Column { Name, Op, Output, Parameters, Macs, Activations, ColumnCount };
  static constexpr int kSortRole = Qt::UserRole;      // the value a column sorts by
  static constexpr int kNodeRole = Qt::UserRole + 1;  // the node id, on every cell
  static constexpr int kDefaultBatch = 32;

  // The devices are kiln::list_devices() (their memory for the memory warning, the
  // measurement runs on each); setDevices replaces them.
  explicit NetworkAnalyzer(GraphDocument* document, QWidget* parent = nullptr);
  ~NetworkAnalyzer() override;  // cancels a measurement and waits for its thread

  void setDevices(const std::vector<DeviceInfo>& devices);
  void setBatchSize(int batch) { batch_->setValue(batch); }
  int batchSize() const { return batch_->value(); }
  // f32, bf16, f16
  void setDType(const QString& name);
  // Measuring while the window trains would compete for the device (and draw initial weights
  // from the generator a run uses): the main window disables it with the reason shown, which
  // also cancels a measurement or profile that is running.
  void setMeasureAllowed(bool allowed, const QString& reason = {});

  QTableView* layerTable() const { return layers_; }
  QListWidget* warningList() const { return warnings_; }
  QTableWidget* timeTable() const { return times_; }
  QPushButton* measureButton() const { return measure_; }
  QPushButton* cancelButton() const { return cancel_; }
  LayerProfilePanel* profilePanel() const { return profile_; }
  // "421,642 parameters · 4.24 M MACs/sample · training ≈ 49.8 MiB at batch 128", or why
  // there are no figures ("the graph has 2 problems").
  QString summaryText() const { return summary_; }
  const graph::MemoryEstimate& memory() const { return memory_; }
  const std::vector<graph::Warning>& warnings() const { return warningData_; }
  bool isMeasuring() const { return worker_ != nullptr; }

 public slots:
  void refresh();
  // Measures every device in turn (StepTimeOptions' steps and warm-up, the batch size and
  // optimizer chosen); no-op while measuring, without devices or with graph problems.
  void measure();
  void cancelMeasurement();
  // Profiles each layer on the profile panel's device(s) at this batch size and type.
  void profile();

 signals:
  void nodeActivated(kiln::graph::NodeId id);
  void summaryChanged(const QString& text);
  void measurementFinished();  // after the last device (or a cancel); every row is in the table

 private:
  struct TimeRow {
    DeviceInfo device;
    graph::StepTime time;
    QString error;
  };
  void addTimeRow(const TimeRow& row);
  void onWorkerFinished();
  void updateButtons();
  void setSummary(const QString& text);
  void updateSummary();  // the summary, the totals line and the buttons

  GraphDocument* doc_;
  std::vector<DeviceInfo> devices_;
  QSpinBox* batch_;
  QComboBox* dtype_;
  QComboBox* optimizer_;
  QPushButton* measure_;
  QPushButton* cancel_;
  QLabel* status_;         // the totals
  QLabel* measureStatus_;  // measuring, cancelled, measured
  QStandardItemModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* layers_;
  QListWidget* warnings_;
  QTableWidget* times_;
  LayerProfilePanel* profile_;
  QString summary_;
  QStringList shown_;  // what the table and the warning list show (refresh)
  graph::MemoryEstimate memory_;
  std::vector<graph::Warning> warningData_;
  bool measureAllowed_ = true;
  QString blockedReason_;
  QThread* worker_ = nullptr;
  std::atomic<bool> cancelled_{false};
};

}  // namespace kiln::studio
