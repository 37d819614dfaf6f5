#include "app/cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace kiln::cli {

namespace {

constexpr double kSmoothing = 0.9;  // EMA factor of the displayed loss and accuracy
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
constexpr auto kPlainInterval = std::chrono::seconds(30);  // not a terminal: the longest silence

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string general(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

ProgressBar::ProgressBar(int epochs, std::FILE* out) : ProgressBar(epochs, out, isatty(fileno(out)) != 0) {}

ProgressBar::ProgressBar(int epochs, std::FILE* out, bool interactive)
    : epochs_(epochs), out_(out), interactive_(interactive) {}

int ProgressBar::columns() const {
  winsize ws{};
  if (ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    int n = std::atoi(c);
    if (n > 0) return n;
  }
  return 100;
}

void ProgressBar::on_batch(const train::BatchEnd& e) {
  if (e.epoch != epoch_) {
    epoch_ = e.epoch;
    loss_avg_ = acc_avg_ = weight_ = 0;
    next_tenth_ = 1;
    last_draw_ = std::chrono::steady_clock::now();
  }
  if (std::isfinite(e.loss)) {
    loss_avg_ = kSmoothing * loss_avg_ + (1 - kSmoothing) * e.loss;
    acc_avg_ = kSmoothing * acc_avg_ + (1 - kSmoothing) * e.accuracy;
    weight_ = kSmoothing * weight_ + (1 - kSmoothing);
  }
  auto now = std::chrono::steady_clock::now();
  if (!interactive_) {
    plain_line(e, now);
    return;
  }
  if (e.batch != e.batches_per_epoch && e.batch != 1 && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  draw(e);
}

void ProgressBar::plain_line(const train::BatchEnd& e, std::chrono::steady_clock::time_point now) {
  if (e.batches_per_epoch <= 0 || e.batch >= e.batches_per_epoch) return;  // the epoch's summary line follows
  bool tenth = e.batch * 10 >= next_tenth_ * e.batches_per_epoch;
  if (!tenth && now - last_draw_ < kPlainInterval) return;
  next_tenth_ = e.batch * 10 / e.batches_per_epoch + 1;
  last_draw_ = now;
  double loss = weight_ > 0 ? loss_avg_ / weight_ : e.loss;
  double acc = weight_ > 0 ? acc_avg_ / weight_ : e.accuracy;
  std::fprintf(out_, "epoch %d/%d  %lld/%lld (%d%%)  loss %s  acc %s%%  %s samples/s  ETA %s\n", e.epoch + 1, epochs_,
               static_cast<long long>(e.batch), static_cast<long long>(e.batches_per_epoch),
               static_cast<int>(100 * e.batch / e.batches_per_epoch), fixed(loss, 4).c_str(), fixed(100 * acc, 1).c_str(),
               fixed(e.samples_per_second, 0).c_str(), format_duration(e.eta_seconds).c_str());
  std::fflush(out_);
}

void ProgressBar::draw(const train::BatchEnd& e) {
  double loss = weight_ > 0 ? loss_avg_ / weight_ : e.loss;
  double acc = weight_ > 0 ? acc_avg_ / weight_ : e.accuracy;
  char buf[96];
  std::snprintf(buf, sizeof buf, "epoch %d/%d ", e.epoch + 1, epochs_);
  const std::string head = buf;
  std::snprintf(buf, sizeof buf, " %lld/%lld", static_cast<long long>(e.batch),
                static_cast<long long>(e.batches_per_epoch));
  const std::string count = buf;
  std::string tail = "  loss " + fixed(loss, 4) + "  acc " + fixed(100 * acc, 1) + "%  " +
                     fixed(e.samples_per_second, 0) + " samples/s  ETA " + format_duration(e.eta_seconds);
  int cols = columns() - 1;  // the last column would wrap on some terminals
  int bar = std::clamp(cols - static_cast<int>(head.size() + count.size() + tail.size()) - 2, 0, 40);
  std::string line = head;
  if (bar >= 5) {
    double frac = e.batches_per_epoch > 0 ? static_cast<double>(e.batch) / static_cast<double>(e.batches_per_epoch) : 0;
    int done = std::clamp(static_cast<int>(frac * bar), 0, bar);
    std::string cells(static_cast<size_t>(done), '=');
    if (done < bar) cells += '>';
    cells.resize(static_cast<size_t>(bar), ' ');
    line += '[';
    line += cells;
    line += ']';
  }
  line += count + tail;
  if (static_cast<int>(line.size()) > cols && cols > 0) line.resize(static_cast<size_t>(cols));
  std::fprintf(out_, "\r%s\x1b[K", line.c_str());
  std::fflush(out_);
  line_open_ = true;
}

void ProgressBar::on_epoch(const train::EpochEnd& e) {
  std::string line = "epoch " + std::to_string(e.epoch + 1) + "/" + std::to_string(epochs_) + "  loss " +
                     fixed(e.train_loss, 4) + "  acc " + fixed(100 * e.train_accuracy, 2) + "%";
  if (std::isfinite(e.val_loss))
    line += "  val loss " + fixed(e.val_loss, 4) + "  val acc " + fixed(100 * e.val_accuracy, 2) + "%";
  line += "  " + fixed(e.samples_per_second, 0) + " samples/s  " + fixed(e.seconds, 1) + " s  lr " + general(e.lr);
  message(line);
}

void ProgressBar::message(const std::string& line) {
  if (line_open_) std::fputs("\r\x1b[K", out_);
  line_open_ = false;
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (line_open_) std::fputs("\n", out_);
  line_open_ = false;
  std::fflush(out_);
}

}  // namespace kiln::cli
