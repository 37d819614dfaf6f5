#include "widgets/graph/layer_profile_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/core/registry.h"
#include "engine/graph/footprint.h"

namespace kiln::studio {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// A cell showing `text` that sorts by `value`.
QStandardItem* cell(const QString& text, const QVariant& value, graph::NodeId node, bool number) {
  auto* item = new QStandardItem(text);
  item->setData(value, LayerProfilePanel::kSortRole);
  item->setData(qlonglong(node), LayerProfilePanel::kNodeRole);
  item->setEditable(false);
  if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QString ms(double v) { return QString::number(v, 'f', 3); }

// `ratio` = a time on the first device over the same on `other`: "8.1× faster on cuda:0" (above
// 1), "2.0× slower on cuda:0" (below), "-" when unknown.
QString ratioText(double ratio, const QString& other) {
  if (ratio <= 0) return QStringLiteral("-");
  return ratio >= 1 ? QObject::tr("%1× faster on %2").arg(QString::number(ratio, 'f', 1), other)
                    : QObject::tr("%1× slower on %2").arg(QString::number(1 / ratio, 'f', 1), other);
}

// "per-layer sum 4.92 ms = 93% of the step 5.31 ms on cpu (batch 32, f32, interquartile means of 10 steps)".
QString sumLine(const graph::LayerProfile& p) {
  const double sum = p.layer_sum_ms();
  QString line = QObject::tr("per-layer sum %1 ms = %2% of the step %3 ms on %4")
                     .arg(QString::number(sum, 'f', 2))
                     .arg(p.step_ms > 0 ? QString::number(100.0 * sum / p.step_ms, 'f', 0) : QString("?"))
                     .arg(QString::number(p.step_ms, 'f', 2), q(p.device));
  line += QObject::tr(" (batch %1, %2, interquartile means of %n step(s))", nullptr, p.steps).arg(p.batch).arg(q(p.precision));
  if (p.cancelled) line += QObject::tr("; cancelled");
  return line;
}

}  // namespace

bool sameLayers(const graph::Graph& a, const graph::Graph& b) {
  if (a.nodes().size() != b.nodes().size() || a.edges() != b.edges()) return false;
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const graph::Node &x = a.nodes()[i], &y = b.nodes()[i];
    if (x.id != y.id || x.op != y.op || x.name != y.name || x.attrs != y.attrs || x.trainable != y.trainable) return false;
  }
  return true;
}

