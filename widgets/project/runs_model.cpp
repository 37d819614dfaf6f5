#include "widgets/project/runs_model.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <cmath>
#include <cstdio>

namespace kiln::studio {

namespace {

QJsonObject parse_object(const std::string& json) {
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json));
  return doc.isObject() ? doc.object() : QJsonObject{};
}

// NaN (missing) -> empty cell.
QString fixed(double v, int decimals) { return std::isfinite(v) ? QString::number(v, 'f', decimals) : QString(); }
QString percent(double v) { return std::isfinite(v) ? QString::number(100.0 * v, 'f', 2) + " %" : QString(); }

double number(const QJsonObject& o, const char* key) {
  const QJsonValue v = o.value(key);
  return v.isDouble() ? v.toDouble() : NAN;
}

QString duration_text(qint64 seconds) {
  if (seconds < 60) return QString("%1 s").arg(seconds);
  if (seconds < 3600) return QString("%1 min %2 s").arg(seconds / 60).arg(seconds % 60, 2, 10, QChar('0'));
  return QString("%1 h %2 min").arg(seconds / 3600).arg((seconds % 3600) / 60, 2, 10, QChar('0'));
}

// Seconds since 1970 of an ISO-8601 UTC time as utc_now() writes it
// ("2026-11-29T19:26:27.123Z"), NaN for other text. Hand-parsed: QDateTime::fromString
// per run would cost most of a 1,000-run reload. Days from the civil date: Howard
// Hinnant's days_from_civil (http://howardhinnant.github.io/date_algorithms.html).
double parse_utc(const std::string& iso) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double sec = 0;
  char t = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2d%c%2d:%2d:%lf", &y, &mo, &d, &t, &h, &mi, &sec) != 7 || t != 'T' ||
      mo < 1 || mo > 12 || d < 1 || d > 31)
    return NAN;
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = double(era) * 146097 + doe - 719468;
  return days * 86400 + h * 3600 + mi * 60 + sec;
}

QStringList to_qt(const std::vector<std::string>& v) {
  QStringList out;
  for (const std::string& s : v) out << QString::fromStdString(s);
  return out;
}

}  // namespace

RunsModel::RunsModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsModel::setProject(projects::Project* project) {
  project_ = project;
  reload();
}

void RunsModel::setEditors(RenameFn rename, TagsFn tags) {
  rename_ = std::move(rename);
  tags_ = std::move(tags);
}

void RunsModel::reload() {
  beginResetModel();
  rows_.clear();
  QString failure;
  if (project_) {
    try {
      const auto summaries = project_->run_summaries();
      rows_.reserve(static_cast<qsizetype>(summaries.size()));
      for (const auto& s : summaries) rows_.push_back(makeRow(s));
    } catch (const std::exception& e) {
      rows_.clear();
      failure = tr("cannot read the project's runs: %1").arg(QString::fromUtf8(e.what()));
    }
  }
  endResetModel();
  if (!failure.isEmpty()) emit error(failure);
}

