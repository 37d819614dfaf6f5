#include "widgets/project/dataset_panel.h"

#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QScrollArea>
#include <QLineEdit>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QMenu>
#include <QPushButton>

#include "engine/data/dataset_source.h"
#include "engine/data/fashion_mnist.h"
#include "widgets/elide.h"

namespace kiln::studio {

namespace {
constexpr int kNumClasses = 10;
constexpr int kShareColumnMinimum = 36;  // px of the class table's columns at least

QString class_name(int c) {
  return c >= 0 && c < kNumClasses ? QString::fromUtf8(data::FashionMNIST::kClassNames[static_cast<size_t>(c)])
                                   : QString("class %1").arg(c);
}

QString thousands(int64_t n) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(n)); }
}  // namespace

// ---- DatasetPanel ----

DatasetPanel::DatasetPanel(QWidget* parent, const DatasetSettings& settings) : QWidget(parent), settings_(settings) {
  settings_.validate();
  auto* layout = new QVBoxLayout(this);
  source_ = new QComboBox;
  source_->addItem(tr("Fashion-MNIST"), "fashion-mnist");
  // Short names, so that the closed box shows the whole choice in a narrow dock; the rest is
  // each item's tooltip.
  source_->addItem(tr("Image folder"), "imagefolder");
  source_->setItemData(1, tr("A folder with one subfolder of images per class"), Qt::ToolTipRole);
  source_->addItem(tr("Image list (CSV)"), "images");
  source_->setItemData(2, tr("A CSV file listing path,label of each image"), Qt::ToolTipRole);
  source_->addItem(tr("CSV table"), "csv");
  source_->setItemData(3, tr("A table: a CSV with a label column and numeric feature columns"), Qt::ToolTipRole);
  source_->addItem(tr("Texts"), "text");
  source_->setItemData(4, tr("Texts with classes: a folder with one subfolder of .txt files per class, or a CSV / "
                             "JSON-lines file with a text and a label column"), Qt::ToolTipRole);
  source_->setToolTip(tr("The data the model trains on: Fashion-MNIST, your images (a folder with a subfolder per "
                         "class, or a CSV listing path,label), a table (a CSV with a label column) or texts (a folder "
                         "with a subfolder of .txt files per class, or a CSV / JSON-lines file with text and label)"));
  auto* sourceForm = new QFormLayout;
  sourceForm->setRowWrapPolicy(QFormLayout::WrapLongRows);
  sourceForm->addRow(tr("Dataset:"), source_);
  layout->addLayout(sourceForm);
  sourceBox_ = new QWidget;
  auto* sourceLayout = new QFormLayout(sourceBox_);
  sourceLayout->setRowWrapPolicy(QFormLayout::WrapLongRows);
  sourceLayout->setContentsMargins(0, 0, 0, 0);
  auto* pathRow = new QHBoxLayout;
  path_ = new QLineEdit;
  path_->setPlaceholderText(tr("choose a folder or file"));
  browse_ = new QPushButton(tr("Choose…"));
  rescan_ = new QPushButton(tr("Rescan"));
  rescan_->setToolTip(tr("Read and check every file of the folder again. Reopening a project reuses the folder's "
                         "file index stored in it while no file or folder was added, removed or renamed; a file "
                         "rewritten in place is not noticed until a rescan"));
  pathRow->addWidget(path_, 1);
  pathRow->addWidget(browse_);
  sourceLayout->addRow(tr("Path:"), pathRow);
  sourceLayout->addRow(QString(), rescan_);
  csvBox_ = new QWidget;
  auto* csvLayout = new QFormLayout(csvBox_);
  csvLayout->setRowWrapPolicy(QFormLayout::WrapLongRows);
  csvLayout->setContentsMargins(0, 0, 0, 0);
  label_ = new QComboBox;
  label_->setToolTip(tr("The column holding the class of each row; every other numeric column is a feature"));
  header_ = new QCheckBox(tr("Header row"));
  header_->setToolTip(tr("The first row (after the skipped rows) names the columns"));
  skipRows_ = new QSpinBox;
  skipRows_->setRange(0, 1000);
  skipRows_->setToolTip(tr("Lines skipped before the header or data (1 for scikit-learn's tables, whose first line counts rows)"));
  csvLayout->addRow(tr("Label column:"), label_);
  csvLayout->addRow(QString(), header_);
  csvLayout->addRow(tr("Skip rows:"), skipRows_);
  sourceLayout->addRow(csvBox_);
  textBox_ = new QWidget;
  auto* textLayout = new QFormLayout(textBox_);
  textLayout->setRowWrapPolicy(QFormLayout::WrapLongRows);
  textLayout->setContentsMargins(0, 0, 0, 0);
  textColumn_ = new QLineEdit;
  textColumn_->setToolTip(tr("A CSV's text column or a JSON line's text key (a folder of .txt files has none)"));
  textLabel_ = new QLineEdit;
  textLabel_->setPlaceholderText("label");
  textLabel_->setToolTip(tr("A CSV's label column or a JSON line's label key (a folder's classes are its subfolders)"));
  tokenizer_ = new QComboBox;
  tokenizer_->addItem(tr("Words"), "word");
  tokenizer_->addItem(tr("Characters"), "char");
  tokenizer_->addItem(tr("SentencePiece subwords"), "sentencepiece");
  tokenizer_->setToolTip(tr("How texts become tokens: words (lowercased, split on whitespace and punctuation), single "
                            "characters, or SentencePiece subword units (unigram); fitted on the training split only"));
  maxLength_ = new QSpinBox;
  maxLength_->setRange(1, 65536);
  maxLength_->setSingleStep(32);
  maxLength_->setToolTip(tr("Tokens per text the model reads: longer texts keep their first tokens, shorter ones are "
                            "padded (the histogram below shows how many are cut)"));
  vocabSize_ = new QSpinBox;
  vocabSize_->setRange(3, 10000000);
  vocabSize_->setSingleStep(1000);
  vocabSize_->setToolTip(tr("The most vocabulary entries, <pad> and <unk> included: rarer words become <unk>"));
  textLayout->addRow(tr("Text column:"), textColumn_);
  textLayout->addRow(tr("Label column:"), textLabel_);
  textLayout->addRow(tr("Tokenizer:"), tokenizer_);
  textLayout->addRow(tr("Max length:"), maxLength_);
  textLayout->addRow(tr("Vocabulary size:"), vocabSize_);
  sourceLayout->addRow(textBox_);
  options_ = new SourceOptions;
  sourceLayout->addRow(options_);
  textMenu_ = new QMenu(this);
  textMenu_->addAction(tr("Folder (one subfolder of .txt files per class)…"), this, [this] { chooseTextPath(true); });
  textMenu_->addAction(tr("CSV or JSON-lines file…"), this, [this] { chooseTextPath(false); });
  layout->addWidget(sourceBox_);
  title_ = new QLabel(tr("<b>Fashion-MNIST</b> — 28×28 grey images of 10 kinds of clothing "
                         "(Xiao, Rasul, Vollgraf 2017)"));
  auto* title = title_;
  title->setWordWrap(true);
  layout->addWidget(title);
  fashionBox_ = new QWidget;
  auto* form = new QFormLayout;
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
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
  classesError_->setStyleSheet("color: #e06c6c");
  classesError_->hide();
  form->addRow(tr("Classes:"), classes_);
  form->addRow(QString(), classesError_);
  form->addRow(tr("Validation images:"), validation_);
  form->addRow(tr("Training images:"), train_);
  form->addRow(tr("Test images:"), test_);
  form->addRow(tr("Test seed:"), testSeed_);
  form->setContentsMargins(0, 0, 0, 0);
  fashionBox_->setLayout(form);
  layout->addWidget(fashionBox_);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  layout->addWidget(summary_);

  status_ = new QLabel(tr("Reading Fashion-MNIST…"));
  status_->setTextFormat(Qt::RichText);  // setStatus escapes what it is given
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);

  grid_ = new SampleGrid;
  auto* scroll = new QScrollArea;
  scroll->setWidget(grid_);
  scroll->setWidgetResizable(true);
  scroll->setMinimumHeight(160);
  layout->addWidget(scroll, 3);
  gridScroll_ = scroll;
  preview_ = new AugmentPreview;
  layout->addWidget(preview_);
  textPreview_ = new TextPreview;
  textPreview_->hide();
  layout->addWidget(textPreview_, 3);

  counts_ = new QTableWidget(kNumClasses, 4);
  counts_->setHorizontalHeaderLabels({tr("Class"), tr("Train"), tr("Test"), tr("Share")});
  counts_->verticalHeader()->setVisible(false);
  counts_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // The counts fit their text; the share bars take the rest, however narrow (short header
  // labels, so that the four columns fit the dock's 226 px without scrolling sideways).
  counts_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  counts_->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
  counts_->horizontalHeader()->setMinimumSectionSize(kShareColumnMinimum);
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

  // The panel fits its dock's default width (226 px at 1366x768) without a horizontal scroll:
  // combo boxes size to kComboChars characters, not to their longest choice ("Image folder (one
  // subfolder per class)" made the panel 333 px wide) or column name, and show the whole choice
  // in their list; form rows put a field under its label when both do not fit side by side;
  // texts wrap, and their words over kLongWord characters (paths) are shortened, in full in the tooltip.
  for (QComboBox* c : {source_, label_, tokenizer_}) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(kComboChars);
  }
  for (QLabel* l : {title_, summary_, status_, classesError_}) l->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);

  connect(validation_, &QSpinBox::valueChanged, this, &DatasetPanel::onSpinChanged);
  connect(train_, &QSpinBox::valueChanged, this, &DatasetPanel::onSpinChanged);
  connect(test_, &QSpinBox::valueChanged, this, &DatasetPanel::onSpinChanged);
  connect(testSeed_, &QSpinBox::valueChanged, this, &DatasetPanel::onSpinChanged);
  connect(classes_, &QLineEdit::editingFinished, this, &DatasetPanel::onClassesEdited);
  connect(&watcher_, &QFutureWatcher<DatasetSummary>::finished, this, [this] { showSummary(watcher_.result()); });
  connect(source_, &QComboBox::activated, this, &DatasetPanel::onSourceChanged);
  connect(browse_, &QPushButton::clicked, this, &DatasetPanel::choosePath);
  // A click on an image's sample shows it in the augmentation preview.
  connect(grid_, &SampleGrid::sampleClicked, this, [this](int k) {
    if (k >= int(shown_.sample_indices.size()) || !shown_.image_train) return;
    grid_->setSelected(k);
    preview_->setSample(shown_.sample_indices[size_t(k)]);
  });
  connect(rescan_, &QPushButton::clicked, this, [this] {
    rescanNext_ = true;
    loadSource();
  });
  connect(path_, &QLineEdit::editingFinished, this, [this] {
    const std::string p = path_->text().trimmed().toStdString();
    if (p.empty() || p == settings_.path) return;
    DatasetSettings s = settings_;
    s.path = p;
    emit chosen();
    setSettings(s);
  });
  connect(options_, &SourceOptions::edited, this, [this] {
    if (updating_ || settings_.is_fashion_mnist()) return;
    const DatasetSettings s = options_->applied(settings_);
    if (s == settings_) return;
    emit chosen();
    setSettings(s);
  });
  connect(label_, &QComboBox::activated, this, &DatasetPanel::onCsvOptionsChanged);
  connect(header_, &QCheckBox::toggled, this, &DatasetPanel::onCsvOptionsChanged);
  connect(skipRows_, &QSpinBox::valueChanged, this, &DatasetPanel::onCsvOptionsChanged);
  connect(textColumn_, &QLineEdit::editingFinished, this, &DatasetPanel::onTextOptionsChanged);
  connect(textLabel_, &QLineEdit::editingFinished, this, &DatasetPanel::onTextOptionsChanged);
  connect(tokenizer_, &QComboBox::activated, this, &DatasetPanel::onTextOptionsChanged);
  connect(maxLength_, &QSpinBox::editingFinished, this, &DatasetPanel::onTextOptionsChanged);
  connect(vocabSize_, &QSpinBox::editingFinished, this, &DatasetPanel::onTextOptionsChanged);
  const DatasetSettings initial = settings_;
  settings_.dir.clear();  // setSettings reads the data
  setSettings(initial);
}