LayerProfilePanel::LayerProfilePanel(GraphDocument* document, QWidget* parent) : QWidget(parent), doc_(document) {
  device_ = new QComboBox(this);
  device_->setObjectName("profileDevice");
  device_->setToolTip(tr("The device profiled"));
  other_ = new QComboBox(this);
  other_->setObjectName("profileOtherDevice");
  other_->setToolTip(tr("A second device profiled after the first, its total and the ratio side by side"));
  profile_ = new QPushButton(tr("Profile"), this);
  profile_->setObjectName("profileRun");
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName("profileCancel");
  clear_ = new QPushButton(tr("Clear"), this);
  clear_->setObjectName("profileClear");
  clear_->setToolTip(tr("Clears the table and the canvas's heat colours"));
  stored_ = new QComboBox(this);
  stored_->setObjectName("profileStored");
  stored_->setToolTip(tr("A profile stored in the project: picking it shows it"));
  storedOther_ = new QComboBox(this);
  storedOther_->setObjectName("profileStoredOther");
  storedOther_->setToolTip(tr("A second stored profile shown beside the first, with the ratio and the difference per layer"));
  deleteStored_ = new QPushButton(tr("Delete"), this);
  deleteStored_->setObjectName("profileStoredDelete");
  deleteStored_->setToolTip(tr("Deletes the stored profile picked under Stored from the project"));
  summary_ = new QLabel(this);
  summary_->setObjectName("profileSummary");
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  model_ = new QStandardItemModel(0, ColumnCount, this);
  model_->setHorizontalHeaderLabels({tr("Node"), tr("Op"), tr("Forward ms"), tr("Backward ms"), tr("Total ms"),
                                     tr("Share %"), tr("Output bytes"), tr("Total ms"), tr("Ratio"), tr("Difference ms")});
  model_->setHeaderData(Difference, Qt::Horizontal, tr("The second profile's total minus the first's: above 0, the layer is slower in the second"),
                        Qt::ToolTipRole);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(kSortRole);
  table_ = new QTableView(this);
  table_->setObjectName("profileTable");
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(Total, Qt::DescendingOrder);  // the slowest layers first, as kiln bench --profile
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnHidden(OtherTotal, true);
  table_->setColumnHidden(Ratio, true);
  table_->setColumnHidden(Difference, true);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Per-layer profile on"), this));
  controls->addWidget(device_);
  controls->addWidget(new QLabel(tr("vs"), this));
  controls->addWidget(other_);
  controls->addStretch(1);
  controls->addWidget(profile_);
  controls->addWidget(cancel_);
  controls->addWidget(clear_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(controls);
  auto* storedRow = new QHBoxLayout;
  storedRow->addWidget(new QLabel(tr("Stored"), this));
  storedRow->addWidget(stored_, 1);
  storedRow->addWidget(new QLabel(tr("vs"), this));
  storedRow->addWidget(storedOther_, 1);
  storedRow->addWidget(deleteStored_);
  layout->addLayout(storedRow);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);

  connect(profile_, &QPushButton::clicked, this, &LayerProfilePanel::profileRequested);
  connect(cancel_, &QPushButton::clicked, this, &LayerProfilePanel::cancelProfile);
  connect(clear_, &QPushButton::clicked, this, &LayerProfilePanel::clearProfile);
  connect(stored_, &QComboBox::activated, this, &LayerProfilePanel::onStoredPicked);
  connect(storedOther_, &QComboBox::activated, this, &LayerProfilePanel::onStoredPicked);
  connect(deleteStored_, &QPushButton::clicked, this, [this] {
    if (const qint64 id = stored_->currentData().toLongLong()) emit deleteStoredRequested(id);
  });
  connect(table_, &QTableView::activated, this, [this](const QModelIndex& i) {
    const graph::NodeId id = i.data(kNodeRole).toLongLong();
    if (doc_->graph().contains(id)) emit nodeActivated(id);
  });
  // An edit makes the figures stale: moving nodes does not.
  connect(doc_, &GraphDocument::changed, this, [this] {
    if (shown_ && !worker_ && !sameLayers(profiled_, doc_->graph())) {
      clearProfile();
      summary_->setText(tr("The graph was edited: profile it again."));
    }
  });
  fillStoredCombos();
  setDevices(list_devices());
}

LayerProfilePanel::~LayerProfilePanel() {
  cancelled_ = true;
  if (worker_) {
    worker_->wait();
    delete worker_;
  }
}

void LayerProfilePanel::setDevices(const std::vector<DeviceInfo>& devices) {
  devices_ = devices;
  fillDeviceCombos();
  updateButtons();
}

void LayerProfilePanel::fillDeviceCombos() {
  const QString device = device_->currentData().toString(), other = other_->currentData().toString();
  device_->clear();
  other_->clear();
  other_->addItem(tr("—"), QString());
  for (const DeviceInfo& d : devices_) {
    const QString name = q(d.device.str());
    device_->addItem(name, name);
    device_->setItemData(device_->count() - 1, q(d.name), Qt::ToolTipRole);
    other_->addItem(name, name);
    other_->setItemData(other_->count() - 1, q(d.name), Qt::ToolTipRole);
  }
  setDevice(device);
  setOtherDevice(other);
}

bool LayerProfilePanel::setDevice(const QString& device) {
  const int i = device_->findData(device);
  if (i >= 0) device_->setCurrentIndex(i);
  return i >= 0;
}

bool LayerProfilePanel::setOtherDevice(const QString& device) {
  const int i = other_->findData(device);
  if (i >= 0) other_->setCurrentIndex(i);
  return i >= 0;
}

void LayerProfilePanel::setSteps(int steps, int warmup) {
  steps_ = steps;
  warmup_ = warmup;
}

void LayerProfilePanel::setBlocked(const QString& reason) {
  blocked_ = reason;
  updateButtons();
}