RunsModel::Row RunsModel::makeRow(const projects::RunSummary& s) const {
  const projects::RunRecord& run = s.run;
  const QJsonObject config = parse_object(run.config_json);
  const QJsonObject final_metrics = parse_object(run.final_metrics_json);
  auto final_or = [&](const char* key, double fallback) {
    const double v = number(final_metrics, key);
    return std::isnan(v) ? fallback : v;
  };
  const double start = parse_utc(run.started_at);
  const double end = run.ended_at.empty() ? QDateTime::currentMSecsSinceEpoch() / 1000.0 : parse_utc(run.ended_at);
  const qint64 seconds = std::isfinite(start) && std::isfinite(end) ? qint64(end - start) : -1;
  const int configured = config.value("epochs").toInt(0);
  const int done = s.last_epoch.epoch;
  const QJsonValue lr = config.contains("lr") ? config.value("lr") : config.value("learning_rate");
  const double train_size = number(config.value("dataset").toObject(), "train_size");
  const double batch_size = number(config, "batch_size");
  const double images_per_second = final_or("images_per_second", s.mean_images_per_second);
  const double train_loss = final_or("train_loss", s.last_epoch.train_loss);
  const double val_loss = final_or("val_loss", s.last_epoch.val_loss);
  // A regression run has no accuracy: its test column shows R² (test_r2), its validation column nothing.
  const bool regression = config.value("dataset").toObject().value("task").toString() == "regression" ||
                          final_metrics.contains("test_r2");
  const double val_accuracy = regression ? NAN : final_or("val_accuracy", s.last_epoch.val_accuracy);
  const double test_accuracy = regression ? number(final_metrics, "test_r2") : final_or("test_accuracy", s.test_accuracy);

  Row r;
  r.run = run;
  r.hasEvaluation = s.has_evaluation;
  const QStringList tags = to_qt(run.tags);
  const QString status = QString::fromStdString(projects::to_string(run.status));
  r.text[Name] = QString::fromStdString(run.name);
  r.text[Status] = status;
  r.text[Tags] = tags.join(", ");
  r.started = start;
  r.text[Started] = QString::fromStdString(run.started_at);  // sorts as text; shown in local time by data()
  r.text[Duration] = seconds >= 0 ? duration_text(seconds) : QString();
  r.text[Epochs] = configured > 0 ? QString("%1 / %2").arg(done).arg(configured) : QString::number(done);
  r.text[TrainSize] = std::isfinite(train_size) ? QString::number(qint64(train_size)) : QString();
  r.text[BatchSize] = std::isfinite(batch_size) ? QString::number(qint64(batch_size)) : QString();
  r.text[Optimizer] = config.value("optimizer").toString();
  r.text[LearningRate] = lr.isDouble() ? QString::number(lr.toDouble(), 'g', 6) : QString();
  r.text[Device] = QString::fromStdString(run.device);
  r.text[ImagesPerSecond] = fixed(images_per_second, 0);
  r.text[TrainLoss] = fixed(train_loss, 4);
  r.text[ValLoss] = fixed(val_loss, 4);
  r.text[ValAccuracy] = percent(val_accuracy);
  r.text[TestAccuracy] = !regression ? percent(test_accuracy)
                         : std::isfinite(test_accuracy) ? QString("R² %1").arg(test_accuracy, 0, 'f', 4)
                                                        : QString();
  const double numbers[ColumnCount] = {NAN, NAN, NAN, NAN, seconds >= 0 ? double(seconds) : NAN, double(done),
                                       train_size, batch_size, NAN, lr.isDouble() ? lr.toDouble() : NAN, NAN,
                                       images_per_second, train_loss, val_loss, val_accuracy, test_accuracy};
  std::copy(std::begin(numbers), std::end(numbers), std::begin(r.number));
  r.filter = {r.text[Name].toLower(), tags.join('\n').toLower(), r.text[Device].toLower(), status};
  return r;
}

bool RunsModel::isNumberColumn(int column) {
  return column == Duration || column == Epochs || column == TrainSize || column == BatchSize ||
         column == LearningRate || column >= ImagesPerSecond;
}

int RunsModel::rowForRun(int64_t id) const {
  for (int i = 0; i < rows_.size(); ++i)
    if (rows_[i].run.id == id) return i;
  return -1;
}

int64_t RunsModel::runAt(int row) const { return row >= 0 && row < rows_.size() ? rows_[row].run.id : 0; }

int RunsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }
int RunsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rows_.size()) return {};
  const Row& r = rows_[index.row()];
  const int c = index.column();
  switch (role) {
    case Qt::DisplayRole:
      // Local time only for the rows painted (a time zone conversion per run is slow).
      if (c == Started && std::isfinite(r.started))
        return QDateTime::fromMSecsSinceEpoch(qint64(r.started * 1000), Qt::UTC).toLocalTime().toString("yyyy-MM-dd HH:mm:ss");
      return r.text[c];
    case Qt::EditRole:
      return c == Tags ? r.text[Tags] : r.text[c];
    case SortRole:
      if (c == Name) return double(r.run.id);  // the default order: by id
      return isNumberColumn(c) ? QVariant(r.number[c]) : QVariant(r.text[c]);
    case RunIdRole:
      return QVariant::fromValue<qint64>(r.run.id);
    case Qt::ToolTipRole:
      if (c == Name)
        return QString("#%1 %2\n%3").arg(r.run.id).arg(r.text[Name], QString::fromStdString(r.run.config_json));
      if (c == Status && !r.run.message.empty()) return QString::fromStdString(r.run.message);
      if (c == Tags && !r.run.tags.empty()) return to_qt(r.run.tags).join('\n');
      return {};
    case Qt::TextAlignmentRole:
      if (isNumberColumn(c)) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    default:
      return {};
  }
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  static const char* names[ColumnCount] = {"Run",      "Status", "Tags",   "Started",      "Duration",   "Epochs",
                                           "Train set", "Batch",  "Optimizer", "LR",       "Device",     "Images/s",
                                           "Train loss", "Val. loss", "Val. acc.", "Test acc."};
  if (role == Qt::DisplayRole) return tr(names[section]);
  if (role == Qt::ToolTipRole) {
    if (section == TrainSize) return tr("Training images (the validation images held out of them are not counted)");
    if (section == ImagesPerSecond) return tr("Training throughput: the mean of the run's per-step images/s");
    if (section == Tags) return tr("Double-click or F2 to edit; separate tags with commas");
  }
  return {};
}

