#include "widgets/project/dataset_panel.h"

#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPainter>
#include <QProgressBar>
#include <QScrollArea>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cstring>

#include "engine/data/fashion_mnist.h"

namespace kiln::studio {

namespace {
constexpr int kScale = 2;  // 28 px -> 56 px
constexpr int kNumClasses = 10;

QString class_name(int c) {
  return c >= 0 && c < kNumClasses ? QString::fromUtf8(data::FashionMNIST::kClassNames[static_cast<size_t>(c)])
                                   : QString("class %1").arg(c);
}

QString thousands(int64_t n) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(n)); }
}  // namespace

DatasetSummary summarize_fashion_mnist(const QString& dir, int samples) {
  DatasetSummary s;
  try {
    for (bool train : {true, false}) {
      data::FashionMNIST ds(train, dir.toStdString());
      const int64_t n = ds.size();
      const int64_t* labels = ds.labels().data_ptr<const int64_t>();
      auto& counts = train ? s.train_counts : s.test_counts;
      for (int64_t i = 0; i < n; ++i)
        if (labels[i] >= 0 && labels[i] < kNumClasses) ++counts[static_cast<size_t>(labels[i])];
      (train ? s.train_images : s.test_images) = n;
      if (!train || n == 0) continue;
      const int64_t h = ds.images().size(1), w = ds.images().size(2);
      const uint8_t* pixels = ds.images().data_ptr<const uint8_t>();
      for (int k = 0; k < samples && k < n; ++k) {
        const int64_t i = static_cast<int64_t>(k) * n / samples;  // evenly spaced over the split
        QImage img(static_cast<int>(w), static_cast<int>(h), QImage::Format_Grayscale8);
        for (int64_t y = 0; y < h; ++y) std::memcpy(img.scanLine(static_cast<int>(y)), pixels + (i * h + y) * w, size_t(w));
        s.samples.push_back(std::move(img));
        s.sample_labels.push_back(static_cast<int>(labels[i]));
      }
    }
  } catch (const std::exception& e) {
    s = DatasetSummary{};
    s.error = QString::fromUtf8(e.what());
  }
  return s;
}

// ---- SampleGrid ----

SampleGrid::SampleGrid(QWidget* parent) : QWidget(parent) {
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
}

void SampleGrid::setSamples(std::vector<QImage> images, QStringList labels) {
  images_ = std::move(images);
  labels_ = std::move(labels);
  updateGeometry();
  update();
}

QSize SampleGrid::cellSize() const {
  const QFontMetrics fm(font());
  const int w = std::max(28 * kScale, fm.horizontalAdvance("T-shirt/top")) + 8;
  return {w, 28 * kScale + fm.height() + 8};
}

int SampleGrid::columns() const { return std::max(1, width() / cellSize().width()); }

QSize SampleGrid::sizeHint() const { return {cellSize().width() * 8, heightForWidth(cellSize().width() * 8)}; }

int SampleGrid::heightForWidth(int width) const {
  const int cols = std::max(1, width / cellSize().width());
  const int rows = (count() + cols - 1) / cols;
  return std::max(1, rows) * cellSize().height();
}

void SampleGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QSize cell = cellSize();
  const int cols = columns();
  const int side = 28 * kScale;
  for (int i = 0; i < count(); ++i) {
    const QRect r((i % cols) * cell.width(), (i / cols) * cell.height(), cell.width(), cell.height());
    const QRect img((r.width() - side) / 2 + r.x(), r.y() + 4, side, side);
    p.drawImage(img, images_[static_cast<size_t>(i)]);  // scaled by drawImage, no smoothing
    p.drawText(QRect(r.x(), img.bottom() + 2, r.width(), r.bottom() - img.bottom() - 2),
               Qt::AlignHCenter | Qt::AlignTop, labels_.value(i));
  }
}

// ---- DatasetPanel ----