void LayerProfilePanel::updateButtons() {
  const bool can = !worker_ && blocked_.isEmpty() && device_->count() > 0;
  profile_->setEnabled(can);
  profile_->setToolTip(!blocked_.isEmpty() ? blocked_
                       : device_->count() == 0
                           ? tr("No device was found")
                           : tr("Times each layer's forward and backward in a few training steps at the analyzer's "
                                "batch size and type, on a worker thread"));
  cancel_->setEnabled(worker_ != nullptr && !cancelled_);
  clear_->setEnabled(!worker_ && shown_);
  device_->setEnabled(!worker_);
  other_->setEnabled(!worker_);
  stored_->setEnabled(!worker_ && !storedProfiles_.empty());
  storedOther_->setEnabled(!worker_ && !storedProfiles_.empty());
  deleteStored_->setEnabled(!worker_ && stored_->currentData().toLongLong() != 0);
}

void LayerProfilePanel::profile(int batch, const QString& precision) {
  if (worker_ || !blocked_.isEmpty() || device_->count() == 0) return;
  clearProfile();
  cancelled_ = false;
  results_.clear();
  QStringList devices{device_->currentData().toString()};
  const QString other = other_->currentData().toString();
  if (!other.isEmpty()) devices << other;  // the same device twice: how much the figures vary
  graph::ProfileOptions o;
  o.batch = batch;
  o.precision = precision.toStdString();
  o.steps = steps_;
  o.warmup = warmup_;
  profiled_ = doc_->graph();
  // Copies: the worker never touches the document, which the user may edit meanwhile.
  worker_ = QThread::create([this, g = profiled_, devices, o] {
    for (const QString& d : devices) {
      if (cancelled_) break;
      Result r{d, {}, {}};
      try {
        r.profile = graph::profile_layers(g, d.toStdString(), o, [this] { return cancelled_.load(); });
      } catch (const std::exception& e) {
        r.error = QString::fromUtf8(e.what());
      }
      QMetaObject::invokeMethod(this, [this, r] { results_.push_back(r); }, Qt::QueuedConnection);
    }
  });
  worker_->setObjectName("kiln-analyzer-profile");
  connect(worker_, &QThread::finished, this, &LayerProfilePanel::onWorkerFinished);
  worker_->start();
  summary_->setText(tr("Profiling %1 at batch %2, %3 ...").arg(devices.join(tr(" then ")), QString::number(batch), precision));
  updateButtons();
  emit profilingChanged(true);
}

void LayerProfilePanel::cancelProfile() {
  if (!worker_) return;
  cancelled_ = true;
  summary_->setText(tr("Cancelling after the current step ..."));
  updateButtons();
}

void LayerProfilePanel::clearProfile() {
  if (worker_) return;
  model_->setRowCount(0);
  table_->setColumnHidden(OtherTotal, true);
  table_->setColumnHidden(Ratio, true);
  table_->setColumnHidden(Difference, true);
  summary_->clear();
  shown_ = false;
  shownStored_ = 0;
  stored_->setCurrentIndex(0);
  storedOther_->setCurrentIndex(0);
  if (!heat_.empty()) {
    heat_.clear();
    emit heatChanged();
  }
  updateButtons();
}

void LayerProfilePanel::onWorkerFinished() {
  // Queued after every result the worker posted (same sender thread, same receiver).
  worker_->deleteLater();
  worker_ = nullptr;
  const bool cancelled = cancelled_;
  cancelled_ = false;
  shown_ = true;
  if (!sameLayers(profiled_, doc_->graph())) {
    summary_->setText(tr("The graph was edited while it was profiled: profile it again."));
  } else if (results_.empty() || (cancelled && results_.front().error.isEmpty() && results_.front().profile.steps == 0)) {
    summary_->setText(tr("Cancelled before a step was timed."));
  } else {
    show(results_);
    for (const Result& r : results_)
      if (r.error.isEmpty() && r.profile.steps > 0) emit profileMeasured(r.profile);
  }
  updateButtons();
  emit profilingChanged(false);
  emit profileFinished();
}

