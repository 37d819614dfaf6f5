#include "app/studio/headless.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTimer>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <functional>
#include <optional>

#include "app/studio/templates.h"
#include "app/studio/training_session.h"
#include "engine/core/registry.h"
#include "engine/data/dataset_source.h"
#include "engine/graph/analysis.h"
#include "engine/graph/fit_data.h"
#include "engine/graph/json.h"
#include "engine/train/checkpoint_every.h"
#include "projects/index_store.h"
#include <limits>
#include "widgets/training/training_panel.h"

namespace kiln::studio {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void onInterrupt(int) { g_interrupted = 1; }

void out(const QString& line) {
  std::fprintf(stdout, "%s\n", line.toUtf8().constData());
  std::fflush(stdout);
}
void err(const QString& line) {
  std::fprintf(stderr, "kiln-studio: %s\n", line.toUtf8().constData());
  std::fflush(stderr);
}

// A command-line mistake exits 2 (as `kiln`'s), before anything is read or recorded.
constexpr int kUsageError = 2;

// "" when `name` is empty, auto or a device found here, else what is wrong, listing the devices
// found (the engine's DeviceError names them for a well-formed name).
QString deviceProblem(const QString& name) {
  if (name.isEmpty() || name == "auto") return {};
  try {
    backend_for(Device::parse(name.toStdString()));
    return {};
  } catch (const DeviceError& e) {
    std::string why = e.what();
    if (why.find("devices found") == std::string::npos) {
      why += "; devices found: ";  // as the registry lists them: "cpu, vulkan:0"
      for (const DeviceInfo& d : list_devices()) why += (why.back() == ' ' ? "" : ", ") + d.device.str();
    }
    return QString("--device %1: %2").arg(name, QString::fromStdString(why));
  }
}

// The options' own values checked before a project is opened: "" or what is wrong.
QString usageProblem(const HeadlessOptions& o) {
  if (!o.task.isEmpty() && o.dataset.isEmpty())
    return "--task needs --dataset csv:FILE: the table whose label column it is about";
  if (!o.task.isEmpty() && o.task != "classification" && o.task != "regression")
    return QString("--task must be classification or regression, got '%1'").arg(o.task);
  if (!o.missing.isEmpty() && o.missing != "error" && o.missing != "drop" && o.missing != "fill")
    return QString("--missing must be error, drop or fill (as kiln train --missing), got '%1'").arg(o.missing);
  if (!o.tokenizer.isEmpty() && o.tokenizer != "word" && o.tokenizer != "char" && o.tokenizer != "sentencepiece")
    return QString("--tokenizer must be word, char or sentencepiece, got '%1'").arg(o.tokenizer);
  const QString kind = o.dataset.section(':', 0, 0);
  if (!o.dataset.isEmpty()) {
    if (!o.dataset.contains(':') || !QStringList{"imagefolder", "images", "csv", "text"}.contains(kind) ||
        o.dataset.section(':', 1).isEmpty())
      return QString("--dataset expects imagefolder:DIR, images:FILE.csv, csv:FILE or text:DIR|FILE, got '%1'").arg(o.dataset);
    if (o.task == "regression" && kind != "csv")
      return QString("--task regression needs --dataset csv:FILE (a table with a numeric label column), not '%1'").arg(o.dataset);
  }
  // The options of a table (or a text file) are refused where nothing would read them.
  if (!o.label.isEmpty() && o.dataset.isEmpty())
    return "--label needs --dataset csv:FILE or text:FILE: the table whose label column it names";
  if (!o.label.isEmpty() && (kind == "imagefolder" || kind == "images"))
    return QString("--label names the label column of a table (csv:FILE, text:FILE); the classes of '%1' are %2")
        .arg(o.dataset, kind == "imagefolder" ? "its subfolders' names" : "the manifest's label column (path,label)");
  if ((o.skipRows >= 0 || o.noHeader) && kind != "csv")
    return QString("%1 applies to --dataset csv:FILE%2")
        .arg(o.skipRows >= 0 ? "--skip-rows" : "--no-header",
             o.dataset.isEmpty() ? QString(": the table whose lines it is about") : QString(", not '%1'").arg(o.dataset));
  if (const QString d = deviceProblem(o.device); !d.isEmpty()) return d;
  if (o.checkpointEvery && !kiln::train::parse_checkpoint_every(o.checkpointEvery->toStdString()))
    return QString::fromStdString(kiln::train::checkpoint_every_problem(o.checkpointEvery->toStdString()));
  if (!o.newFile.isEmpty()) {
    if (!o.train) {
      // Without --train the run options are stored as the project's training settings
      // (storeSettings); these choose or continue one run's samples and have nowhere to go.
      QStringList runOnly;
      if (o.subset > 0) runOnly << "--subset";
      if (o.testSubset > 0) runOnly << "--test-subset";
      if (o.testSeed >= 0) runOnly << "--test-seed";
      if (o.resume) runOnly << "--resume";
      if (o.run > 0) runOnly << "--run";
      if (!runOnly.isEmpty())
        return QString("%1 %2 about a run and not stored in the project; add --train to train it now (--epochs, --lr, "
                       "--batch-size, --device and --checkpoint-every are stored without it)")
            .arg(runOnly.join(", "), runOnly.size() > 1 ? "are" : "is");
      if (!o.missing.isEmpty() && kind != "csv")
        return QString("--missing applies to a CSV table: --dataset csv:FILE%1")
            .arg(o.dataset.isEmpty() ? QString() : QString(", not '%1'").arg(o.dataset));
      if (o.rescan && o.dataset.isEmpty())
        return "--rescan without --train reads the image folder of --dataset imagefolder:DIR; add --dataset or --train";
    }
    if (!o.train && QFileInfo::exists(o.newFile))
      return QString("%1 exists; open it without --new (--project %1 --train), or remove it").arg(o.newFile);
    const bool create = !(o.train && QFileInfo::exists(o.newFile));
    if (create && o.templateName.isEmpty())
      return QString("--new needs --template NAME (known: %1)").arg(templateNames().join(", "));
    if (create && !templateNames().contains(o.templateName))
      return QString("unknown template '%1' (known: %2)").arg(o.templateName, templateNames().join(", "));
    return {};
  }
  if (o.run > 0 && !o.resume) return "--run N needs --resume: it names the run to continue";
  if (o.resume) {
    // A run continues with its own settings (the same order and draws): nothing to override.
    QStringList given;
    if (o.train) given << "--train";
    if (!o.newFile.isEmpty()) given << "--new";
    if (!o.dataset.isEmpty()) given << "--dataset";
    if (o.epochs > 0) given << "--epochs";
    if (o.lr > 0) given << "--lr";
    if (o.batchSize > 0) given << "--batch-size";
    if (o.subset > 0) given << "--subset";
    if (o.testSubset > 0) given << "--test-subset";
    if (!o.device.isEmpty()) given << "--device";
    if (o.checkpointEvery) given << "--checkpoint-every";
    if (!o.missing.isEmpty()) given << "--missing";
    if (!given.isEmpty())
      return QString("--resume continues a run with its own settings, graph and device; drop %1").arg(given.join(", "));
    if (o.project.isEmpty()) return "--resume needs --project FILE: the project whose run to continue";
    return {};
  }
  if (o.project.isEmpty()) return "--headless needs --project FILE --train, or --new FILE --template NAME";
  if (!o.train) return "--headless --project FILE: add --train to train its latest graph, or --resume to continue a run";
  return {};
}

// Whether two dataset settings name the same table file and label column.
bool sameTable(const DatasetSettings& a, const DatasetSettings& b) {
  if (a.name != b.name || a.label != b.label) return false;
  if (a.path == b.path) return true;
  const QFileInfo x(QString::fromStdString(a.path)), y(QString::fromStdString(b.path));
  return x.exists() && y.exists() && x.canonicalFilePath() == y.canonicalFilePath();
}

// --epochs, --lr, --batch-size, --device and --checkpoint-every (those given) set in `config`;
// whether any was given.
bool applyRunOptions(const HeadlessOptions& o, TrainingConfig& config) {
  if (o.epochs > 0) config.epochs = o.epochs;
  if (o.lr > 0) config.lr = o.lr;
  if (o.batchSize > 0) config.batch_size = o.batchSize;
  if (!o.device.isEmpty()) config.device = o.device.toStdString();
  if (const auto every = o.checkpointEvery ? kiln::train::parse_checkpoint_every(o.checkpointEvery->toStdString()) : std::nullopt) {
    config.checkpoint_steps = every->steps;
    config.checkpoint_minutes = every->minutes;
  }
  return o.epochs > 0 || o.lr > 0 || o.batchSize > 0 || !o.device.isEmpty() || o.checkpointEvery;
}

int runSession(const HeadlessOptions& o, int64_t graphVersion, const QString& failure,
               const std::function<bool(TrainingSession&, QString*)>& start);

int createProject(const HeadlessOptions& o) {
  projects::Project p = createFromTemplate(o.newFile.toStdString(), o.templateName);
  out(QString("created %1 from template %2").arg(QString::fromStdString(p.path()), o.templateName));
  return 0;
}

// A run is stored in the project file (SQLite: the file and a journal beside it), so a read-only
// file or directory fails before the run instead of after it: false, said on stderr.
bool writable(const QString& project, const char* what) {
  const QFileInfo file(project), dir(QFileInfo(project).absolutePath());
  if (!file.exists() || (file.isWritable() && dir.isWritable())) return true;
  err(QString("cannot %1 %2: the project is read-only (%3 is not writable); use Save As in Kiln Studio to keep changes")
          .arg(what, project, file.isWritable() ? dir.absoluteFilePath() : file.absoluteFilePath()));
  return false;
}

// --dataset SPEC (with --label, --task, --skip-rows, --no-header and the text options) for
// `project`, whose stored dataset setting `dataset` holds: reads it (printing its description and
// notes), fits `g` to its samples and classes (a changed graph is saved as a new version, then
// `version`) and stores the new setting (with storedMissing as its missing policy), as the Studio's
// Dataset panel does. `dataset` becomes the new setting. 0, or 1 after printing
// "<failure> on SPEC: <why>" (nothing stored).
int useDataset(const HeadlessOptions& o, projects::Project& project, graph::Graph& g,
               std::optional<projects::GraphVersion>& version, DatasetSettings& dataset,
               const std::string& storedMissing, uint64_t seed, const QString& failure) {
  const DatasetSettings stored0 = dataset;
  const std::string spec = o.dataset.toStdString();
  const size_t colon = spec.find(':');
  dataset.name = colon == std::string::npos ? spec : spec.substr(0, colon);
  dataset.path = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
  dataset.label = o.label.toStdString();
  // The stored task is the stored table's: another table (or label column) starts from
  // classification, as `kiln train --dataset csv:FILE` does, unless --task says otherwise.
  if (o.task.isEmpty() && dataset.task != "classification" && !(dataset.name == "csv" && sameTable(stored0, dataset))) {
    if (dataset.name == "csv")
      out(QString("task: classification (the project's %1 was for its earlier table %2; --task %1 keeps it)")
              .arg(QString::fromStdString(dataset.task), QString::fromStdString(stored0.spec())));
    dataset.task = "classification";
  }
  if (!o.task.isEmpty()) dataset.task = o.task.toStdString();  // validate() names a bad one
  dataset.skip_rows = std::max<qint64>(o.skipRows, 0);
  dataset.header = !o.noHeader;
  if (!o.tokenizer.isEmpty()) dataset.tokenizer = o.tokenizer.toStdString();
  if (o.maxLength > 0) dataset.max_length = o.maxLength;
  if (o.vocabSize > 0) dataset.vocab_size = o.vocabSize;
  if (!o.textColumn.isEmpty()) dataset.text_column = o.textColumn.toStdString();
  try {
    dataset.validate();
    KILN_CHECK(!dataset.is_fashion_mnist(), ValueError,
               "--dataset expects imagefolder:DIR, images:FILE.csv, csv:FILE or text:DIR|FILE, got '",
               spec, "'");
    out(QString("reading %1").arg(o.dataset));
    data::DatasetSource source = dataset.source(seed);
    source.index_store = std::make_shared<projects::ProjectIndexStore>(project.path());
    source.rescan = o.rescan;
    const data::OpenedDataset d = data::open_dataset(source);
    out(QString::fromStdString(d.description()));
    for (const std::string& n : d.notes) out(QString::fromStdString(n));
    for (const std::string& f : d.skipped) out(QString("skipped %1").arg(QString::fromStdString(f)));
    const auto k = d.regression ? int64_t{1} : static_cast<int64_t>(d.classes.size());
    const std::vector<std::string> changes =
        d.text ? graph::fit_graph_to_text(g, d.text->max_length, d.text->tokenizer->vocab_size(), k)
               : graph::fit_graph_to_data(g, d.sample_shape, k);
    for (const std::string& c : changes) out(QString("fitted to the dataset: %1").arg(QString::fromStdString(c)));
    // A graph that still cannot take the samples (a CNN given a table's rows) is refused
    // before the project keeps the fitted graph or the new dataset.
    const graph::Analysis fitted = graph::analyze(g);
    if (!fitted.ok()) {
      const graph::Problem& p = fitted.problems.front();
      const graph::Node* n = g.find(p.node);
      throw ValueError("the graph cannot take this dataset's samples " + shape_str(d.sample_shape) + ": " +
                       (n ? "node '" + n->name + "' (" + n->op + "): " : std::string()) + p.message +
                       "; choose a template made for this kind of data (--new FILE --template NAME)");
    }
    if (!changes.empty()) {
      const int64_t id = project.save_graph(graph::to_json(g, &project.blobs()), "fitted to " + spec);
      version = project.latest_graph();
      KILN_CHECK(version && version->id == id, IoError, project.path(), ": the fitted graph was not saved");
    }
    DatasetSettings stored = dataset;
    stored.missing = storedMissing;
    project.set_setting("dataset", stored.to_json());
  } catch (const std::exception& e) {
    err(QString("%1 on %2: %3").arg(failure, o.dataset, QString::fromStdString(plain_error(e))));
    return 1;
  }
  return 0;
}

// --new FILE --template T without --train: with --dataset SPEC, the new project's graph fitted to
// the dataset and the dataset stored, as the --train path does before it trains; --epochs, --lr,
// --batch-size, --device and --checkpoint-every stored as its training settings, which a later
// --train and the window start from; --missing as its table's missing-value policy. Nothing is trained.
int storeSettings(const HeadlessOptions& o) {
  projects::Project project = projects::Project::open(o.newFile.toStdString());
  TrainingConfig config;
  DatasetSettings dataset;
  if (auto st = project.setting("training")) config = TrainingConfig::from_json(*st);
  if (auto st = project.setting("dataset")) dataset = DatasetSettings::from_json(*st);
  if (!o.dataset.isEmpty()) {
    std::optional<projects::GraphVersion> version = project.latest_graph();  // the template's
    KILN_CHECK(version.has_value(), ValueError, o.newFile.toStdString(), ": the template stored no graph");
    graph::Graph g = graph::from_json(version->graph_json, &project.blobs());
    if (!o.missing.isEmpty()) dataset.missing = o.missing.toStdString();  // usageProblem: a table
    const std::string storedMissing = dataset.missing;
    if (const int status = useDataset(o, project, g, version, dataset, storedMissing, config.seed,
                                      "cannot fit " + o.newFile);
        status != 0)
      return status;
    out(QString("stored the dataset %1 (%2) in %3")
            .arg(QString::fromStdString(dataset.spec()), QString::fromStdString(dataset.task), o.newFile));
  }
  const bool runOptions = applyRunOptions(o, config);
  if (runOptions) {
    config.validate();
    project.set_setting("training", config.to_json());
    const QString every = config.checkpoint_steps > 0 ? QString("%1 steps").arg(config.checkpoint_steps)
                          : config.checkpoint_minutes > 0 ? QString("%1 minutes").arg(config.checkpoint_minutes)
                                                          : QString("epoch");
    out(QString("stored the training settings in %1: %2 epochs, lr %3, batch size %4, device %5, a checkpoint every %6")
            .arg(o.newFile)
            .arg(config.epochs)
            .arg(config.lr)
            .arg(config.batch_size)
            .arg(QString::fromStdString(config.device), every));
  }
  if (!o.dataset.isEmpty() || runOptions)
    out(QString("train it with kiln-studio --headless --project %1 --train").arg(o.newFile));
  return 0;
}

int train(const HeadlessOptions& o) {
  if (!writable(o.project, "train")) return 1;
  projects::Project project = projects::Project::open(o.project.toStdString());
  std::optional<projects::GraphVersion> version = project.latest_graph();
  if (!version) {
    err(QString("%1 has no saved graph to train; open it in Kiln Studio or create it with --new FILE --template NAME")
            .arg(o.project));
    return 1;
  }
  graph::Graph g = graph::from_json(version->graph_json, &project.blobs());
  TrainingConfig config;
  DatasetSettings dataset;
  try {
    if (auto s = project.setting("training")) config = TrainingConfig::from_json(*s);
    if (auto s = project.setting("dataset")) dataset = DatasetSettings::from_json(*s);
  } catch (const std::exception& e) {  // e.g. an optimizer this Kiln does not know
    err(QString("cannot train %1: its stored %2; open it in Kiln Studio and choose other settings")
            .arg(o.project, QString::fromStdString(e.what())));
    return 1;
  }
  // --missing: this run's policy; the project keeps its own (storedMissing).
  const std::string storedMissing = dataset.missing;
  if (!o.missing.isEmpty()) {
    const std::string kind = o.dataset.isEmpty() ? dataset.name : o.dataset.section(':', 0, 0).toStdString();
    if (kind != "csv") {
      err(QString("--missing applies to a CSV table (csv:FILE); the dataset of %1 is %2")
              .arg(o.project, QString::fromStdString(kind == "fashion-mnist" ? kind : kind + ":" + dataset.path)));
      return kUsageError;
    }
    dataset.missing = o.missing.toStdString();
  }
  if (const QString problem = subsetProblem(o.subset, o.dataset.isEmpty() ? dataset.name : o.dataset.section(':', 0, 0).toStdString(),
                                            o.dataset.isEmpty() ? QString::fromStdString(dataset.spec()) : o.dataset);
      !problem.isEmpty()) {
    err(problem);
    return kUsageError;
  }
  if (!o.dataset.isEmpty()) {
    if (const int status = useDataset(o, project, g, version, dataset, storedMissing, config.seed, "cannot train " + o.project);
        status != 0)
      return status;
  }
  applyRunOptions(o, config);
  const int64_t testSize = applySubsets(o.subset, o.testSubset, o.testSeed, dataset);
  const int64_t versionId = version->id;
  return runSession(o, versionId, "cannot train " + o.project, [&](TrainingSession& session, QString* error) {
    return session.start(project.path(), versionId, g, config, dataset, testSize, error);
  });
}

// --resume: the run named by --run, else the project's latest that can be continued.
int resume(const HeadlessOptions& o) {
  if (!writable(o.project, "continue a run of")) return 1;
  projects::Project project = projects::Project::open(o.project.toStdString());
  int64_t run = o.run;
  int64_t graphVersion = 0;
  const std::vector<projects::RunRecord> runs = project.runs();
  if (run == 0)
    for (auto r = runs.rbegin(); r != runs.rend() && run == 0; ++r)
      if (project.why_not_resumable(r->id).empty()) run = r->id;
  if (run == 0) {
    err(QString("%1 has no stopped, interrupted or failed run with a checkpoint to continue").arg(o.project));
    return 1;
  }
  for (const projects::RunRecord& r : runs)
    if (r.id == run) graphVersion = r.graph_version;
  return runSession(o, graphVersion, QString("cannot continue run %1 of %2").arg(run).arg(o.project),
                    [&](TrainingSession& session, QString* error) { return session.resume(project, run, error); });
}

int runSession(const HeadlessOptions& o, int64_t graphVersion, const QString& failure,
               const std::function<bool(TrainingSession&, QString*)>& start) {
  TrainingSession session;
  session.setStoreSettings(false);  // --epochs/--lr/--batch-size/--subset/--test-subset/--device/--missing: this run only
  session.setRescan(o.rescan);
  int status = 1;
  QElapsedTimer lastLine;
  lastLine.start();
  TrainingSession::Progress last;
  auto line = [&](const TrainingSession::Progress& p) {
    out(QString("%10 epoch %1/%2 step %3/%4 loss %5 lr %6 %7 samples/s ETA %8 rows committed %9")
            .arg(p.epoch)
            .arg(p.epochs)
            .arg(p.step)
            .arg(p.totalSteps)
            .arg(p.loss, 0, 'f', 4)
            .arg(p.lr, 0, 'g', 4)
            .arg(p.imagesPerSecond, 0, 'f', 0)
            .arg(formatDuration(p.etaSeconds))
            .arg(session.rowsCommitted())
            .arg(phase_name(static_cast<int>(p.phase))));
  };
  QObject::connect(&session, &TrainingSession::started, [&](qint64 run, const QString& device) {
    out(QString("run %1 of %2 (graph version %3) on %4").arg(run).arg(o.project).arg(graphVersion).arg(device));
  });
  QObject::connect(&session, &TrainingSession::progressChanged, [&](const TrainingSession::Progress& p) {
    last = p;
    if (lastLine.elapsed() >= 500) {
      line(p);
      lastLine.restart();
    }
  });
  // The evaluation by class name, and the misclassified texts with the tokens the model saw.
  QObject::connect(&session, &TrainingSession::evaluated, [&](const EvaluationResult& r) {
    const int c = static_cast<int>(r.classNames.size());
    if (c == 0 || r.confusion.size() != static_cast<size_t>(c) * static_cast<size_t>(c)) return;
    out("confusion matrix (rows: true class, columns: predicted):");
    for (int t = 0; t < c; ++t) {
      QStringList cells;
      for (int p = 0; p < c; ++p) cells << QString::number(r.confusion[static_cast<size_t>(t * c + p)]);
      out(QString("  %1: %2").arg(r.classNames[t], cells.join(' ')));
    }
    if (r.texts.isEmpty()) return;
    const int shown = std::min<int>(static_cast<int>(r.misclassified.size()), 10);
    out(QString("misclassified test texts (first %1 of %2 stored):").arg(shown).arg(r.misclassified.size()));
    for (int i = 0; i < shown; ++i) {
      const auto& s = r.misclassified[i];
      const auto at = static_cast<qsizetype>(s.index);
      out(QString("  %1: '%2' predicted '%3'\n    %4\n    tokens: %5")
              .arg(r.textOrigins.value(at), r.classNames.value(s.truth), r.classNames.value(s.predicted),
                   r.texts.value(at).left(120), r.textTokens.value(at)));
    }
  });
  QObject::connect(&session, &TrainingSession::logMessage, [&](const QString& m) { out(m); });
  QObject::connect(&session, &TrainingSession::errorMessage, [&](const QString& m) { err(m); });
  QObject::connect(&session, &TrainingSession::finished, [&](qint64 run, const QString& s, const QString&) {
    if (last.step > 0) line(last);
    if (run > 0)  // "run N <status>" came as a log line; 0: it failed before a run was recorded or reopened
      out(QString("the run (id %1) is stored in %2").arg(run).arg(o.project));
    status = s == "finished" ? 0 : s == "stopped" ? 130 : 1;
    QCoreApplication::exit(status);
  });
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
  QTimer interrupt;
  QObject::connect(&interrupt, &QTimer::timeout, [&] {
    if (g_interrupted && session.isRunning()) {
      g_interrupted = 0;
      out("interrupted: stopping after the current batch");
      session.stop();
    }
  });
  interrupt.start(100);

  QString error;
  if (!start(session, &error)) {
    err(QString("%1:\n  %2").arg(failure, error.replace("\n", "\n  ")));
    return 1;
  }
  QCoreApplication::exec();
  return status;
}

}  // namespace

