// kiln-studio's terminal sweep (what `kiln sweep` runs):
//   kiln-studio --headless --sweep --project FILE --param NAME=SPEC [--param ...] [--trials N]
//     [--search grid|random] [--seed S] [--devices cpu,cuda:0] [--objective val_accuracy|val_loss]
//     [--prune-startup N] [--epochs N] [--subset N] [--test-subset N [--test-seed S]] [--json]
//   kiln-studio --headless --sweep --project FILE --resume [--devices ...] [--json]
// plans the trials (sweep_space.h), stores the sweep in the project (nothing is stored when
// a flag is wrong), runs them with a SweepRunner, prints a line per trial, then a table
// (trial, run, status, objective, parameters) and the best trial's settings (--json: one
// JSON object on stdout instead, the lines on stderr). --resume continues the project's
// latest unfinished sweep: its interrupted (or Ctrl-C-stopped) trial is queued again, its
// finished ones kept.
// Exit status 0 finished, 1 an error (unreadable project ...), 2 a wrong flag (named),
// 130 stopped by Ctrl-C (the queued trials stay for --resume).
#pragma once
#include <QStringList>

namespace kiln::studio {

struct SweepOptions {
  QString project;
  QStringList params;        // --param NAME=SPEC, in order
  qint64 trials = 0;         // --trials N (random: required; grid: at most N, 0 = all)
  QString search = "grid";   // --search
  qint64 seed = 0;           // --seed (random search)
  QString devices;           // --devices a,b ("" = the project's device setting, one lane)
  QString objective = "val_accuracy";
  qint64 pruneStartup = 2;   // --prune-startup N (0: no pruning)
  bool resume = false;
  bool json = false;
  int epochs = 0;            // the base settings' overrides, as --headless --train
  qint64 subset = 0, testSubset = 0, testSeed = -1;
};

// Inside an existing QCoreApplication; returns the exit status.
int runHeadlessSweep(const SweepOptions& options);

}  // namespace kiln::studio
