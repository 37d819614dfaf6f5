// kiln-studio's terminal mode (no display needed; QCoreApplication):
//   kiln-studio --headless --project FILE --train [--epochs N] [--lr X] [--batch-size B] [--subset N]
//     [--test-subset N [--test-seed S]] [--device D]
//     trains the project's latest graph with its stored settings (its dataset setting's class
//     filter and test size included), prints progress lines
//     ("epoch 1/5 step 120/2150 loss 0.5123 lr 0.001 3120 samples/s ETA 3:02 rows committed 118"),
//     stores the run; exit status 0 finished, 1 failed (the run, its data, the project), 2 a
//     command-line mistake (an unknown flag, a bad or missing value; nothing is recorded), 130
//     stopped (Ctrl-C). A dataset whose folder or file is gone is refused before a run is recorded.
//   [--missing error|drop|fill] a CSV table's missing values for this run (kiln train --missing);
//   [--rescan] an image folder is read and checked again instead of taken from the project's
//     stored file index (a file rewritten in place since is then skipped and named).
//   kiln-studio --headless --project FILE --train --dataset csv:FILE [--label C] [--skip-rows N]
//     [--task classification|regression]
//     first sets the project's dataset and fits the graph's Input and class scores to it. The
//     stored task is kept only for the same table and label column (another starts from
//     classification). Options that nothing would read are usage errors: --label without a table
//     or text file, --skip-rows/--no-header without a table, --subset on another dataset than
//     Fashion-MNIST; so are an unknown --device (listing the devices found) and --new on an
//     existing file without --train.
//   [--checkpoint-every N|Nm] mid-epoch checkpoints every N steps or N minutes (default 10m).
//   kiln-studio --headless --project FILE --resume [--run N]
//     continues the project's latest stopped, interrupted or failed run (or run N) from its newest
//     checkpoint, mid-epoch or not, with the run's own settings; exit status as --train.
//   kiln-studio --headless --new FILE --template fashion_mnist_cnn
//     creates a project from an embedded template; with --train it then trains it (an
//     existing FILE is trained as it is: the quickstart's one command). Without --train nothing is
//     trained: --dataset SPEC (and its options, --missing included) is stored and the graph fitted
//     to it as --train would; --epochs, --lr, --batch-size, --device and --checkpoint-every are
//     stored as the project's training settings (which a later --train and the window start
//     from); --subset, --test-subset, --test-seed, --resume and --run, which are about one run,
//     are usage errors, as is --missing without a table.
#pragma once
#include <QStringList>
#include <optional>

#include "widgets/project/dataset_settings.h"

namespace kiln::studio {

struct HeadlessOptions {
  QString project;        // --project FILE
  bool train = false;     // --train
  int epochs = 0;         // --epochs N (0: the stored setting)
  double lr = 0;          // --lr X: the (peak) learning rate (0: the stored setting)
  int batchSize = 0;      // --batch-size B (0: the stored setting)
  qint64 subset = 0;      // --subset N: train on N Fashion-MNIST images (validation N/5 at most); the test set is kept
  qint64 testSubset = 0;  // --test-subset N: evaluate N test images (recorded with the run)
  qint64 testSeed = -1;   // --test-seed S: which N (test_subset_indices); -1 = the project's setting
  QString device;         // --device D ("" = stored setting)
  QString newFile;        // --new FILE
  QString templateName;   // --template NAME
  // --dataset SPEC (imagefolder:DIR | images:FILE.csv | csv:FILE | text:DIR|FILE) [--label C] [--skip-rows N]
  // [--no-header]: the project's dataset becomes SPEC (stored), and its latest graph is fitted to
  // it (graph::fit_graph_to_data, or fit_graph_to_text for texts: vocabulary and max length; saved
  // as a new graph version when that changes it).
  QString dataset;
  QString label;
  qint64 skipRows = -1;  // --skip-rows N (>= 0); -1: not given (0 is stored)
  bool noHeader = false;
  // --task classification|regression with --dataset csv:FILE: the table's task, stored as the
  // Dataset panel stores it (DatasetSettings::task; regression fits the graph to one output).
  // "" = the project's stored task for the same table and label column, else classification.
  QString task;
  // With --dataset text:DIR|FILE: --tokenizer word|char|sentencepiece, --max-length N,
  // --vocab-size N, --text-column NAME (--label names the label column); empty / 0 = the
  // project's setting (DatasetSettings' defaults: word, 256, 20000, "text").
  QString tokenizer;
  qint64 maxLength = 0, vocabSize = 0;
  QString textColumn;
  // --missing error|drop|fill: a CSV table's missing-value policy for this run (the project's
  // DatasetSettings::missing otherwise; not stored); stored as the project's by --new --dataset
  // csv:FILE without --train. "" = the project's.
  QString missing;
  // --rescan: the image folder's stored file index is not used (DatasetSource::rescan).
  bool rescan = false;
  // --checkpoint-every N|Nm with --train (or stored by --new without it): a mid-epoch checkpoint every N optimizer steps or N
  // minutes, stored in the project (TrainingConfig::checkpoint_steps / _minutes; "" = the stored
  // setting, 10 minutes by default; nullopt: not given).
  std::optional<QString> checkpointEvery;
  // --resume [--run N]: continue run N, or the project's latest stopped, interrupted or failed run with a
  // checkpoint, with its own settings (TrainingSession::resume); the options that would change
  // them are usage errors.
  bool resume = false;
  qint64 run = 0;
};

// --subset, --test-subset and --test-seed applied to a run's dataset settings (0 / -1: not
// given): Fashion-MNIST trains on `subset` images (validation subset/5 at most) and tests
// min(testSubset, 10000) drawn with testSeed; another dataset tests testSubset samples (all
// when 0). Returns the test size for TrainingSession::start.
int64_t applySubsets(qint64 subset, qint64 testSubset, qint64 testSeed, DatasetSettings& dataset);

// "" when --subset N (`subset` > 0) applies to the dataset of kind `kind` ("fashion-mnist",
// "imagefolder", "csv" ...; `dataset` names it in the message), else why not: only Fashion-MNIST
// trains on a subset of its images, another dataset would silently be trained on whole.
QString subsetProblem(qint64 subset, const std::string& kind, const QString& dataset);

// Runs the mode inside an existing Q(Core)Application; returns the exit status (0, 1, 2 for a
// command-line mistake, 130). Errors go to stderr in plain words.
int runHeadless(const HeadlessOptions& options);

}  // namespace kiln::studio