DatasetPanel::~DatasetPanel() { watcher_.waitForFinished(); }

DatasetSettings DatasetPanel::settings() const { return settings_; }

void DatasetPanel::setSettings(const DatasetSettings& s) {
  s.validate();
  const bool reload = s.name != settings_.name || s.dir != settings_.dir || s.path != settings_.path ||
                      s.label != settings_.label || s.header != settings_.header || s.skip_rows != settings_.skip_rows ||
                      s.test_fraction != settings_.test_fraction || s.validation_fraction != settings_.validation_fraction ||
                      s.text_column != settings_.text_column || s.tokenizer != settings_.tokenizer ||
                      s.max_length != settings_.max_length || s.vocab_size != settings_.vocab_size ||
                      s.image_height != settings_.image_height || s.image_width != settings_.image_width ||
                      s.task != settings_.task || s.missing != settings_.missing;
  settings_ = s;
  updating_ = true;
  source_->setCurrentIndex(std::max(0, source_->findData(QString::fromStdString(s.name))));
  path_->setText(QString::fromStdString(s.path));
  header_->setChecked(s.header);
  skipRows_->setValue(int(s.skip_rows));
  if (label_->findData(QString::fromStdString(s.label)) < 0) label_->addItem(s.label.empty() ? tr("(the last column)") : QString::fromStdString(s.label), QString::fromStdString(s.label));
  label_->setCurrentIndex(label_->findData(QString::fromStdString(s.label)));
  textColumn_->setText(QString::fromStdString(s.text_column));
  textLabel_->setText(s.name == "text" ? QString::fromStdString(s.label) : QString());
  tokenizer_->setCurrentIndex(std::max(0, tokenizer_->findData(QString::fromStdString(s.tokenizer))));
  maxLength_->setValue(int(s.max_length));
  vocabSize_->setValue(int(std::min<int64_t>(s.vocab_size, vocabSize_->maximum())));
  options_->setSettings(s);
  if (s.is_fashion_mnist()) {
    classes_->setText(QString::fromStdString(s.classes));
    classesError_->hide();
    updateRanges();
    validation_->setValue(int(s.validation_size));
    train_->setRange(1, int(s.num_classes() * DatasetSettings::kTrainPerClass - s.validation_size));
    train_->setValue(int(s.train_size));
    test_->setValue(int(s.test_size));
    testSeed_->setValue(int(std::min<uint64_t>(s.test_seed, uint64_t(testSeed_->maximum()))));
    testSeed_->setEnabled(s.test_size > 0);
  }
  updating_ = false;
  showSourceWidgets();
  updateSummaryText();
  if (reload) s.is_fashion_mnist() ? load(QString::fromStdString(s.dir)) : loadSource();
  preview_->setTransforms(s.augment, s.rotation);
  emit settingsChanged(settings_);
}

