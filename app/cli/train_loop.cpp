#include "app/cli/train_loop.h"

#include <omp.h>

#include <atomic>
#include <optional>
#include <chrono>
#include <exception>
#include <thread>
#include <variant>

#include "app/cli/interrupt.h"

namespace kiln::cli {

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

void set_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

FitResult run_fit(train::Trainer& trainer, data::DataLoader& train, data::DataLoader* validation, int threads,
                  ProgressBar& progress, MetricsCsv& metrics) {
  return run_fit(trainer, train, validation, threads, &progress, &metrics);
}

FitResult run_fit(train::Trainer& trainer, data::DataLoader& train, data::DataLoader* validation, int threads,
                  ProgressBar* progress, MetricsCsv* metrics) {
  InterruptGuard interrupt;
  std::exception_ptr error;
  std::atomic<bool> done{false};
  std::thread worker([&] {
    try {
      set_threads(threads);
      trainer.fit(train, validation);
    } catch (...) {
      error = std::current_exception();
    }
    done = true;
  });

  FitResult result;
  auto handle = Overloaded{
      [&](const train::BatchEnd& e) {
        if (metrics) metrics->batch(e);
        if (progress) progress->on_batch(e);
      },
      [&](const train::EpochEnd& e) {
        if (metrics) metrics->epoch(e);
        if (progress) progress->on_epoch(e);
      },
      [&](const train::CheckpointSaved& e) {
        if (metrics) metrics->flush();
        result.checkpoint_step = e.step;
        result.checkpoint_epoch = e.epoch;
      },
      [&](const train::Finished& e) { result.cancelled = e.cancelled; },
  };
  try {
    bool cancel_sent = false;
    for (;;) {
      if (InterruptGuard::interrupted() && !cancel_sent) {
        trainer.cancel();
        cancel_sent = true;
        if (progress) progress->message("interrupted: stopping after the current batch (Ctrl-C again to kill)");
      }
      bool finished = done;  // read before popping, so no event pushed before the end is missed
      std::optional<train::Event> event = trainer.events().pop(std::chrono::milliseconds(100));
      if (event) std::visit(handle, *event);
      else if (finished) break;
    }
  } catch (...) {  // metrics.csv could not be written: stop training before leaving
    trainer.cancel();
    worker.join();
    if (progress) progress->finish();
    throw;
  }
  worker.join();
  if (progress) progress->finish();
  if (error) std::rethrow_exception(error);
  result.cancelled = result.cancelled || trainer.cancelled();
  result.epochs_done = trainer.epoch();
  return result;
}

}  // namespace kiln::cli

