#include "widgets/graph/device_compare_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QMessageBox>
#include <QHeaderView>
#include <QSaveFile>
#include <QVBoxLayout>
#include <qcustomplot.h>

namespace kiln::studio {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QString opt(const std::optional<double>& v, char format, int precision, const QString& suffix = {}) {
  return v ? QString::number(*v, format, precision) + suffix : QStringLiteral("n/a");
}

QTableWidgetItem* cell(const QString& text, bool number) {
  auto* it = new QTableWidgetItem(text);
  it->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
  if (number) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return it;
}

}  // namespace

DeviceComparePanel::DeviceComparePanel(GraphDocument* document, QWidget* parent) : QWidget(parent), doc_(document) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Batch size"), this));
  batch_ = new QSpinBox(this);
  batch_->setObjectName("compareBatch");
  batch_->setRange(1, 65536);
  batch_->setValue(32);
  top->addWidget(batch_);
  run_ = new QPushButton(tr("Run"), this);
  run_->setObjectName("compareRun");
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName("compareCancel");
  export_ = new QPushButton(tr("Export..."), this);
  export_->setObjectName("compareExport");
  top->addWidget(run_);
  top->addWidget(cancel_);
  top->addWidget(export_);
  top->addStretch(1);
  layout->addLayout(top);
  targets_ = new QListWidget(this);
  targets_->setObjectName("compareTargets");
  targets_->setMaximumHeight(120);
  layout->addWidget(targets_);
  status_ = new QLabel(tr("Check devices and precisions, then Run."), this);
  status_->setObjectName("compareStatus");
  layout->addWidget(status_);
  table_ = new QTableWidget(0, ColumnCount, this);
  table_->setObjectName("compareTable");
  table_->setHorizontalHeaderLabels({tr("Device"), tr("Precision"), tr("Name"), tr("Infer ms"), tr("Infer samples/s"),
                                     tr("Train ms"), tr("Train samples/s"), tr("Peak MiB"), tr("Infer ×"),
                                     tr("Train ×"), tr("Max |Δ output|"), tr("Max |Δ grad|"), tr("Status")});
  table_->verticalHeader()->hide();
  layout->addWidget(table_, 1);
  chart_ = new QCustomPlot(this);
  chart_->setObjectName("compareChart");
  chart_->setMinimumHeight(160);
  chart_->yAxis->setLabel(tr("samples/s"));
  layout->addWidget(chart_, 1);
  connect(run_, &QPushButton::clicked, this, &DeviceComparePanel::run);
  connect(cancel_, &QPushButton::clicked, this, &DeviceComparePanel::cancel);
  connect(export_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Comparison"), "comparison.csv",
                                                      tr("CSV (*.csv);;JSON (*.json)"));
    QString error;
    if (!path.isEmpty() && !exportTo(path, &error)) QMessageBox::warning(this, tr("Export Comparison"), error);
  });
  connect(targets_, &QListWidget::itemChanged, this, &DeviceComparePanel::updateButtons);
  connect(doc_, &GraphDocument::changed, this, &DeviceComparePanel::updateButtons);
  updateButtons();
}

DeviceComparePanel::~DeviceComparePanel() {
  if (worker_) {
    cancelled_ = true;
    worker_->wait();
  }
}

void DeviceComparePanel::setDevices(const std::vector<DeviceInfo>& devices) {
  targets_->clear();
  for (const DeviceInfo& d : devices) {
    std::vector<std::string> precisions{"f32"};
    try {
      precisions = graph::compare_precisions(d.device);
    } catch (const std::exception&) {  // a device gone since it was listed: its f32 row will say so
    }
    for (const std::string& p : precisions) {
      auto* it = new QListWidgetItem(QString("%1 %2 — %3").arg(q(d.device.str()), q(p), q(d.name)), targets_);
      it->setData(kTargetRole, q(d.device.str() + "|" + p));
      it->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled);
      it->setCheckState(p == "f32" ? Qt::Checked : Qt::Unchecked);
    }
  }
  updateButtons();
}

void DeviceComparePanel::setIterations(int steps, int warmup) {
  options_.steps = steps;
  options_.warmup = warmup;
}

