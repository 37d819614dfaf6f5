#include "app/studio/headless_sweep.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QTimer>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/studio/headless.h"
#include "app/studio/sweep_plan.h"
#include "app/studio/sweep_report.h"
#include "app/studio/sweep_runner.h"
#include "app/studio/sweep_space.h"
#include "engine/core/registry.h"
#include "engine/graph/json.h"

namespace kiln::studio {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void onSweepInterrupt(int) { g_interrupted = 1; }

constexpr int kExitUsage = 2;

struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<std::string> splitDevices(const QString& s) {
  std::vector<std::string> out;
  for (const QString& d : s.split(',')) {
    const QString t = d.trimmed();
    if (t.isEmpty()) throw Usage("--devices " + s.toStdString() + ": an empty device name in the list");
    try {
      resolve_device(t.toStdString());
    } catch (const std::exception& e) {
      throw Usage("--devices " + s.toStdString() + ": " + e.what());
    }
    out.push_back(t.toStdString());
  }
  return out;
}

// A new sweep: the flags turned into a request and the project's graph and settings into its
// starting point; plan_sweep checks, plans and stores it (nothing is stored when a flag is wrong).
SweepSettings planNewSweep(const SweepOptions& o, projects::Project& project, nlohmann::json& space) {
  SweepRequest r;
  for (const QString& p : o.params) r.params.push_back(p.toStdString());
  r.search = o.search.toStdString();
  r.trials = o.trials;
  r.seed = static_cast<uint64_t>(o.seed);
  r.objective = o.objective.toStdString();
  r.pruneStartup = static_cast<int>(o.pruneStartup);
  if (r.params.empty()) throw Usage("a sweep needs at least one --param NAME=VALUES (lr=1e-4:1e-2:log, batch-size=64,128)");
  std::optional<projects::GraphVersion> version = project.latest_graph();
  if (!version) throw std::runtime_error(project.path() + " has no saved graph to train");
  SweepSettings s;
  s.graph = graph::from_json(version->graph_json, &project.blobs());
  s.graphVersion = version->id;
  if (auto j = project.setting("training")) s.base = TrainingConfig::from_json(*j);
  if (auto j = project.setting("dataset")) s.dataset = DatasetSettings::from_json(*j);
  if (o.epochs > 0) s.base.epochs = o.epochs;
  if (const QString p = subsetProblem(o.subset, s.dataset.name, QString::fromStdString(s.dataset.spec())); !p.isEmpty())
    throw Usage(p.toStdString());
  s.testSize = applySubsets(o.subset, o.testSubset, o.testSeed, s.dataset);
  s.devices = splitDevices(o.devices.isEmpty() ? QString::fromStdString(s.base.device) : o.devices);
  return plan_sweep(r, project, std::move(s), &space);
}

// --resume: the latest sweep that did not finish, with its stored settings.
SweepSettings resumeSweep(const SweepOptions& o, projects::Project& project, int& requeued) {
  if (!o.params.isEmpty() || o.trials > 0 || o.epochs > 0 || o.subset > 0 || o.testSubset > 0)
    throw Usage("--resume continues the stored sweep with its own settings; give no --param, --trials, --epochs or subsets");
  std::optional<projects::SweepRecord> last;
  for (const projects::SweepRecord& r : project.sweeps())
    if (r.status != "finished") last = r;
  if (!last) throw Usage("--resume: " + project.path() + " has no unfinished sweep");
  const std::vector<std::string> devices = o.devices.isEmpty() ? std::vector<std::string>{} : splitDevices(o.devices);
  SweepSettings s = resume_sweep(project, last->id, &requeued);
  if (!devices.empty()) s.devices = devices;
  return s;
}

}  // namespace

int runHeadlessSweep(const SweepOptions& o) {
  auto err = [](const std::string& m) {
    std::fprintf(stderr, "kiln sweep: %s\n", m.c_str());
    std::fflush(stderr);
  };
  // With --json stdout carries the one JSON object: the progress lines go to stderr.
  std::FILE* lines = o.json ? stderr : stdout;
  auto out = [lines](const QString& m) {
    std::fprintf(lines, "%s\n", m.toUtf8().constData());
    std::fflush(lines);
  };
  if (o.project.isEmpty()) {
    err("--project FILE is required");
    return kExitUsage;
  }
  const QFileInfo file(o.project);
  if (file.exists() && !file.isWritable()) {
    err("cannot run a sweep in " + o.project.toStdString() + ": the project is read-only");
    return 1;
  }
  std::optional<projects::Project> project;
  SweepSettings settings;
  try {
    project.emplace(projects::Project::open(o.project.toStdString()));
    int requeued = 0;
    nlohmann::json space;
    settings = o.resume ? resumeSweep(o, *project, requeued) : planNewSweep(o, *project, space);
    if (o.resume)
      out(QString("resuming sweep %1 of %2 (%3 interrupted trial(s) queued again)").arg(settings.sweep).arg(o.project).arg(requeued));
    else
      out(QString("sweep %1 of %2: %3 trials on %4").arg(settings.sweep).arg(o.project).arg(space["trials"].get<int64_t>())
              .arg(QString::fromStdString(space["devices"].dump())));
  } catch (const sweep::SweepUsageError& e) {
    err(e.what());
    return kExitUsage;
  } catch (const Usage& e) {
    err(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    err(plain_error(e));
    return 1;
  }

  SweepRunner runner(*project, settings);
  QObject::connect(&runner, &SweepRunner::logMessage, [&](const QString& m) { out(m); });
  QObject::connect(&runner, &SweepRunner::trialStarted, [&](int trial, qint64 run, const QString& device, const QString& label) {
    out(QString("trial %1 started: run %2 on %3 (%4)").arg(trial).arg(run).arg(device, label));
  });
  QObject::connect(&runner, &SweepRunner::trialEnded, [&](int trial, const QString& status, double objective, const QString& m) {
    out(QString("trial %1 %2: objective %3%4").arg(trial).arg(status).arg(objective, 0, 'g', 4).arg(m.isEmpty() ? "" : " (" + m + ")"));
  });
  int status = 1;
  QObject::connect(&runner, &SweepRunner::finished, [&](const QString& s) {
    status = s == "finished" ? 0 : 130;
    QCoreApplication::exit(status);
  });
  std::signal(SIGINT, onSweepInterrupt);
  std::signal(SIGTERM, onSweepInterrupt);
  QTimer interrupt;
  QObject::connect(&interrupt, &QTimer::timeout, [&] {
    if (!g_interrupted) return;
    g_interrupted = 0;
    out("interrupted: stopping the running trials after their current batch; --resume continues the sweep");
    runner.stop();
  });
  interrupt.start(100);
  runner.start();
  QCoreApplication::exec();
  try {
    const SweepReport report = sweep_report(*project, settings.sweep);
    if (o.json) {
      std::printf("%s\n", sweep_report_json(report).dump(2).c_str());
    } else {
      std::printf("%s", sweep_report_table(report).c_str());
    }
    std::fflush(stdout);
  } catch (const std::exception& e) {
    err(plain_error(e));
    return 1;
  }
  return status;
}

}  // namespace kiln::studio
