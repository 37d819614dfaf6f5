// kiln-studio: the Kiln Studio window, or its terminal mode with --headless.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>

#include "app/omp_wait.h"
#include "app/studio/headless.h"
#include "app/studio/headless_sweep.h"
#include "app/studio/main_window.h"
#include "app/studio/screenshot_demo.h"

namespace {

bool haveDisplay() {
  return std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY") || std::getenv("QT_QPA_PLATFORM");
}

// --headless, and --help / --version (which print and exit), need no display.
bool isHeadless(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const QByteArray a(argv[i]);
    if (a == "--headless" || a == "--help" || a == "-h" || a == "--help-all" || a == "--version" || a == "-v")
      return true;
  }
  return false;
}

void addOptions(QCommandLineParser& p) {
  p.setApplicationDescription("Kiln Studio: build, train and evaluate neural networks.\n"
                              "Exit status (--headless): 0 finished, 1 the run or its data failed, 2 a mistake on the "
                              "command line (an unknown flag, a bad value), 130 stopped with Ctrl-C.");
  p.addHelpOption();
  p.addVersionOption();
  p.addPositionalArgument("project", "A .kiln project to open.", "[project.kiln]");
  p.addOption({"headless", "Run in the terminal, without a window."});
  p.addOption({"project", "The project to train (with --headless --train).", "file"});
  p.addOption({"train", "Train the project's latest graph with its stored settings."});
  p.addOption({"epochs", "Epochs (overrides the stored setting; --headless --new FILE without --train stores it, as "
                       "--lr, --batch-size, --device and --checkpoint-every).", "n"});
  p.addOption({"lr", "With --headless --train: the learning rate, the peak rate with OneCycle (overrides the stored setting).", "x"});
  p.addOption({"batch-size", "With --headless --train: samples per batch (overrides the stored setting).", "n"});
  p.addOption({"subset", "Train on n Fashion-MNIST images, validate on n/5 at most (a quick run; the test set is kept).", "n"});
  p.addOption({"test-subset", "Evaluate n test images, a random subset drawn with --test-seed (recorded with the run as its test_size and test_seed).", "n"});
  p.addOption({"test-seed", "Seed of the --test-subset images (default: the project's dataset setting, 0): the same seed, the same images.", "s"});
  p.addOption({"device", "Device: auto, cpu, cuda:0, vulkan:0 ...", "device"});
  p.addOption({"new", "Create a project from --template (opened in the window unless --headless). An existing file is opened "
                      "in the window, trained with --headless --train, and refused by --headless alone.", "file"});
  p.addOption({"template", "Template of --new: fashion_mnist_mlp, fashion_mnist_cnn, residual_cnn, image_folder_cnn, table_mlp, "
                           "text_classifier_lstm, small_transformer_classifier.", "name"});
  p.addOption({"dataset", "With --headless: train on imagefolder:DIR, images:FILE.csv, csv:FILE or text:DIR|FILE (stored in the project; "
                          "the graph's Input and class scores are fitted to it; --new FILE without --train stores it and trains nothing).", "spec"});
  p.addOption({"label", "With --dataset csv:FILE: the label column, by name or 0-based index (default: the last).", "column"});
  p.addOption({"skip-rows", "With --dataset csv:FILE: lines to skip before the header or data (default 0; 1 for scikit-learn's tables).", "n"});
  p.addOption({"no-header", "With --dataset csv:FILE: the first row is data; columns are named 0, 1, ..."});
  p.addOption({"task", "With --dataset csv:FILE: classification (the label's values are the classes) or regression "
                       "(a numeric label, one output, mean squared error). Default: the project's stored task for the same table and label, "
                       "else classification.", "task"});
  p.addOption({"tokenizer", "With --dataset text:DIR|FILE: word, char or sentencepiece (default: word).", "kind"});
  p.addOption({"max-length", "With --dataset text:DIR|FILE: tokens per text; longer texts are truncated (default: 256).", "n"});
  p.addOption({"vocab-size", "With --dataset text:DIR|FILE: the most vocabulary entries (default: 20000).", "n"});
  p.addOption({"missing", "With --headless --train on a CSV table: missing values (empty, NA, NaN, ?, ...): error names "
                          "the line, drop drops the row, fill uses the training split's mean or mode (as kiln train "
                          "--missing; overrides the project's setting for this run; with --new FILE --dataset csv:FILE "
                          "without --train it is stored as the project's setting).", "policy"});
  p.addOption({"rescan", "With --headless --train on an image folder: read and check every file again instead of the "
                         "project's stored file index (a file rewritten in place is not seen by it)."});
  p.addOption({"text-column", "With --dataset text:FILE: the text column of a CSV or key of a JSON-lines file (default: text; "
                              "--label names the label column, default: label).", "name"});
  // Hyper-parameter sweeps (headless_sweep.h; `kiln sweep` runs kiln-studio --headless --sweep).
  p.addOption({"sweep", "With --headless --project: run a hyper-parameter sweep (see --param)."});
  p.addOption({"param", "With --sweep: NAME=VALUES, repeatable. NAME: lr, batch-size, optimizer, scheduler, epochs, "
                        "weight-decay or NODE.ATTRIBUTE (conv1.out_channels); VALUES: a list (64,128; sgd,adam) or a range "
                        "LO:HI[:log][:POINTS] (grid search takes POINTS values, default 3).", "name=values"});
  p.addOption({"trials", "With --sweep: trials of a random search (required), or at most n of a grid.", "n"});
  p.addOption({"search", "With --sweep: grid (default) or random.", "kind"});
  p.addOption({"seed", "With --sweep --search random: the seed of the draws (default 0): the same seed, the same trials.", "s"});
  p.addOption({"devices", "With --sweep: device lanes, one trial per lane at a time (cpu,cuda:0; a device may repeat). "
                          "Default: the project's device setting.", "list"});
  p.addOption({"objective", "With --sweep: val_accuracy (default, higher is better) or val_loss.", "name"});
  p.addOption({"prune-startup", "With --sweep: finished trials needed before the median rule stops bad trials "
                                "(default 2; 0: never).", "n"});
  p.addOption({"resume", "With --headless --project: continue the project's latest stopped, interrupted or failed run (or "
                         "--run's) from its newest checkpoint, with the run's own settings. With --sweep: continue the "
                         "project's latest unfinished sweep."});
  p.addOption({"run", "With --resume: the id of the run to continue.", "n"});
  p.addOption({"checkpoint-every", "With --headless --train (or --new without it, stored): a checkpoint every N optimizer steps or every N minutes "
                                   "(Nm) in the middle of epochs too, stored in the project for --resume (default: the "
                                   "project's setting, 10m; 0: at epoch ends only).", "N|Nm"});
  p.addOption({"json", "With --sweep: print the results as one JSON object."});
  QCommandLineOption demo("screenshot-demo", "Save screenshots of a scripted session into dir.", "dir");
  demo.setFlags(QCommandLineOption::HiddenFromHelp);
  p.addOption(demo);
  QCommandLineOption onnxShot("screenshot-onnx", "With --screenshot-demo: import file and save screenshots of it.", "file");
  onnxShot.setFlags(QCommandLineOption::HiddenFromHelp);
  p.addOption(onnxShot);
}

