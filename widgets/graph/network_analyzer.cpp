#include "widgets/graph/network_analyzer.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>

#include "engine/core/registry.h"

namespace kiln::studio {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// A cell showing `text` that sorts by `value` (a number or the text itself).
QStandardItem* cell(const QString& text, const QVariant& value, graph::NodeId node, bool number) {
  auto* item = new QStandardItem(text);
  item->setData(value, NetworkAnalyzer::kSortRole);
  item->setData(qlonglong(node), NetworkAnalyzer::kNodeRole);
  item->setEditable(false);
  if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QTableWidgetItem* timeCell(const QString& text, bool number) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(item->flags() & ~Qt::ItemIsEditable);
  if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

}  // namespace

NetworkAnalyzer::NetworkAnalyzer(GraphDocument* document, QWidget* parent)
    : QWidget(parent), doc_(document), devices_(list_devices()) {
  batch_ = new QSpinBox(this);
  batch_->setObjectName("analyzerBatch");
  batch_->setRange(1, 1 << 20);
  batch_->setValue(kDefaultBatch);
  dtype_ = new QComboBox(this);
  dtype_->setObjectName("analyzerDType");
  dtype_->addItems({"f32", "bf16", "f16"});
  optimizer_ = new QComboBox(this);
  optimizer_->setObjectName("analyzerOptimizer");
  optimizer_->addItems({"adam", "adamw", "sgd", "rmsprop"});
  measure_ = new QPushButton(tr("Measure Step Time"), this);
  measure_->setObjectName("analyzerMeasure");
  measure_->setToolTip(tr("A few training steps of the graph at this batch size on each device, on a worker thread"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName("analyzerCancel");
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  measureStatus_ = new QLabel(this);
  measureStatus_->setObjectName("analyzerMeasureStatus");

  model_ = new QStandardItemModel(0, ColumnCount, this);
  model_->setHorizontalHeaderLabels({tr("Name"), tr("Op"), tr("Output"), tr("Parameters"), tr("MACs"), tr("Activations")});
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(kSortRole);
  layers_ = new QTableView(this);
  layers_->setObjectName("analyzerLayers");
  layers_->setModel(proxy_);
  layers_->setSortingEnabled(true);
  layers_->sortByColumn(Name, Qt::AscendingOrder);  // graph order until a header is clicked
  layers_->setSelectionBehavior(QAbstractItemView::SelectRows);
  layers_->verticalHeader()->hide();
  layers_->horizontalHeader()->setStretchLastSection(true);
  warnings_ = new QListWidget(this);
  warnings_->setObjectName("analyzerWarnings");
  warnings_->setWordWrap(true);
  times_ = new QTableWidget(0, 6, this);
  times_->setObjectName("analyzerTimes");
  times_->setHorizontalHeaderLabels({tr("Device"), tr("Name"), tr("ms/step"), tr("images/s"), tr("Peak memory"), tr("Status")});
  times_->verticalHeader()->hide();
  times_->horizontalHeader()->setStretchLastSection(true);
  profile_ = new LayerProfilePanel(doc_, this);
  profile_->setDevices(devices_);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Batch"), this));
  controls->addWidget(batch_);
  controls->addWidget(new QLabel(tr("Type"), this));
  controls->addWidget(dtype_);
  controls->addWidget(new QLabel(tr("Optimizer"), this));
  controls->addWidget(optimizer_);
  controls->addStretch(1);
  controls->addWidget(measureStatus_);
  controls->addWidget(measure_);
  controls->addWidget(cancel_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(layers_);
  split->addWidget(warnings_);
  split->addWidget(times_);
  split->addWidget(profile_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(3, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(controls);
  layout->addWidget(status_);
  layout->addWidget(split, 1);

  auto activateNode = [this](graph::NodeId id) {
    if (id >= 0 && doc_->graph().contains(id)) emit nodeActivated(id);
  };
  connect(layers_, &QTableView::activated, this,
          [activateNode](const QModelIndex& i) { activateNode(i.data(kNodeRole).toLongLong()); });
  connect(warnings_, &QListWidget::itemActivated, this,
          [activateNode](QListWidgetItem* i) { activateNode(i->data(kNodeRole).toLongLong()); });
  connect(warnings_, &QListWidget::itemClicked, this,
          [activateNode](QListWidgetItem* i) { activateNode(i->data(kNodeRole).toLongLong()); });
  connect(doc_, &GraphDocument::changed, this, &NetworkAnalyzer::refresh);
  connect(batch_, &QSpinBox::valueChanged, this, &NetworkAnalyzer::refresh);
  connect(dtype_, &QComboBox::currentIndexChanged, this, &NetworkAnalyzer::refresh);
  connect(optimizer_, &QComboBox::currentIndexChanged, this, &NetworkAnalyzer::refresh);
  connect(measure_, &QPushButton::clicked, this, &NetworkAnalyzer::measure);
  connect(cancel_, &QPushButton::clicked, this, &NetworkAnalyzer::cancelMeasurement);
  connect(profile_, &LayerProfilePanel::profileRequested, this, &NetworkAnalyzer::profile);
  connect(profile_, &LayerProfilePanel::profilingChanged, this, &NetworkAnalyzer::updateButtons);
  connect(profile_, &LayerProfilePanel::nodeActivated, this, activateNode);
  refresh();
}

NetworkAnalyzer::~NetworkAnalyzer() {
  cancelled_ = true;
  if (worker_) {
    worker_->wait();
    delete worker_;
  }
}

void NetworkAnalyzer::setDevices(const std::vector<DeviceInfo>& devices) {
  devices_ = devices;
  profile_->setDevices(devices);
  refresh();
}

void NetworkAnalyzer::setDType(const QString& name) {
  const int i = dtype_->findText(name);
  if (i >= 0) dtype_->setCurrentIndex(i);
}

void NetworkAnalyzer::setMeasureAllowed(bool allowed, const QString& reason) {
  measureAllowed_ = allowed;
  blockedReason_ = reason;
  if (!allowed) {  // a run starting: what runs stops after its current step
    cancelMeasurement();
    profile_->cancelProfile();
  }
  updateButtons();
}

void NetworkAnalyzer::setSummary(const QString& text) {
  if (text == summary_) return;
  summary_ = text;
  emit summaryChanged(text);
}

void NetworkAnalyzer::refresh() {
  const graph::Graph& g = doc_->graph();
  const graph::Analysis& a = doc_->analysis();
  graph::MemoryOptions o;
  o.batch = batch_->value();
  o.dtype = dtype_from_name(dtype_->currentText().toStdString());
  o.optimizer = optimizer_->currentText().toStdString();
  memory_ = graph::estimate_memory(g, a, o);  // the widgets only offer valid options
  warningData_ = a.ok() ? graph::network_warnings(g, a, memory_, o.batch, devices_) : std::vector<graph::Warning>{};

  std::vector<graph::NodeId> order;
  try {
    order = g.topological_order();
  } catch (const Error&) {  // a cycle: the analysis reports it; list the nodes by id
    for (const graph::Node& n : g.nodes()) order.push_back(n.id);
  }
  struct Row {
    graph::NodeId id;
    QString name, op, outputs;
    int64_t parameters, macs, bytes;  // bytes -1: unknown
  };
  std::vector<Row> rows;
  for (graph::NodeId id : order) {
    const auto it = a.nodes.find(id);
    if (it == a.nodes.end()) continue;  // cannot be inferred: its problem is in the Problems dock
    const auto bytes = memory_.activation_bytes.find(id);
    QStringList outs;
    for (const graph::TensorType& t : it->second.outputs) outs << q(t.str());
    rows.push_back({id, q(g.node(id).name), q(g.node(id).op), outs.join(", "), it->second.parameters, it->second.macs,
                    bytes == memory_.activation_bytes.end() ? -1 : bytes->second});
  }
  // The table and the warnings are rebuilt only when what they show changed: moving a node
  // on the canvas (a document change too) leaves them, their sorting and selection alone.
  QStringList shown;
  for (const Row& r : rows)
    shown << QString("%1|%2|%3|%4|%5|%6|%7").arg(r.id).arg(r.name, r.op, r.outputs).arg(r.parameters).arg(r.macs).arg(r.bytes);
  for (const graph::Warning& w : warningData_) shown << QString::number(w.node) + q(w.message);
  if (!a.ok()) shown << QString("problems %1").arg(a.problems.size());
  if (shown == shown_) {
    updateSummary();
    return;
  }
  shown_ = shown;

  model_->setRowCount(0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    model_->appendRow({cell(r.name, int(i), r.id, false),  // the name column sorts in graph order
                       cell(r.op, r.op, r.id, false),
                       cell(r.outputs.isEmpty() ? QStringLiteral("-") : r.outputs, r.outputs, r.id, false),
                       cell(q(graph::count_str(r.parameters)), qlonglong(r.parameters), r.id, true),
                       cell(q(graph::macs_str(r.macs)), qlonglong(r.macs), r.id, true),
                       cell(r.bytes < 0 ? QStringLiteral("?") : q(graph::bytes_str(r.bytes)), qlonglong(r.bytes), r.id, true)});
  }
  layers_->resizeColumnsToContents();

  warnings_->clear();
  for (const graph::Warning& w : warningData_) {
    auto* item = new QListWidgetItem(QStringLiteral("⚠ ") + q(w.message), warnings_);
    item->setData(kNodeRole, qlonglong(w.node));
    item->setToolTip(q(w.message));
    item->setForeground(QColor(0xe0, 0xa0, 0x40));
  }
  if (!a.ok()) {
    auto* item = new QListWidgetItem(tr("The graph has %n problem(s) (see Problems): the figures cover the nodes "
                                        "that can be inferred; no warnings, no measurement.", nullptr,
                                        int(a.problems.size())), warnings_);
    item->setData(kNodeRole, qlonglong(a.problems.front().node));
  } else if (warningData_.empty()) {
    new QListWidgetItem(tr("No warnings."), warnings_);
  }
  updateSummary();
}

void NetworkAnalyzer::updateSummary() {
  const graph::Analysis& a = doc_->analysis();
  const int batch = batch_->value();
  if (!a.ok()) {
    setSummary(tr("Analyzer: the graph has %n problem(s)", nullptr, int(a.problems.size())));
  } else {
    setSummary(tr("%1 parameters · %2 MACs/sample · training ≈ %3 at batch %4")
                   .arg(q(graph::count_str(a.total_parameters)), q(graph::macs_str(a.total_macs)),
                        q(graph::bytes_str(memory_.training)))
                   .arg(batch));
  }
  status_->setText(tr("Totals: %1 parameters (%2), %3 MACs per sample; training memory ≈ %4 = activations %5 + "
                      "parameters %6 + gradients %7 + optimizer state %8")
                       .arg(q(graph::count_str(a.total_parameters)), q(graph::bytes_str(memory_.parameters)),
                            q(graph::macs_str(a.total_macs)), q(graph::bytes_str(memory_.training)),
                            q(graph::bytes_str(memory_.activations)), q(graph::bytes_str(memory_.parameters)),
                            q(graph::bytes_str(memory_.gradients)), q(graph::bytes_str(memory_.optimizer_state))));
  updateButtons();
}

void NetworkAnalyzer::updateButtons() {
  const bool ok = doc_->analysis().ok() && !devices_.empty();
  measure_->setEnabled(!worker_ && ok && measureAllowed_ && !profile_->isProfiling());
  measure_->setToolTip(!measureAllowed_ ? blockedReason_
                       : !ok ? tr("The graph has problems (see Problems) or no device was found")
                             : tr("A few training steps of the graph at this batch size on each device, on a worker thread"));
  cancel_->setEnabled(worker_ != nullptr && !cancelled_);
  profile_->setBlocked(!measureAllowed_ ? blockedReason_
                       : !doc_->analysis().ok() ? tr("The graph has problems (see Problems)")
                       : worker_               ? tr("The step time is being measured")
                                               : QString());
}

void NetworkAnalyzer::profile() {
  if (worker_ || !doc_->analysis().ok() || !measureAllowed_) return;
  profile_->profile(batch_->value(), dtype_->currentText());
}

void NetworkAnalyzer::measure() {
  if (worker_ || !doc_->analysis().ok() || devices_.empty() || !measureAllowed_ || profile_->isProfiling()) return;
  times_->setRowCount(0);
  cancelled_ = false;
  graph::StepTimeOptions o;
  o.batch = batch_->value();
  o.optimizer = optimizer_->currentText().toStdString();
  // Copies: the worker never touches the document, which the user may edit meanwhile.
  worker_ = QThread::create([this, g = doc_->graph(), devices = devices_, o] {
    for (const DeviceInfo& d : devices) {
      if (cancelled_) break;
      TimeRow row{d, {}, {}};
      try {
        row.time = graph::measure_step_time(g, d.device, o, [this] { return cancelled_.load(); });
      } catch (const std::exception& e) {
        row.error = QString::fromUtf8(e.what());
      }
      QMetaObject::invokeMethod(this, [this, row] { addTimeRow(row); }, Qt::QueuedConnection);
    }
  });
  worker_->setObjectName("kiln-analyzer-measure");
  connect(worker_, &QThread::finished, this, &NetworkAnalyzer::onWorkerFinished);
  worker_->start();
  measureStatus_->setText(tr("Measuring %n device(s) at batch %1 ...", nullptr, int(devices_.size())).arg(o.batch));
  updateButtons();
}

void NetworkAnalyzer::cancelMeasurement() {
  if (!worker_) return;
  cancelled_ = true;
  measureStatus_->setText(tr("Cancelling after the current step ..."));
  updateButtons();
}

void NetworkAnalyzer::addTimeRow(const TimeRow& r) {
  const int row = times_->rowCount();
  times_->insertRow(row);
  const graph::StepTime& t = r.time;
  times_->setItem(row, 0, timeCell(q(r.device.device.str()), false));
  times_->setItem(row, 1, timeCell(q(r.device.name), false));
  const bool some = r.error.isEmpty() && t.steps > 0;
  times_->setItem(row, 2, timeCell(some ? QString::number(t.ms_per_step, 'f', 2) : QString("-"), true));
  times_->setItem(row, 3, timeCell(some ? QString::number(t.images_per_second, 'f', 0) : QString("-"), true));
  times_->setItem(row, 4, timeCell(t.peak_known ? q(graph::bytes_str(int64_t(t.peak_bytes))) : tr("n/a"), true));
  const QString status = !r.error.isEmpty() ? tr("failed: %1").arg(r.error)
                         : t.cancelled      ? tr("cancelled after %n step(s)", nullptr, t.steps)
                                            : tr("%n step(s)", nullptr, t.steps);
  times_->setItem(row, 5, timeCell(status, false));
  times_->item(row, 5)->setToolTip(status);
  times_->resizeColumnsToContents();
}

void NetworkAnalyzer::onWorkerFinished() {
  // Queued after every addTimeRow the worker posted (same sender thread, same receiver).
  worker_->deleteLater();
  worker_ = nullptr;
  const bool cancelled = cancelled_;
  cancelled_ = false;
  refresh();
  measureStatus_->setText(cancelled ? tr("Cancelled; the rows below are what was measured.")
                             : tr("Measured %n device(s).", nullptr, times_->rowCount()));
  updateButtons();
  emit measurementFinished();
}

}  // namespace kiln::studio