Qt::ItemFlags RunsModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && (index.column() == Name || index.column() == Tags)) f |= Qt::ItemIsEditable;
  return f;
}

bool RunsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole || !project_) return false;
  const int64_t id = rows_[index.row()].run.id;
  const QString text = value.toString();
  try {
    if (index.column() == Name) {
      if (text.trimmed() == rows_[index.row()].text[Name]) return false;
      if (rename_) rename_(id, text);
      else project_->rename_run(id, text.toStdString());
    } else if (index.column() == Tags) {
      QStringList tags = text.split(',');
      for (QString& t : tags) t = t.trimmed();
      tags.removeAll(QString());
      if (tags == to_qt(rows_[index.row()].run.tags)) return false;
      if (tags_) tags_(id, tags);
      else {
        std::vector<std::string> v;
        for (const QString& t : tags) v.push_back(t.toStdString());
        project_->set_run_tags(id, v);
      }
    } else {
      return false;
    }
  } catch (const std::exception& e) {
    emit error(QString::fromUtf8(e.what()));
    return false;
  }
  return true;  // the edit function reloads (or the caller does)
}

// ---- RunsFilterModel ----

RunsFilterModel::RunsFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(RunsModel::SortRole);
  setDynamicSortFilter(true);
}

void RunsFilterModel::setFilterText(const QString& text) {
  text_ = text;
  terms_.clear();
  for (const QString& word : text.toLower().split(QRegularExpression("\\s+"), Qt::SkipEmptyParts)) {
    const qsizetype colon = word.indexOf(':');
    const QString field = colon > 0 ? word.left(colon) : QString();
    if (field == "tag" || field == "status" || field == "device" || field == "name")
      terms_.push_back({field, word.mid(colon + 1)});
    else
      terms_.push_back({QString(), word});
  }
  invalidateRowsFilter();
}

bool RunsFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex&) const {
  if (terms_.isEmpty()) return true;
  const auto* model = static_cast<const RunsModel*>(sourceModel());
  const RunsModel::FilterText& f = model->filterTextAt(sourceRow);
  for (const Term& t : terms_) {
    bool hit;
    if (t.field == "tag") hit = f.tags.contains(t.word);
    else if (t.field == "status") hit = f.status.contains(t.word);
    else if (t.field == "device") hit = f.device.contains(t.word);
    else if (t.field == "name") hit = f.name.contains(t.word);
    else hit = f.name.contains(t.word) || f.tags.contains(t.word) || f.device.contains(t.word) || f.status.contains(t.word);
    if (!hit) return false;
  }
  return true;
}

bool RunsFilterModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant a = left.data(RunsModel::SortRole), b = right.data(RunsModel::SortRole);
  int order = 0;
  if (a.typeId() == QMetaType::Double && b.typeId() == QMetaType::Double) {
    const double x = a.toDouble(), y = b.toDouble();
    if (std::isnan(x) != std::isnan(y)) order = std::isnan(x) ? -1 : 1;
    else if (!std::isnan(x) && x != y) order = x < y ? -1 : 1;
  } else {
    order = QString::compare(a.toString(), b.toString(), Qt::CaseInsensitive);
  }
  if (order != 0) return order < 0;
  return left.data(RunsModel::RunIdRole).toLongLong() < right.data(RunsModel::RunIdRole).toLongLong();
}

}  // namespace kiln::studio