void DatasetPanel::showSourceWidgets() {
  const bool fashion = settings_.is_fashion_mnist();
  fashionBox_->setVisible(fashion);
  sourceBox_->setVisible(!fashion);
  csvBox_->setVisible(settings_.name == "csv");
  const bool text = settings_.name == "text";
  textBox_->setVisible(text);
  gridScroll_->setVisible(!text);
  textPreview_->setVisible(text && loaded_);
  title_->setVisible(fashion);
  browse_->setText(settings_.name == "imagefolder" ? tr("Choose Folder…") : text ? tr("Choose…") : tr("Choose File…"));
  rescan_->setVisible(settings_.name == "imagefolder");
  browse_->setMenu(text ? textMenu_ : nullptr);  // a folder of class subfolders, or one file
}

void DatasetPanel::onSourceChanged(int index) {
  const std::string name = source_->itemData(index).toString().toStdString();
  if (name == settings_.name) return;
  DatasetSettings s = settings_;
  s.name = name;
  if (name != "csv") s.task = "classification", s.missing = "error";  // a table's settings
  if (name == "fashion-mnist") {
    emit chosen();
    setSettings(s);
    return;
  }
  // A path of the other kind (a folder for a file) is asked for again; texts take either.
  const bool folder = name == "imagefolder";
  if (name == "text" && !s.path.empty()) {
    if (s.name != settings_.name) s.label.clear();  // a table's label column is not a text file's
    emit chosen();
    setSettings(s);
    return;
  }
  if (name == "text") {
    settings_.name = name;
    showSourceWidgets();
    chooseTextPath(true);
    return;
  }
  if (s.path.empty() || QFileInfo(QString::fromStdString(s.path)).isDir() != folder) {
    s.path.clear();
    settings_.name = name;  // the dialog asks for the new kind
    showSourceWidgets();
    choosePath();
    return;
  }
  setSettings(s);
}