void DeviceComparePanel::updateButtons() {
  bool any = false;
  for (int i = 0; i < targets_->count(); ++i) any = any || targets_->item(i)->checkState() == Qt::Checked;
  const bool ok = doc_->analysis().ok();
  run_->setEnabled(!worker_ && ok && any);
  run_->setToolTip(!ok    ? tr("The graph has problems (see Problems)")
                   : !any ? tr("Check at least one device and precision")
                          : tr("Inference and a training step on each checked device, on a worker thread"));
  cancel_->setEnabled(worker_ != nullptr && !cancelled_);
  export_->setEnabled(!worker_ && !doc_result_.rows.empty());
}

void DeviceComparePanel::clear() {
  if (worker_) return;
  doc_result_ = graph::CompareDocument{};
  render();
  status_->setText(tr("Check devices and precisions, then Run."));
  updateButtons();
}

void DeviceComparePanel::run() {
  if (worker_ || !doc_->analysis().ok()) return;
  std::vector<graph::CompareTarget> targets;
  for (int i = 0; i < targets_->count(); ++i)
    if (targets_->item(i)->checkState() == Qt::Checked) {
      const QStringList parts = targets_->item(i)->data(kTargetRole).toString().split('|');
      targets.push_back({parts.value(0).toStdString(), parts.value(1).toStdString()});
    }
  if (targets.empty()) return;
  options_.batch = batch_->value();
  cancelled_ = false;
  doc_result_ = graph::CompareDocument{};
  doc_result_.model = doc_->graph().name;
  doc_result_.precisions = "studio";
  doc_result_.options = options_;
  render();
  // Copies: the worker never touches the document, which the user may edit meanwhile.
  worker_ = QThread::create([this, g = doc_->graph(), targets, o = options_] {
    std::vector<graph::CompareRow> rows;
    try {
      rows = graph::compare_devices(
          g, targets, o, [this] { return cancelled_.load(); },
          [this](const graph::CompareRow& r) {
            QMetaObject::invokeMethod(this, [this, r] { addRow(r); }, Qt::QueuedConnection);
          });
    } catch (const std::exception& e) {  // the reference could not be built: one row says why
      graph::CompareRow r;
      r.device = "cpu";
      r.error = e.what();
      rows.push_back(r);
    }
    QMetaObject::invokeMethod(this, [this, rows] { onWorkerFinished(rows); }, Qt::QueuedConnection);
  });
  worker_->setObjectName("kiln-device-compare");
  connect(worker_, &QThread::finished, worker_, &QObject::deleteLater);
  worker_->start();
  status_->setText(tr("Comparing %n target(s) at batch %1 ...", nullptr, int(targets.size())).arg(options_.batch));
  updateButtons();
}

void DeviceComparePanel::cancel() {
  if (!worker_) return;
  cancelled_ = true;
  status_->setText(tr("Cancelling after the current iteration ..."));
  updateButtons();
}

void DeviceComparePanel::addRow(const graph::CompareRow& row) {
  doc_result_.rows.push_back(row);
  render();
}

void DeviceComparePanel::onWorkerFinished(std::vector<graph::CompareRow> rows) {
  worker_->wait();  // its lambda has returned: only the thread's end remains
  worker_ = nullptr;  // deleteLater on finished
  const bool cancelled = cancelled_;
  cancelled_ = false;
  doc_result_.rows = std::move(rows);  // with the speed-ups, which are known at the end
  doc_result_.interrupted = cancelled;
  render();
  status_->setText(cancelled ? tr("Cancelled; the rows below are what was measured.")
                             : tr("Compared %n target(s).", nullptr, int(doc_result_.rows.size())));
  updateButtons();
  const graph::CompareDocument& d = doc_result_;
  emit comparisonFinished(q(graph::compare_json(d.rows, d.model, d.precisions, d.options, d.interrupted)),
                          int(d.options.batch));
}

bool DeviceComparePanel::showDocument(const QString& json) {
  try {
    doc_result_ = graph::compare_from_json(json.toStdString());
  } catch (const std::exception&) {
    return false;
  }
  batch_->setValue(int(doc_result_.options.batch));
  render();
  status_->setText(tr("Stored comparison at batch %1.").arg(doc_result_.options.batch));
  updateButtons();
  return true;
}

