// Runs Trainer::fit on a worker thread while the calling thread draws the
// progress bar, appends metrics.csv rows (flushed at every checkpoint, so that a run
// killed after one has the rows up to it) and turns Ctrl-C into Trainer::cancel().
#pragma once
#include <string>

#include "app/cli/progress.h"
#include "app/cli/run_files.h"
#include "engine/data/dataloader.h"
#include "engine/train/trainer.h"

namespace kiln::cli {

struct FitResult {
  bool cancelled = false;
  int epochs_done = 0;  // trainer.epoch() afterwards
  int64_t checkpoint_step = 0;  // the optimizer step of the last checkpoint this fit saved (0: none)
  int checkpoint_epoch = 0;     // the 0-based epoch it ended or was taken in
};

// threads > 0: the OpenMP thread count of the worker (OpenMP's setting is per thread).
// Rethrows on this thread whatever fit() threw, after the worker has ended.
FitResult run_fit(train::Trainer& trainer, data::DataLoader& train, data::DataLoader* validation, int threads,
                  ProgressBar& progress, MetricsCsv& metrics);
// The same with either of progress and metrics null: not drawn, not written (the ranks > 0 of a
// data-parallel run, Note [Rank 0 speaks] in train_distributed.h).
FitResult run_fit(train::Trainer& trainer, data::DataLoader& train, data::DataLoader* validation, int threads,
                  ProgressBar* progress, MetricsCsv* metrics);

// omp_set_num_threads(n) for the calling thread when n > 0.
void set_threads(int n);

}  // namespace kiln::cli