void DatasetPanel::choosePath() {
  if (settings_.name == "text") {  // a folder unless the current path is a file
    chooseTextPath(settings_.path.empty() || QFileInfo(QString::fromStdString(settings_.path)).isDir());
    return;
  }
  const QString start = !settings_.path.empty() ? QFileInfo(QString::fromStdString(settings_.path)).absolutePath()
                        : !baseDir_.isEmpty()    ? baseDir_
                                                 : QDir::currentPath();
  const QString picked =
      settings_.name == "imagefolder"
          ? QFileDialog::getExistingDirectory(this, tr("Image Folder (one subfolder per class)"), start)
          : QFileDialog::getOpenFileName(this, settings_.name == "csv" ? tr("CSV Table") : tr("Image List CSV"), start,
                                         tr("Tables (*.csv *.tsv *.csv.gz *.tsv.gz *.txt);;All files (*)"));
  if (picked.isEmpty()) {  // cancelled: the last usable choice stays
    source_->setCurrentIndex(std::max(0, source_->findData(QString::fromStdString(settings_.name))));
    if (settings_.path.empty()) {
      DatasetSettings s = settings_;
      s.name = "fashion-mnist";
      settings_.name = "";  // setSettings sees a change
      setSettings(s);
    }
    return;
  }
  DatasetSettings s = settings_;
  s.path = QDir::cleanPath(picked).toStdString();
  if (s.name == "csv") s.label.clear();
  settings_.path.clear();
  emit chosen();
  setSettings(s);
}