QString subsetProblem(qint64 subset, const std::string& kind, const QString& dataset) {
  if (subset <= 0 || kind == "fashion-mnist") return {};
  return QString("--subset N trains on N of Fashion-MNIST's training images; the dataset %1 is trained on whole "
                 "(--test-subset N still evaluates N of its test samples; for a quick run, train on a smaller copy of it)")
      .arg(dataset);
}

int64_t applySubsets(qint64 subset, qint64 testSubset, qint64 testSeed, DatasetSettings& dataset) {
  int64_t testSize = 10000;
  // --subset shrinks the training and validation images only: a run's test accuracy is
  // comparable with the others' unless --test-subset (recorded as its "test_size") says otherwise.
  if (subset > 0 && dataset.is_fashion_mnist()) {
    int64_t images = 60000;
    try {
      images = dataset.num_classes() * DatasetSettings::kTrainPerClass;
    } catch (const std::exception&) {  // TrainingSession::start reports the setting
    }
    dataset.train_size = std::min<int64_t>(subset, images);
    dataset.validation_size = std::min<int64_t>(dataset.validation_size, std::min<int64_t>(subset / 5, images - dataset.train_size));
  }
  if (!dataset.is_fashion_mnist()) testSize = testSubset > 0 ? testSubset : std::numeric_limits<int32_t>::max();
  else if (testSubset > 0) dataset.test_size = std::min<int64_t>(testSubset, testSize);
  if (testSeed >= 0) dataset.test_seed = static_cast<uint64_t>(testSeed);
  return testSize;
}

int runHeadless(const HeadlessOptions& o) {
  if (const QString problem = usageProblem(o); !problem.isEmpty()) {
    err(problem);
    return kUsageError;
  }
  try {
    if (!o.newFile.isEmpty()) {
      // --new FILE --template T --train: make the project unless it exists, then train it.
      if (!(o.train && QFileInfo::exists(o.newFile))) {
        const int status = createProject(o);
        if (status != 0 || !o.train) return status != 0 ? status : storeSettings(o);
      }
      HeadlessOptions t = o;
      t.project = o.newFile;
      return train(t);
    }
    return o.resume ? resume(o) : train(o);
  } catch (const std::exception& e) {
    err(QString::fromStdString(plain_error(e)));
    return 1;
  }
}

}  // namespace kiln::studio