DatasetPanel::DatasetPanel(QWidget* parent, const DatasetSettings& settings) : QWidget(parent), settings_(settings) {
  settings_.validate();
  auto* layout = new QVBoxLayout(this);
  auto* title = new QLabel(tr("<b>Fashion-MNIST</b> — 28×28 grey images of 10 kinds of clothing "
                              "(Xiao, Rasul, Vollgraf 2017)"));
  title->setWordWrap(true);
  layout->addWidget(title);

  auto* form = new QFormLayout;
  validation_ = new QSpinBox;
  validation_->setRange(0, int(DatasetSettings::kTrainImages - 1));
  validation_->setSingleStep(1000);
  validation_->setToolTip(tr("Training images held out to measure validation loss and accuracy each epoch"));
  train_ = new QSpinBox;
  train_->setSingleStep(1000);
  train_->setToolTip(tr("Training images used per epoch; less than all of them trains faster (a subset)"));
  test_ = new QSpinBox;
  test_->setRange(0, int(DatasetSettings::kTestImages));
  test_->setSingleStep(500);
  test_->setSpecialValueText(tr("all"));
  test_->setToolTip(tr("Test images evaluated after training (a random subset drawn with the test seed); a run on "
                       "fewer is marked with its test size, so that it is not compared with full-test runs by mistake"));
  testSeed_ = new QSpinBox;
  testSeed_->setRange(0, 2147483647);
  testSeed_->setToolTip(tr("Which test images a subset takes: the same seed gives the same images (recorded with the "
                           "run; independent of the training seed, so runs with other training seeds are tested alike)"));
  testSeed_->setEnabled(false);
  classes_ = new QLineEdit;
  classes_->setPlaceholderText(tr("all ten, or e.g. 5-9 or 0,2,5"));
  classes_->setToolTip(tr("Train and test on these classes only, relabelled 0..k-1 (as kiln train --classes); "
                          "the model's Output must then give k class scores"));
  classesError_ = new QLabel;
  classesError_->setWordWrap(true);
  classesError_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // a long word never widens the dock
  classesError_->setStyleSheet("color: #e06c6c");
  classesError_->hide();
  form->addRow(tr("Classes:"), classes_);
  form->addRow(QString(), classesError_);
  form->addRow(tr("Validation images:"), validation_);
  form->addRow(tr("Training images:"), train_);
  form->addRow(tr("Test images:"), test_);
  form->addRow(tr("Test seed:"), testSeed_);
  layout->addLayout(form);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  layout->addWidget(summary_);

  status_ = new QLabel(tr("Reading Fashion-MNIST…"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);

  grid_ = new SampleGrid;
  auto* scroll = new QScrollArea;
  scroll->setWidget(grid_);
  scroll->setWidgetResizable(true);
  scroll->setMinimumHeight(160);
  layout->addWidget(scroll, 3);

  counts_ = new QTableWidget(kNumClasses, 4);
  counts_->setHorizontalHeaderLabels({tr("Class"), tr("Training"), tr("Test"), tr("Share of training")});
  counts_->verticalHeader()->setVisible(false);
  counts_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  counts_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  counts_->horizontalHeader()->setStretchLastSection(true);
  counts_->verticalHeader()->setDefaultSectionSize(22);
  for (int c = 0; c < kNumClasses; ++c) {
    counts_->setItem(c, 0, new QTableWidgetItem(class_name(c)));
    auto* bar = new QProgressBar;
    bar->setTextVisible(true);
    bar->setMaximumHeight(18);
    bar->setValue(0);
    counts_->setCellWidget(c, 3, bar);
  }
  layout->addWidget(counts_, 2);

  connect(validation_, &QSpinBox::valueChanged, this, &DatasetPanel::onSpinChanged);
  connect(train_, &QSpinBox::valueChanged, this, &DatasetPanel::onSpinChanged);
  connect(test_, &QSpinBox::valueChanged, this, &DatasetPanel::onSpinChanged);
  connect(testSeed_, &QSpinBox::valueChanged, this, &DatasetPanel::onSpinChanged);
  connect(classes_, &QLineEdit::editingFinished, this, &DatasetPanel::onClassesEdited);
  connect(&watcher_, &QFutureWatcher<DatasetSummary>::finished, this, [this] { showSummary(watcher_.result()); });
  setSettings(settings_);
  load(QString::fromStdString(settings_.dir));
}

DatasetPanel::~DatasetPanel() { watcher_.waitForFinished(); }

DatasetSettings DatasetPanel::settings() const { return settings_; }

void DatasetPanel::setSettings(const DatasetSettings& s) {
  s.validate();
  const bool reload = s.dir != settings_.dir;
  settings_ = s;
  updating_ = true;
  classes_->setText(QString::fromStdString(s.classes));
  classesError_->hide();
  updateRanges();
  validation_->setValue(int(s.validation_size));
  train_->setRange(1, int(s.num_classes() * DatasetSettings::kTrainPerClass - s.validation_size));
  train_->setValue(int(s.train_size));
  test_->setValue(int(s.test_size));
  testSeed_->setValue(int(std::min<uint64_t>(s.test_seed, uint64_t(testSeed_->maximum()))));
  testSeed_->setEnabled(s.test_size > 0);
  updating_ = false;
  updateSummaryText();
  if (reload) load(QString::fromStdString(s.dir));
  emit settingsChanged(settings_);
}

void DatasetPanel::onSpinChanged() {
  if (updating_) return;
  // The training subset can use whatever the validation split leaves; shrinking the
  // validation split keeps "all the rest" when that was chosen.
  const int64_t images = settings_.num_classes() * DatasetSettings::kTrainPerClass;
  const bool all_rest = settings_.train_size == images - settings_.validation_size;
  updating_ = true;
  const int64_t val = validation_->value();
  train_->setMaximum(int(images - val));
  if (all_rest && sender() == validation_) train_->setValue(train_->maximum());
  updating_ = false;
  settings_.validation_size = val;
  settings_.train_size = train_->value();
  settings_.test_size = test_->value();
  settings_.test_seed = static_cast<uint64_t>(testSeed_->value());
  testSeed_->setEnabled(settings_.test_size > 0);
  settings_.validate();  // the spin box ranges make every reachable combination valid
  updateSummaryText();
  emit settingsChanged(settings_);
}

QString DatasetPanel::classesError() const { return classesError_->isHidden() ? QString() : classesError_->text(); }

void DatasetPanel::updateRanges() {
  const int64_t images = settings_.num_classes() * DatasetSettings::kTrainPerClass;
  validation_->setMaximum(int(images - 1));
  train_->setMaximum(int(images - validation_->value()));
}

void DatasetPanel::onClassesEdited() {
  DatasetSettings s = settings_;
  s.classes = classes_->text().trimmed().toStdString();
  if (s.classes == settings_.classes) return;
  try {
    const int64_t images = s.num_classes() * DatasetSettings::kTrainPerClass;  // ValueError for a bad spec
    // Fewer classes hold fewer images: the splits shrink to fit, validation first kept.
    s.validation_size = std::min(s.validation_size, images / 10);
    const bool all_rest = settings_.train_size == settings_.num_classes() * DatasetSettings::kTrainPerClass - settings_.validation_size;
    s.train_size = all_rest ? images - s.validation_size : std::min(s.train_size, images - s.validation_size);
    s.validate();
  } catch (const std::exception& e) {
    // The message quotes the spec: a very long one is shortened so the panel keeps its width.
    QString message = QString::fromUtf8(e.what());
    if (message.size() > 160) message = message.left(100) + QChar(0x2026) + message.right(50);
    classesError_->setText(message);
    classesError_->show();
    return;
  }
  classesError_->hide();
  setSettings(s);
}

void DatasetPanel::updateSummaryText() {
  const int64_t k = settings_.num_classes();
  const QString classes = k < kNumClasses ? tr(" of classes %1 (relabelled 0 to %2)")
                                                .arg(QString::fromStdString(settings_.classes))
                                                .arg(k - 1)
                                          : QString();
  const int64_t tests = k * (DatasetSettings::kTestImages / kNumClasses);
  const QString test = settings_.test_size > 0 && settings_.test_size < tests
                           ? tr("%1 of the %2 test images (seed %3)")
                                 .arg(thousands(settings_.test_size), thousands(tests))
                                 .arg(settings_.test_seed)
                           : tr("all %1 test images").arg(thousands(tests));
  summary_->setText(tr("Trains on %1 images and validates on %2, both from the %3 training images%4; tests on %5.")
                        .arg(thousands(settings_.train_size), thousands(settings_.validation_size),
                             thousands(k * DatasetSettings::kTrainPerClass), classes, test));
}

void DatasetPanel::load(const QString& dir) {
  loaded_ = false;
  error_.clear();
  status_->setText(tr("Reading Fashion-MNIST from %1…").arg(dir));
  watcher_.waitForFinished();
  watcher_.setFuture(QtConcurrent::run(summarize_fashion_mnist, dir, kSamples));
}

void DatasetPanel::showSummary(const DatasetSummary& s) {
  error_ = s.error;
  loaded_ = s.error.isEmpty();
  if (!loaded_) {
    status_->setText(tr("<b>The data set cannot be read.</b> %1").arg(s.error.toHtmlEscaped()));
    status_->setStyleSheet("color: #e06c6c");
    grid_->setSamples({}, {});
  } else {
    status_->setStyleSheet({});
    status_->setText(tr("%1 training and %2 test images in %3. Samples from the training split:")
                         .arg(thousands(s.train_images), thousands(s.test_images),
                              QString::fromStdString(settings_.dir)));
    QStringList labels;
    for (int l : s.sample_labels) labels << class_name(l);
    grid_->setSamples(s.samples, labels);
  }
  const int64_t max_train = std::max<int64_t>(1, *std::max_element(s.train_counts.begin(), s.train_counts.end()));
  for (int c = 0; c < kNumClasses; ++c) {
    const auto k = static_cast<size_t>(c);
    counts_->setItem(c, 1, new QTableWidgetItem(thousands(s.train_counts[k])));
    counts_->setItem(c, 2, new QTableWidgetItem(thousands(s.test_counts[k])));
    auto* bar = static_cast<QProgressBar*>(counts_->cellWidget(c, 3));
    bar->setRange(0, int(max_train));
    bar->setValue(int(s.train_counts[k]));
    bar->setFormat(s.train_images ? QString("%1 %").arg(100.0 * double(s.train_counts[k]) / double(s.train_images), 0, 'f', 1)
                                  : QString("–"));
  }
  emit loaded();
}

}  // namespace kiln::studio