void LayerProfilePanel::show(const std::vector<Result>& results) {
  const Result& a = results.front();
  if (!a.error.isEmpty()) {
    summary_->setText(tr("%1: failed: %2").arg(a.device, a.error));
    return;
  }
  const graph::LayerProfile& p = a.profile;
  // The second device's total per node, when it ran.
  const Result* b = results.size() > 1 ? &results[1] : nullptr;
  // Matched by name: a stored profile of another graph version has its own node ids.
  std::map<std::string, double> otherTotal;
  if (b && b->error.isEmpty() && b->profile.steps > 0)
    for (const graph::LayerTime& l : b->profile.layers) otherTotal[l.name] = l.total_ms();
  const bool side = !otherTotal.empty();
  if (side) {
    model_->setHeaderData(OtherTotal, Qt::Horizontal, tr("%1 total ms").arg(b->device));
    model_->setHeaderData(Ratio, Qt::Horizontal, tr("vs %1").arg(b->device));
    model_->setHeaderData(Difference, Qt::Horizontal, tr("Δ ms on %1").arg(b->device));
  }
  double maxShare = 0;
  for (const graph::LayerTime& l : p.layers) maxShare = std::max(maxShare, p.share_percent(l));
  for (const graph::LayerTime& l : p.layers) {
    const double share = p.share_percent(l);
    QList<QStandardItem*> row{
        cell(q(l.name), q(l.name), l.node, false),
        cell(q(l.op), q(l.op), l.node, false),
        cell(ms(l.forward_ms), l.forward_ms, l.node, true),
        cell(l.has_backward ? ms(l.backward_ms) : QString("-"), l.backward_ms, l.node, true),
        cell(ms(l.total_ms()), l.total_ms(), l.node, true),
        cell(QString::number(share, 'f', 1), share, l.node, true),
        cell(q(graph::bytes_str(int64_t(l.output_bytes))), qulonglong(l.output_bytes), l.node, true)};
    row[Share]->setBackground(heatColor(maxShare > 0 ? share / maxShare : 0));
    row[Share]->setForeground(QColor(0x20, 0x20, 0x20));
    const auto o = otherTotal.find(l.name);
    if (o != otherTotal.end()) {
      // ratio = this device's time over the other's: above 1 the other is faster.
      const double ratio = o->second > 0 ? l.total_ms() / o->second : 0;
      const double diff = o->second - l.total_ms();
      row << cell(ms(o->second), o->second, l.node, true) << cell(ratioText(ratio, b->device), ratio, l.node, false)
          << cell((diff > 0 ? "+" : "") + ms(diff), diff, l.node, true);
    } else {
      row << cell("-", 0.0, l.node, true) << cell("-", 0.0, l.node, false) << cell("-", 0.0, l.node, true);
    }
    model_->appendRow(row);
    // A stored profile's node may be gone from the graph, or be another node now.
    const graph::Graph& g = doc_->graph();
    if (!g.contains(l.node) || g.node(l.node).name != l.name) continue;
    heat_[l.node] = NodeHeat{maxShare > 0 ? share / maxShare : 0, tr("%1 ms").arg(QString::number(l.total_ms(), 'f', 2)),
                             tr("profile on %1: forward %2 ms, backward %3 ms, %4% of the per-layer sum")
                                 .arg(q(p.device), ms(l.forward_ms), ms(l.backward_ms), QString::number(share, 'f', 1))};
  }
  table_->setColumnHidden(OtherTotal, !side);
  table_->setColumnHidden(Ratio, !side);
  table_->setColumnHidden(Difference, !side);
  table_->resizeColumnsToContents();
  QStringList lines{sumLine(p)};
  if (b) {
    if (!b->error.isEmpty()) lines << tr("%1: failed: %2").arg(b->device, b->error);
    else if (b->profile.steps > 0) {
      lines << sumLine(b->profile);
      if (b->profile.layer_sum_ms() > 0)
        lines << tr("per-layer sum %1").arg(ratioText(p.layer_sum_ms() / b->profile.layer_sum_ms(), b->device));
    } else lines << tr("%1: cancelled before a step was timed").arg(b->device);
  }
  summary_->setText(lines.join("\n"));
  emit heatChanged();
}

}  // namespace kiln::studio