// A command-line mistake (an unknown flag, a missing or bad value) exits 2, as `kiln`'s do
// (docs/cli.md "Exit status"); 1 is kept for what fails while running.
constexpr int kUsageError = 2;

long long number(const QCommandLineParser& p, const char* name, long long min = 1,
                 long long max = std::numeric_limits<long long>::max(), const char* who = "kiln-studio") {
  if (!p.isSet(name)) return 0;
  bool ok = false;
  long long v = p.value(name).toLongLong(&ok);
  if (!ok || v < min || v > max) {
    if (max == std::numeric_limits<long long>::max())
      std::fprintf(stderr, "%s: --%s needs a whole number >= %lld, got '%s'\n", who, name, min, p.value(name).toUtf8().constData());
    else
      std::fprintf(stderr, "%s: --%s needs a whole number from %lld to %lld, got '%s'\n", who, name, min, max,
                   p.value(name).toUtf8().constData());
    std::exit(kUsageError);
  }
  return v;
}
long long sweepNumber(const QCommandLineParser& p, const char* name, long long min = 1) {
  return number(p, name, min, std::numeric_limits<long long>::max(), "kiln sweep");
}
// For options held in an int (epochs, batch size).
int intNumber(const QCommandLineParser& p, const char* name, long long min = 1, const char* who = "kiln-studio") {
  return static_cast<int>(number(p, name, min, std::numeric_limits<int32_t>::max(), who));
}

// QCommandLineParser::process would exit 1 on a parse error: parse, print, exit 2; --help,
// --help-all and --version print and exit 0.
void parseOrExit(QCommandLineParser& p, const QStringList& arguments, const char* who) {
  if (!p.parse(arguments)) {
    std::fprintf(stderr, "%s: %s\n", who, p.errorText().toUtf8().constData());
    std::exit(kUsageError);
  }
  if (p.isSet("help")) p.showHelp(0);
  if (p.isSet("help-all")) p.showHelp(0);
  if (p.isSet("version")) p.showVersion();
  // An option given twice would keep its last value silently (QCommandLineParser::value); only
  // --param is repeatable.
  const QStringList names = p.optionNames();
  for (const QString& name : names)
    if (name != "param" && names.count(name) > 1) {
      const QStringList values = p.values(name);
      const QString twice = values.size() > 1 ? QString(" ('%1' and '%2'); it takes one value").arg(values[0], values[1])
                                              : QString();
      std::fprintf(stderr, "%s: --%s given twice%s (see --help)\n", who, name.toUtf8().constData(), twice.toUtf8().constData());
      std::exit(kUsageError);
    }
}

}  // namespace

