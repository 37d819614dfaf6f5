#include "app/studio/new_sweep_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include "app/studio/sweep_space.h"
#include "engine/graph/op_schema.h"

namespace kiln::studio {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// A sweep error as the form words it: the CLI's "--param lr=abc: ..." reads "lr=abc: ...".
QString formText(QString m) {
  if (m.startsWith("--param ")) m.remove(0, 8);
  return m;
}

}  // namespace

NewSweepDialog::NewSweepDialog(const graph::Graph& graph, const std::vector<std::string>& devices,
                               const std::string& checkedDevice, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("New Sweep"));
  setObjectName("newSweepDialog");
  names_ << "lr" << "batch-size" << "optimizer" << "scheduler" << "epochs" << "weight-decay";
  for (const graph::Node& n : graph.nodes()) {
    const graph::OpSchema* schema = graph::OpRegistry::global().find(n.op);
    if (!schema) continue;
    for (const graph::AttrSpec& a : schema->attributes)
      if (a.type == graph::AttrType::Int || a.type == graph::AttrType::Float) names_ << q(n.name + "." + a.name);
  }
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("Parameters: a list (64,128; sgd,adam) or a range LO:HI[:log][:POINTS], "
                                  "as kiln sweep --param"),
                               this));
  table_ = new QTableWidget(0, 2, this);
  table_->setObjectName("sweepParams");
  table_->setHorizontalHeaderLabels({tr("Parameter"), tr("Values")});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setMinimumHeight(120);
  layout->addWidget(table_, 1);
  auto* rowButtons = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add Parameter"), this);
  add->setObjectName("sweepAddParam");
  auto* remove = new QPushButton(tr("Remove"), this);
  remove->setObjectName("sweepRemoveParam");
  rowButtons->addWidget(add);
  rowButtons->addWidget(remove);
  rowButtons->addStretch(1);
  layout->addLayout(rowButtons);
  connect(add, &QPushButton::clicked, this, [this] { addRow("lr", ""); });
  connect(remove, &QPushButton::clicked, this, [this] {
    if (table_->currentRow() >= 0) table_->removeRow(table_->currentRow());
  });

  auto* form = new QFormLayout;
  search_ = new QComboBox(this);
  search_->setObjectName("sweepSearch");
  search_->addItems({"grid", "random"});
  form->addRow(tr("Search"), search_);
  trials_ = new QSpinBox(this);
  trials_->setObjectName("sweepTrials");
  trials_->setRange(0, 100000);
  trials_->setSpecialValueText(tr("all (grid)"));
  trials_->setToolTip(tr("Random search: the draws (at least 1). Grid search: at most this many of the grid's points"));
  form->addRow(tr("Trials"), trials_);
  seed_ = new QSpinBox(this);
  seed_->setObjectName("sweepSeed");
  seed_->setRange(0, 1 << 30);
  form->addRow(tr("Seed (random)"), seed_);
  devices_ = new QListWidget(this);
  devices_->setObjectName("sweepDevices");
  devices_->setMaximumHeight(90);
  bool checked = false;
  for (const std::string& d : devices) {
    auto* it = new QListWidgetItem(q(d), devices_);
    it->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled);
    it->setCheckState(d == checkedDevice ? Qt::Checked : Qt::Unchecked);
    checked = checked || d == checkedDevice;
  }
  if (!checked && devices_->count() > 0) devices_->item(0)->setCheckState(Qt::Checked);
  devices_->setToolTip(tr("One trial at a time on each checked device: they work through the queue in parallel"));
  form->addRow(tr("Devices"), devices_);
  objective_ = new QComboBox(this);
  objective_->setObjectName("sweepObjective");
  objective_->addItem(tr("val_accuracy (higher is better)"), "val_accuracy");
  objective_->addItem(tr("val_loss (lower is better)"), "val_loss");
  form->addRow(tr("Objective"), objective_);
  prune_ = new QSpinBox(this);
  prune_->setObjectName("sweepPruneStartup");
  prune_->setRange(0, 1000);
  prune_->setValue(2);
  prune_->setSpecialValueText(tr("never prune"));
  prune_->setToolTip(tr("Median rule: a trial worse than the median of the finished trials after an epoch is stopped, "
                        "once this many trials have finished"));
  form->addRow(tr("Prune after"), prune_);
  layout->addLayout(form);

  error_ = new QLabel(this);
  error_->setObjectName("sweepError");
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #e06c6c");
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();
  layout->addWidget(error_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
  start_ = buttons->addButton(tr("Start"), QDialogButtonBox::AcceptRole);
  start_->setObjectName("sweepStart");
  layout->addWidget(buttons);
  connect(start_, &QPushButton::clicked, this, &NewSweepDialog::tryStart);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  setParams({"lr=1e-4:1e-2:log", "batch-size=32,64"});
}

