// LayerProfilePanel: the Network Analyzer's per-layer profile (issue 20; engine/graph/
// layer_profile.h, Note [Per-layer timing]), the Studio's `kiln bench --graph --profile`. Profile
// runs graph::profile_layers on the chosen device, and on a second one when "vs" names one, on
// a worker thread (QThread::create, as the analyzer's step-time measurement): the UI thread only
// receives each device's result through a queued call. Cancel is honoured before each step;
// destroying the panel cancels and waits for the worker.
//
// The result: a sortable table (node, op, forward, backward and total ms, share % of the
// per-layer sum, output bytes; with a second device its total and the ratio "8.1× faster on
// cuda:0"), the line "per-layer sum X ms = Y% of the step Z ms on DEVICE", and heat() for the
// canvas (GraphCanvas::setNodeHeat): each profiled node's share of the largest share, its total
// ms as the badge. A failure (unknown device, out of memory, a graph that cannot run) is shown as
// its message. The profile is cleared (heatChanged with an empty map) by Clear and by any edit of
// the graph other than moving nodes.
//
// Stored profiles (layer_profile_stored.cpp): the window hands the panel the profiles its project
// keeps (setStoredProfiles; the panel knows no project) and stores each one measured here
// (profileMeasured). "Stored" lists them by date, device, precision and batch; picking one shows
// it as a fresh one is shown, and picking a second under "vs" shows the two side by side with the
// ratio and the difference of their totals per layer (rows matched by node name, so two graph
// versions compare too): "which layers got slower between these two devices or versions".
// Delete asks the window to delete the stored profile picked (deleteStoredRequested).
#pragma once
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QThread>
#include <atomic>
#include <map>
#include <vector>

#include "engine/core/backend.h"
#include "engine/graph/layer_profile.h"
#include "widgets/graph/graph_document.h"
#include "widgets/graph/graph_items.h"

namespace kiln::studio {

class LayerProfilePanel : public QWidget {
  Q_OBJECT
 public:
  // Columns of table(); each sorts by its value (numbers numerically). OtherTotal and Ratio are
  // shown only with a second device.
  // Difference: the second profile's total minus the first's, ms (above 0: slower in the second).
  enum Column { Name, Op, Forward, Backward, Total, Share, OutputBytes, OtherTotal, Ratio, Difference, ColumnCount };
  static constexpr int kSortRole = Qt::UserRole;      // the value a column sorts by
  static constexpr int kNodeRole = Qt::UserRole + 1;  // the node id, on every cell
  // A profile kept in the project (projects/project.h ProfileRecord, read by the window).
  struct StoredProfile {
    qint64 id = 0;
    QString createdAt;  // ISO-8601 UTC as stored
    graph::LayerProfile profile;
  };

  explicit LayerProfilePanel(GraphDocument* document, QWidget* parent = nullptr);
  ~LayerProfilePanel() override;  // cancels a profile and waits for its thread

  // The devices offered (the analyzer's); the chosen ones are kept when still offered.
  void setDevices(const std::vector<DeviceInfo>& devices);
  // Chooses the device profiled and the one compared with ("" for none); false when not offered.
  bool setDevice(const QString& device);
  bool setOtherDevice(const QString& device);
  // Timed steps (>= 1) and warm-up steps (>= 0) of each profile: ProfileOptions' 10 and 2 unless set.
  void setSteps(int steps, int warmup);
  // Non-empty: profiling is refused for this reason (training runs, a measurement runs, the
  // graph has problems), shown as the Profile button's tooltip.
  void setBlocked(const QString& reason);

  // Replaces the stored profiles listed (oldest first); what is shown stays unless it was a
  // stored profile no longer listed.
  void setStoredProfiles(const std::vector<StoredProfile>& profiles);
  // "#3 · cpu · f32 · batch 8 · 2026-12-03 15:30" (local time), as the Stored lists show it.
  static QString storedLabel(const StoredProfile& p);
  // Shows stored profile `id`, beside stored profile `otherId` when that is not 0; false (nothing
  // changed) when either is not listed or a profile is running.
  bool showStored(qint64 id, qint64 otherId = 0);
  QComboBox* storedCombo() const { return stored_; }
  QComboBox* storedOtherCombo() const { return storedOther_; }
  QPushButton* deleteStoredButton() const { return deleteStored_; }

  QTableView* table() const { return table_; }
  QPushButton* profileButton() const { return profile_; }
  QPushButton* cancelButton() const { return cancel_; }
  QPushButton* clearButton() const { return clear_; }
  // "per-layer sum 4.92 ms = 93% of the step 5.31 ms on cpu", a second line for the second
  // device, "cancelled after N steps", or the failure's message.
  QString summaryText() const { return summary_->text(); }
  bool isProfiling() const { return worker_ != nullptr; }
  // Per profiled node: heat = its share / the largest share, badge "2.31 ms" (its total), tip
  // "forward … ms, backward … ms: 41% of the per-layer sum on cpu". Empty without a profile.
  const std::map<graph::NodeId, NodeHeat>& heat() const { return heat_; }

 public slots:
  // Profiles at `batch` (>= 1) samples per step in `precision` (f32, bf16, f16), the steps and
  // warm-up as set; no-op while profiling, blocked or without a device.
  void profile(int batch, const QString& precision);
  void cancelProfile();
  void clearProfile();

 signals:
  void profileRequested();  // the Profile button: the analyzer answers with profile(batch, precision)
  void profilingChanged(bool running);
  void heatChanged();       // heat() changed (filled or cleared)
  void profileFinished();   // after the last device (or a cancel or failure); the table is filled
  // Before profileFinished, each device's profile with at least one timed step (the window
  // stores it in the project), unless the graph was edited while it ran.
  void profileMeasured(const kiln::graph::LayerProfile& profile);
  void nodeActivated(kiln::graph::NodeId id);
  // Delete: the stored profile picked under Stored; the window deletes it from the project and
  // hands the panel the new list.
  void deleteStoredRequested(qint64 id);

 private:
  struct Result {
    QString device;  // or a stored profile's "#3 cpu": how the summary and the headers name it
    graph::LayerProfile profile;
    QString error;
  };
  void onWorkerFinished();
  void show(const std::vector<Result>& results);
  void updateButtons();
  void fillDeviceCombos();
  void fillStoredCombos();
  void onStoredPicked();
  const StoredProfile* stored(qint64 id) const;

  GraphDocument* doc_;
  std::vector<DeviceInfo> devices_;
  QComboBox* device_;
  QComboBox* other_;
  QPushButton* profile_;
  QPushButton* cancel_;
  QPushButton* clear_;
  QComboBox* stored_;
  QComboBox* storedOther_;
  QPushButton* deleteStored_;
  std::vector<StoredProfile> storedProfiles_;
  qint64 shownStored_ = 0;  // the stored profile shown (0: none)
  QLabel* summary_;
  QStandardItemModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  std::map<graph::NodeId, NodeHeat> heat_;
  QString blocked_;
  int steps_ = graph::ProfileOptions{}.steps;
  int warmup_ = graph::ProfileOptions{}.warmup;
  graph::Graph profiled_;  // the graph the shown profile (or the running one) is of
  bool shown_ = false;     // a profile or its failure is shown
  std::vector<Result> results_;
  QThread* worker_ = nullptr;
  std::atomic<bool> cancelled_{false};
};

// The same layers and connections (every node's op, name, attributes and trainable flag, every
// edge): what a profile depends on; positions and initial weights are left out.
bool sameLayers(const graph::Graph& a, const graph::Graph& b);

}  // namespace kiln::studio
