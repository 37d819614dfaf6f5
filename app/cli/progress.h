// The live progress display of `kiln train` on stderr.
//
// On a terminal one line is rewritten in place ('\r') as batches finish:
//   epoch 2/5 [=========>          ] 234/469  loss 0.4123  acc 85.2%  41230 samples/s  ETA 0:12
// and is replaced by a summary line when the epoch ends. When stderr is not a
// terminal (a log file, CI) a plain line is printed at every tenth of the epoch, or after
// 30 s without one, whichever comes first (not at the epoch's last batch: its summary follows):
//   epoch 2/5  234/469 (50%)  loss 0.4123  acc 85.2%  41230 samples/s  ETA 0:12
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/train/events.h"

namespace kiln::cli {

// "0:07", "12:34", "1:02:03" (h:mm:ss when an hour or more); "?" for NaN/negative.
std::string format_duration(double seconds);

class ProgressBar {
 public:
  // epochs: the run's last epoch (for "epoch e/N"). interactive: rewrite one line
  // (defaults to whether `out` is a terminal).
  ProgressBar(int epochs, std::FILE* out = stderr);
  ProgressBar(int epochs, std::FILE* out, bool interactive);

  void on_batch(const train::BatchEnd& e);
  void on_epoch(const train::EpochEnd& e);
  // Prints a line of its own (a warning, "checkpoint saved") without mangling the bar.
  void message(const std::string& line);
  // Ends the bar's line, if one is being drawn (before the program prints more).
  void finish();
  bool interactive() const { return interactive_; }

 private:
  void draw(const train::BatchEnd& e);
  void plain_line(const train::BatchEnd& e, std::chrono::steady_clock::time_point now);
  int columns() const;

  int epochs_;
  std::FILE* out_;
  bool interactive_;
  bool line_open_ = false;
  int epoch_ = -1;
  // bias-corrected exponential moving averages of loss and accuracy over the epoch
  double loss_avg_ = 0, acc_avg_ = 0, weight_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
  int64_t next_tenth_ = 1;  // not a terminal: the next tenth of the epoch that prints a line

};

}  // namespace kiln::cli