void NewSweepDialog::addRow(const QString& name, const QString& values) {
  const int row = table_->rowCount();
  table_->insertRow(row);
  auto* combo = new QComboBox(table_);
  combo->setEditable(true);
  combo->addItems(names_);
  combo->setCurrentText(name);
  table_->setCellWidget(row, NameCol, combo);
  table_->setItem(row, ValuesCol, new QTableWidgetItem(values));
}

void NewSweepDialog::setParams(const QStringList& params) {
  table_->setRowCount(0);
  for (const QString& p : params) {
    const qsizetype eq = p.indexOf('=');
    addRow(eq < 0 ? p : p.left(eq), eq < 0 ? QString() : p.mid(eq + 1));
  }
}

QStringList NewSweepDialog::params() const {
  QStringList out;
  for (int r = 0; r < table_->rowCount(); ++r) {
    const auto* combo = qobject_cast<QComboBox*>(table_->cellWidget(r, NameCol));
    const QString name = combo ? combo->currentText().trimmed() : QString();
    const QString values = table_->item(r, ValuesCol) ? table_->item(r, ValuesCol)->text().trimmed() : QString();
    if (name.isEmpty() && values.isEmpty()) continue;
    out << name + "=" + values;
  }
  return out;
}

std::vector<std::string> NewSweepDialog::devices() const {
  std::vector<std::string> out;
  for (int i = 0; i < devices_->count(); ++i)
    if (devices_->item(i)->checkState() == Qt::Checked) out.push_back(devices_->item(i)->text().toStdString());
  return out;
}

SweepRequest NewSweepDialog::request() const {
  SweepRequest r;
  for (const QString& p : params()) r.params.push_back(p.toStdString());
  r.search = search_->currentText().toStdString();
  r.trials = trials_->value();
  r.seed = static_cast<uint64_t>(seed_->value());
  r.objective = objective_->currentData().toString().toStdString();
  r.pruneStartup = prune_->value();
  return r;
}

void NewSweepDialog::showError(const QString& text, int row) {
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
  if (row >= 0) table_->selectRow(row);
}

void NewSweepDialog::tryStart() {
  showError({});
  int row = 0;
  for (int r = 0; r < table_->rowCount(); ++r) {  // each row alone, so the error points at it
    const auto* combo = qobject_cast<QComboBox*>(table_->cellWidget(r, NameCol));
    const QString name = combo ? combo->currentText().trimmed() : QString();
    const QString values = table_->item(r, ValuesCol) ? table_->item(r, ValuesCol)->text().trimmed() : QString();
    if (name.isEmpty() && values.isEmpty()) continue;
    try {
      sweep::parse_param((name + "=" + values).toStdString());
    } catch (const std::exception& e) {
      return showError(formText(QString::fromStdString(e.what())), r);
    }
    ++row;
  }
  if (row == 0) return showError(tr("Add a parameter to sweep (lr=1e-4:1e-2:log, batch-size=64,128)"));
  if (devices().empty()) return showError(tr("Check a device to run the trials on"));
  if (search_->currentText() == "random" && trials_->value() < 1)
    return showError(tr("A random search needs the number of trials (at least 1)"));
  const QString why = starter_ ? starter_(request(), devices()) : tr("no project to run a sweep in");
  if (!why.isEmpty()) return showError(formText(why));
  accept();
}

}  // namespace kiln::studio
