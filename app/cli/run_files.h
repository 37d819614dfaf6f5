// The files a training run writes into its directory (`kiln train --out DIR`):
//   metrics.csv        one row per batch and per epoch, written as training goes
//   summary.json       the run's settings and results (written by train.cpp)
//   model.safetensors  the trained state_dict
//   checkpoint/        the Trainer's last checkpoint: of the last finished epoch, or one taken
//                      in the middle of an epoch (--checkpoint-every)
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/train/events.h"

namespace kiln::cli {

// "runs/<model>-YYYYmmdd-HHMMSS" (local time).
std::string default_run_dir(const std::string& model);

// Writes `text` to path atomically (engine/io/atomic_file.h); IoError naming path.
void write_file_atomically(const std::string& path, const std::string& text);

// metrics.csv: header `epoch,step,kind,loss,accuracy,lr,samples_per_second`, then a
// kind=batch row per batch and kind=train (and kind=val with validation) rows per
// epoch. Epochs are numbered from 1; accuracy is a fraction; val rows leave
// samples_per_second empty. Rows reach the disk at every epoch's end and at flush().
class MetricsCsv {
 public:
  // Starts a new file, or, when keep_steps > 0 (a resumed run), keeps an existing file's
  // batch rows of steps <= keep_steps and epoch rows of its first keep_epochs epochs, and
  // drops the rest (rows after the checkpoint resumed from). IoError naming path when it
  // cannot be written.
  MetricsCsv(const std::string& path, int keep_epochs = 0, int64_t keep_steps = 0);
  ~MetricsCsv();
  MetricsCsv(const MetricsCsv&) = delete;
  MetricsCsv& operator=(const MetricsCsv&) = delete;

  void batch(const train::BatchEnd& e);
  void epoch(const train::EpochEnd& e);  // step: that of the epoch's last batch
  void flush();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  int64_t last_step_ = 0;
};

}  // namespace kiln::cli