void DeviceComparePanel::render() {
  const std::vector<graph::CompareRow>& rows = doc_result_.rows;
  table_->setRowCount(int(rows.size()));
  QVector<double> ticks, infer, train;
  QVector<QString> labels;
  for (int i = 0; i < int(rows.size()); ++i) {
    const graph::CompareRow& r = rows[size_t(i)];
    const bool timed = r.error.empty() && (r.infer_steps > 0 || r.train_steps > 0);
    auto num = [&](double v, int prec) { return timed && v > 0 ? QString::number(v, 'f', prec) : QString("-"); };
    table_->setItem(i, DeviceCol, cell(q(r.device), false));
    table_->setItem(i, PrecisionCol, cell(q(r.precision), false));
    table_->setItem(i, NameCol, cell(q(r.name), false));
    table_->setItem(i, InferMs, cell(num(r.infer_ms, 2), true));
    table_->setItem(i, InferRate, cell(num(r.infer_samples_per_second, 0), true));
    table_->setItem(i, TrainMs, cell(num(r.train_ms, 2), true));
    table_->setItem(i, TrainRate, cell(num(r.train_samples_per_second, 0), true));
    const std::optional<double> mib =
        r.peak_bytes ? std::optional<double>(double(*r.peak_bytes) / (1024.0 * 1024.0)) : std::nullopt;
    table_->setItem(i, Peak, cell(opt(mib, 'f', 1), true));
    table_->setItem(i, InferSpeedup, cell(opt(r.infer_speedup_vs_cpu, 'f', 2, "×"), true));
    table_->setItem(i, TrainSpeedup, cell(opt(r.train_speedup_vs_cpu, 'f', 2, "×"), true));
    table_->setItem(i, OutputDiff, cell(opt(r.max_output_diff, 'e', 2), true));
    table_->setItem(i, GradDiff, cell(opt(r.max_grad_diff, 'e', 2), true));
    const QString status = !r.error.empty() ? tr("failed: %1").arg(q(r.error))
                           : r.cancelled    ? tr("cancelled")
                                            : tr("done");
    table_->setItem(i, Status, cell(status, false));
    table_->item(i, Status)->setToolTip(status);
    ticks << i + 1;
    labels << q(r.device + " " + r.precision);
    infer << (timed ? r.infer_samples_per_second : 0);
    train << (timed ? r.train_samples_per_second : 0);
  }
  table_->resizeColumnsToContents();
  chart_->clearPlottables();
  auto* ib = new QCPBars(chart_->xAxis, chart_->yAxis);
  ib->setName(tr("inference"));
  ib->setWidth(0.35);
  auto* tb = new QCPBars(chart_->xAxis, chart_->yAxis);
  tb->setName(tr("training"));
  tb->setWidth(0.35);
  tb->setBrush(QColor(230, 140, 60));
  QVector<double> left, right;
  for (double t : ticks) {
    left << t - 0.18;
    right << t + 0.18;
  }
  ib->setData(left, infer);
  tb->setData(right, train);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  ticker->addTicks(ticks, labels);
  chart_->xAxis->setTicker(ticker);
  chart_->xAxis->setRange(0.4, double(rows.size()) + 0.6);
  double top = 1;
  for (int i = 0; i < infer.size(); ++i) top = std::max({top, infer[i], train[i]});
  chart_->yAxis->setRange(0, top * 1.1);
  chart_->legend->setVisible(!rows.empty());
  chart_->replot(QCustomPlot::rpQueuedReplot);
}

bool DeviceComparePanel::exportTo(const QString& path, QString* error) const {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (doc_result_.rows.empty()) return fail(tr("no comparison to export"));
  const graph::CompareDocument& d = doc_result_;
  const std::string text = path.endsWith(".json", Qt::CaseInsensitive)
                               ? graph::compare_json(d.rows, d.model, d.precisions, d.options, d.interrupted)
                               : graph::compare_csv(d.rows);
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return fail(tr("cannot write %1: %2").arg(path, f.errorString()));
  f.write(text.data(), qint64(text.size()));
  if (!f.commit()) return fail(tr("cannot write %1: %2").arg(path, f.errorString()));
  return true;
}

}  // namespace kiln::studio