void DatasetPanel::chooseTextPath(bool folder) {
  const QString start = !settings_.path.empty() ? QFileInfo(QString::fromStdString(settings_.path)).absolutePath()
                        : !baseDir_.isEmpty()    ? baseDir_
                                                 : QDir::currentPath();
  const QString picked =
      folder ? QFileDialog::getExistingDirectory(this, tr("Text Folder (one subfolder of .txt files per class)"), start)
             : QFileDialog::getOpenFileName(this, tr("Texts with Labels"), start,
                                            tr("Texts (*.csv *.tsv *.jsonl *.ndjson *.csv.gz *.tsv.gz);;All files (*)"));
  if (picked.isEmpty()) {  // cancelled: the last usable choice stays
    if (settings_.path.empty() || settings_.name != "text") {
      DatasetSettings s = settings_;
      s.name = settings_.path.empty() ? "fashion-mnist" : s.name;
      settings_.name = "";  // setSettings sees a change
      setSettings(s);
    }
    return;
  }
  DatasetSettings s = settings_;
  s.name = "text";
  s.path = QDir::cleanPath(picked).toStdString();
  settings_.path.clear();
  emit chosen();
  setSettings(s);
}

void DatasetPanel::onTextOptionsChanged() {
  if (updating_ || settings_.name != "text") return;
  DatasetSettings s = settings_;
  s.text_column = textColumn_->text().trimmed().isEmpty() ? std::string("text") : textColumn_->text().trimmed().toStdString();
  s.label = textLabel_->text().trimmed().toStdString();
  s.tokenizer = tokenizer_->currentData().toString().toStdString();
  s.max_length = maxLength_->value();
  s.vocab_size = vocabSize_->value();
  if (s == settings_) return;
  emit chosen();
  setSettings(s);
}

