// Ctrl-C while training: the first SIGINT only raises a flag that the training
// loop polls (it then cancels the Trainer, which stops after the current batch
// and keeps the last epoch's checkpoint); a second SIGINT ends the process at once.
#pragma once

namespace kiln::cli {

// Installs the SIGINT handler; the destructor restores the previous one.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  // Whether SIGINT arrived since the guard was installed.
  static bool interrupted();
};

}  // namespace kiln::cli
