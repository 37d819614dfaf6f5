// DatasetPanel: Fashion-MNIST as shipped by the Debian package dataset-fashion-mnist
// (engine/data/fashion_mnist.h): the split sizes a run uses, a grid of sample training images
// with their class names, and the images per class of the training and test splits; or another
// source (an image folder or manifest, a CSV table, texts with their tokenizer: text_preview.h
// shows their samples, tokens and lengths). The files are read on a worker thread
// (QtConcurrent); when they are missing or malformed the panel shows the engine's message
// (naming the file and line, or the package to install) instead of the samples.
#pragma once
#include <QFutureWatcher>
#include <QImage>
#include <QMetaType>
#include <QStringList>
#include <QWidget>
#include <array>
#include <memory>
#include <vector>

#include "widgets/project/augment_preview.h"
#include "widgets/project/dataset_settings.h"
#include "widgets/project/dataset_summary.h"
#include "widgets/project/sample_grid.h"
#include "widgets/project/source_options.h"
#include "widgets/project/text_preview.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QLineEdit;
class QMenu;
class QSpinBox;
class QTableWidget;

namespace kiln::studio {

class DatasetPanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kSamples = 40;
  // Fitting a 226 px dock (1366x768): combo boxes are sized for kComboChars characters, and the
  // status line's words over kLongWord characters (paths) are shortened in the middle; its
  // tooltip has them in full, with the first kSkippedInTooltip skipped files.
  static constexpr int kComboChars = 14;
  static constexpr int kLongWord = 28;
  static constexpr int kSkippedInTooltip = 30;
  // Starts reading settings.dir in the background; ValueError when settings are invalid.
  explicit DatasetPanel(QWidget* parent = nullptr, const DatasetSettings& settings = {});
  ~DatasetPanel() override;

  DatasetSettings settings() const;
  // Shows s (ValueError from s.validate() when invalid; the panel keeps its values);
  // reloads the samples when s.dir differs. Emits settingsChanged.
  void setSettings(const DatasetSettings& s);

  bool isLoaded() const { return loaded_; }           // samples and counts are shown
  QString errorText() const { return error_; }         // "" unless the data set could not be read
  const SampleGrid* sampleGrid() const { return grid_; }
  const QTableWidget* classTable() const { return counts_; }
  QSpinBox* validationSpin() const { return validation_; }
  QSpinBox* trainSpin() const { return train_; }
  QSpinBox* testSpin() const { return test_; }        // 0 shows "all"
  QSpinBox* testSeedSpin() const { return testSeed_; }  // enabled while testSpin() > 0
  QLineEdit* classesEdit() const { return classes_; }  // "" = all ten; applied on editingFinished
  QString classesError() const;                        // why the classes text is not applied ("" = it is)
  QComboBox* sourceCombo() const { return source_; }   // Fashion-MNIST, image folder, image manifest, CSV table
  QComboBox* labelCombo() const { return label_; }     // csv: the label column (from the header)
  // text: the tokenizer, max length and vocabulary size (applied when changed: the data is read
  // again and the tokenizer refitted), and the samples with their tokens and the length histogram.
  QComboBox* tokenizerCombo() const { return tokenizer_; }
  QSpinBox* maxLengthSpin() const { return maxLength_; }
  QSpinBox* vocabSizeSpin() const { return vocabSize_; }
  QLineEdit* textColumnEdit() const { return textColumn_; }
  QLineEdit* textLabelEdit() const { return textLabel_; }
  const TextPreview* textPreview() const { return textPreview_; }
  // Another source than Fashion-MNIST: the test and validation shares, an image source's size,
  // augmentation and rotation (applied when changed: a new share or size reads the data again),
  // and the preview of one training image under the augmentation's random draws.
  SourceOptions* sourceOptions() const { return options_; }
  const AugmentPreview* augmentPreview() const { return preview_; }
  QLabel* summaryLabel() const { return summary_; }
  QLabel* statusLabel() const { return status_; }
  const DatasetSummary& summary() const { return shown_; }  // the last summary shown
  // The folder the file dialog opens in (beside the project; "" = the current directory).
  void setBaseDirectory(const QString& dir) { baseDir_ = dir; }
  // Where an image folder's verified file index is kept between openings (Kiln Studio: the
  // project, projects/index_store.h; null: none, every opening reads the files again). Set it
  // before setSettings. Rescan reads the folder again whatever is stored (and stores it anew).
  void setIndexStore(std::shared_ptr<data::IndexStore> store) { indexStore_ = std::move(store); }
  QPushButton* rescanButton() const { return rescan_; }  // shown for an image folder
  // Picks a folder or file for the current source with a dialog (tests set the path directly
  // with setSettings).
  void choosePath();

 signals:
  void settingsChanged(const kiln::studio::DatasetSettings& settings);
  void loaded();  // after a load finished, successfully or with errorText()
  void chosen();  // the user chose another source, file or CSV option (before it is read)

 private:
  void load(const QString& dir);
  void loadSource();
  void onSourceChanged(int index);
  void onCsvOptionsChanged();
  void onTextOptionsChanged();
  void chooseTextPath(bool folder);
  void showSourceWidgets();
  void showSourceSummary(const DatasetSummary& summary);
  void setClassRows(int rows);
  void showReadError(const QString& error);  // a reader error instead of samples
  void showSummary(const DatasetSummary& summary);
  void setStatus(const QString& html, const QString& full);  // the status line and its tooltip
  void onSpinChanged();
  void onClassesEdited();
  void updateSummaryText();
  void updateRanges();  // the training images the classes and the validation split leave

  DatasetSettings settings_;
  QFutureWatcher<DatasetSummary> watcher_;
  bool loaded_ = false, updating_ = false;
  QString error_;
  QLabel* status_ = nullptr;
  QLabel* summary_ = nullptr;
  QSpinBox* validation_ = nullptr;
  QSpinBox* train_ = nullptr;
  QSpinBox* test_ = nullptr;
  QSpinBox* testSeed_ = nullptr;
  QLineEdit* classes_ = nullptr;
  QLabel* classesError_ = nullptr;
  SampleGrid* grid_ = nullptr;
  QTableWidget* counts_ = nullptr;
  QComboBox* source_ = nullptr;
  QLineEdit* path_ = nullptr;
  QPushButton* browse_ = nullptr;
  QPushButton* rescan_ = nullptr;
  std::shared_ptr<data::IndexStore> indexStore_;
  bool rescanNext_ = false;
  QComboBox* label_ = nullptr;
  QCheckBox* header_ = nullptr;
  QSpinBox* skipRows_ = nullptr;
  QWidget* fashionBox_ = nullptr;
  QWidget* sourceBox_ = nullptr;
  QWidget* csvBox_ = nullptr;
  QWidget* textBox_ = nullptr;
  QLineEdit* textColumn_ = nullptr;
  QLineEdit* textLabel_ = nullptr;
  QComboBox* tokenizer_ = nullptr;
  QSpinBox* maxLength_ = nullptr;
  QSpinBox* vocabSize_ = nullptr;
  TextPreview* textPreview_ = nullptr;
  SourceOptions* options_ = nullptr;
  AugmentPreview* preview_ = nullptr;
  QWidget* gridScroll_ = nullptr;
  QMenu* textMenu_ = nullptr;
  QLabel* title_ = nullptr;
  QString baseDir_;
  DatasetSummary shown_;
};

}  // namespace kiln::studio

Q_DECLARE_METATYPE(kiln::studio::DatasetSettings)