void DatasetPanel::onCsvOptionsChanged() {
  if (updating_ || settings_.name != "csv") return;
  DatasetSettings s = settings_;
  s.label = label_->currentData().toString().toStdString();
  s.header = header_->isChecked();
  s.skip_rows = skipRows_->value();
  emit chosen();
  setSettings(s);
}

void DatasetPanel::loadSource() {
  loaded_ = false;
  error_.clear();
  preview_->setDataset(nullptr);
  status_->setStyleSheet({});
  setStatus(tr("Reading %1…").arg(elideLongWords(QString::fromStdString(settings_.path), kLongWord).toHtmlEscaped()),
            QString::fromStdString(settings_.path));
  watcher_.waitForFinished();
  watcher_.setFuture(QtConcurrent::run(summarize_source, settings_, kSamples, indexStore_, rescanNext_));
  rescanNext_ = false;
}

void DatasetPanel::setStatus(const QString& html, const QString& full) {
  status_->setText(html);
  status_->setToolTip(full);
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
    classesError_->setText(elideLongWords(message, kLongWord));
    classesError_->setToolTip(QString::fromUtf8(e.what()));
    classesError_->show();
    return;
  }
  classesError_->hide();
  setSettings(s);
}

void DatasetPanel::updateSummaryText() {
  if (!settings_.is_fashion_mnist()) {
    summary_->setText(tr("Held out by class: %1 % for testing, %2 % for validation.")
                          .arg(100 * settings_.test_fraction, 0, 'g', 3)
                          .arg(100 * settings_.validation_fraction, 0, 'g', 3));
    return;
  }
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
                             thousands(k * DatasetSettings::kTrainPerClass), elideLongWords(classes, kLongWord), test));
}

void DatasetPanel::load(const QString& dir) {
  loaded_ = false;
  error_.clear();
  preview_->setDataset(nullptr);
  setStatus(tr("Reading Fashion-MNIST from %1…").arg(elideLongWords(dir, kLongWord).toHtmlEscaped()), dir);
  watcher_.waitForFinished();
  watcher_.setFuture(QtConcurrent::run(summarize_fashion_mnist, dir, kSamples));
}