int main(int argc, char** argv) {
  kiln::app::use_short_omp_spin(argv);  // app/omp_wait.h: may execute kiln-studio again with GOMP_SPINCOUNT set
  const bool headless = isHeadless(argc, argv);
  if (!headless && !haveDisplay()) {
    std::fprintf(stderr,
                 "kiln-studio: no display found (DISPLAY and WAYLAND_DISPLAY are not set).\n"
                 "  To train in the terminal:  kiln-studio --headless --project FILE.kiln --train\n"
                 "  To make a project:         kiln-studio --headless --new FILE.kiln --template fashion_mnist_cnn\n"
                 "  Or run under a virtual display: xvfb-run kiln-studio\n");
    return 2;
  }
  std::unique_ptr<QCoreApplication> app(headless ? new QCoreApplication(argc, argv) : new QApplication(argc, argv));
  QCoreApplication::setOrganizationName("Kiln");
  QCoreApplication::setApplicationName("Kiln Studio");
  QCoreApplication::setApplicationVersion(KILN_VERSION);
  // The .desktop file's id (installer/org.kiln.studio.desktop): Wayland matches the window to
  // its menu entry and icon by it.
  if (!headless) QGuiApplication::setDesktopFileName("org.kiln.studio");
  QCommandLineParser parser;
  addOptions(parser);
  const QStringList arguments = QCoreApplication::arguments();
  if (headless && arguments.contains("--sweep")) {
    parseOrExit(parser, arguments, "kiln sweep");
    kiln::studio::SweepOptions o;
    o.project = parser.value("project");
    o.params = parser.values("param");
    o.trials = sweepNumber(parser, "trials");
    if (parser.isSet("search")) o.search = parser.value("search");
    o.seed = sweepNumber(parser, "seed", 0);
    o.devices = parser.value("devices");
    if (parser.isSet("objective")) o.objective = parser.value("objective");
    if (parser.isSet("prune-startup")) o.pruneStartup = sweepNumber(parser, "prune-startup", 0);
    o.resume = parser.isSet("resume");
    o.json = parser.isSet("json");
    o.epochs = intNumber(parser, "epochs", 1, "kiln sweep");
    o.subset = sweepNumber(parser, "subset");
    o.testSubset = sweepNumber(parser, "test-subset");
    if (parser.isSet("test-seed")) o.testSeed = sweepNumber(parser, "test-seed", 0);
    return kiln::studio::runHeadlessSweep(o);
  }
  parseOrExit(parser, arguments, "kiln-studio");

  if (headless) {
    kiln::studio::HeadlessOptions o;
    o.project = parser.value("project");
    o.train = parser.isSet("train");
    o.epochs = intNumber(parser, "epochs");
    o.batchSize = intNumber(parser, "batch-size");
    if (parser.isSet("lr")) {
      bool ok = false;
      o.lr = parser.value("lr").toDouble(&ok);
      if (!ok || !(o.lr > 0) || !std::isfinite(o.lr)) {
        std::fprintf(stderr, "kiln-studio: --lr needs a number > 0, got '%s'\n", parser.value("lr").toUtf8().constData());
        return kUsageError;
      }
    }
    o.subset = number(parser, "subset");
    o.testSubset = number(parser, "test-subset");
    if (parser.isSet("test-seed")) o.testSeed = number(parser, "test-seed", 0);
    o.device = parser.value("device");
    o.newFile = parser.value("new");
    o.templateName = parser.value("template");
    o.dataset = parser.value("dataset");
    o.label = parser.value("label");
    o.skipRows = parser.isSet("skip-rows") ? number(parser, "skip-rows", 0) : -1;
    o.noHeader = parser.isSet("no-header");
    o.task = parser.value("task");
    o.tokenizer = parser.value("tokenizer");
    o.maxLength = number(parser, "max-length");
    o.vocabSize = number(parser, "vocab-size");
    o.textColumn = parser.value("text-column");
    o.missing = parser.value("missing");
    o.rescan = parser.isSet("rescan");
    if (parser.isSet("checkpoint-every")) o.checkpointEvery = parser.value("checkpoint-every");
    o.resume = parser.isSet("resume");
    o.run = number(parser, "run");
    return kiln::studio::runHeadless(o);
  }
  kiln::studio::MainWindow::applyStyle();
  if (parser.isSet("screenshot-demo") && parser.isSet("screenshot-onnx"))
    return kiln::studio::runImportScreenshot(parser.value("screenshot-onnx"), parser.value("screenshot-demo"));
  if (parser.isSet("screenshot-demo")) return kiln::studio::runScreenshotDemo(parser.value("screenshot-demo"));
  kiln::studio::MainWindow window;
  window.show();
  if (parser.isSet("new")) {
    const QString file = parser.value("new");
    if (QFileInfo::exists(file)) window.openProject(file);
    else window.newProjectFile(file, parser.value("template").isEmpty() ? "fashion_mnist_cnn" : parser.value("template"));
  } else if (!parser.positionalArguments().isEmpty()) {
    window.openProject(parser.positionalArguments().first());
  } else {
    window.newFromTemplate("fashion_mnist_cnn");
  }
  return app->exec();
}