void DatasetPanel::showSummary(const DatasetSummary& s) {
  shown_ = s;
  if (!s.kind.isEmpty()) {
    showSourceSummary(s);
    emit loaded();
    return;
  }
  error_ = s.error;
  loaded_ = s.error.isEmpty();
  if (!loaded_) {
    showReadError(s.error);
  } else {
    status_->setStyleSheet({});
    const QString dir = QString::fromStdString(settings_.dir);
    setStatus(tr("%1 training and %2 test images in %3. Samples from the training split:")
                  .arg(thousands(s.train_images), thousands(s.test_images), elideLongWords(dir, kLongWord).toHtmlEscaped()),
              dir);
    QStringList labels;
    for (int l : s.sample_labels) labels << class_name(l);
    grid_->setSamples(s.samples, labels);
  }
  setClassRows(kNumClasses);
  counts_->setHorizontalHeaderLabels({tr("Class"), tr("Train"), tr("Test"), tr("Share")});
  for (int c = 0; c < kNumClasses; ++c) counts_->setItem(c, 0, new QTableWidgetItem(class_name(c)));
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

// The reader's message as it is (it names the file, line and column), in red, without samples.
void DatasetPanel::showReadError(const QString& error) {
  setStatus(tr("<b>The data set cannot be read.</b> %1").arg(elideLongWords(error, kLongWord).toHtmlEscaped()), error);
  status_->setStyleSheet("color: #e06c6c");
  grid_->setSamples({}, {});
}

void DatasetPanel::setClassRows(int rows) {
  if (counts_->rowCount() == rows) return;
  counts_->setRowCount(rows);
  for (int c = 0; c < rows; ++c)
    if (!counts_->cellWidget(c, 3)) {
      auto* bar = new QProgressBar;
      bar->setTextVisible(true);
      bar->setMaximumHeight(18);
      bar->setValue(0);
      counts_->setCellWidget(c, 3, bar);
    }
}

void DatasetPanel::showSourceSummary(const DatasetSummary& s) {
  error_ = s.error;
  loaded_ = s.error.isEmpty();
  if (!loaded_) {
    showReadError(s.error);
    textPreview_->hide();
    setClassRows(0);
    return;
  }
  if (s.kind == "text") {
    textPreview_->setSummary(s.text);
    textPreview_->show();
  } else {
    textPreview_->hide();
  }
  status_->setStyleSheet({});
  QString text = elideLongWords(s.details, kLongWord).toHtmlEscaped();
  if (!s.skipped.isEmpty()) {
    text += "<br><b>" + tr("Skipped (not used):") + "</b>";
    for (const QString& f : s.skipped) text += "<br>" + elideLongWords(f, kLongWord).toHtmlEscaped();
  }
  for (const QString& n : s.notes) text += "<br><i>" + elideLongWords(n, kLongWord).toHtmlEscaped() + "</i>";
  if (s.kind != "csv" && s.kind != "text") text += "<br>" + tr("Samples from the training split:");
  // The tooltip: the skipped files' whole paths (the first kSkippedInTooltip).
  QString full = s.details;
  if (!s.notes.isEmpty()) full += "\n" + s.notes.join("\n");
  if (!s.skipped.isEmpty()) full += "\n" + s.skipped.mid(0, kSkippedInTooltip).join("\n");
  if (s.skipped.size() > kSkippedInTooltip) full += "\n" + tr("… and %n more", nullptr, int(s.skipped.size() - kSkippedInTooltip));
  setStatus(text, full);
  QStringList labels;
  for (int l : s.sample_labels) labels << s.class_names.value(l);
  grid_->setSamples(s.samples, labels);
  preview_->setDataset(s.image_train);
  // The label column's choices: the header's columns.
  if (s.kind == "csv") {
    updating_ = true;
    label_->clear();
    for (const QString& c : s.columns) label_->addItem(c, c);
    const QString want = QString::fromStdString(settings_.label);
    if (!want.isEmpty() && label_->findData(want) < 0) label_->addItem(want, want);  // an index ("-1", "0")
    label_->setCurrentIndex(label_->findData(want.isEmpty() ? s.label : want));
    updating_ = false;
  }
  const int rows = static_cast<int>(s.class_names.size());
  setClassRows(rows);
  counts_->setHorizontalHeaderLabels({tr("Class"), tr("Samples"), QString(), tr("Share")});
  const int64_t most = s.class_counts.empty() ? 1 : std::max<int64_t>(1, *std::max_element(s.class_counts.begin(), s.class_counts.end()));
  for (int c = 0; c < rows; ++c) {
    const int64_t n = c < int(s.class_counts.size()) ? s.class_counts[size_t(c)] : 0;
    counts_->setItem(c, 0, new QTableWidgetItem(s.class_names[c]));
    counts_->setItem(c, 1, new QTableWidgetItem(thousands(n)));
    counts_->setItem(c, 2, new QTableWidgetItem(QString()));
    auto* bar = static_cast<QProgressBar*>(counts_->cellWidget(c, 3));
    bar->setRange(0, int(most));
    bar->setValue(int(n));
    bar->setFormat(s.total ? QString("%1 %").arg(100.0 * double(n) / double(s.total), 0, 'f', 1) : QString("–"));
  }
}

}  // namespace kiln::studio
