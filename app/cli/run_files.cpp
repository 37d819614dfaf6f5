#include "app/cli/run_files.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <vector>

#include "engine/core/error.h"
#include "engine/io/atomic_file.h"

namespace kiln::cli {

namespace {

constexpr const char* kHeader = "epoch,step,kind,loss,accuracy,lr,samples_per_second";

// "%.9g", or an empty field for NaN (no value, e.g. no validation).
std::string field(double v) {
  if (std::isnan(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string default_run_dir(const std::string& model) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return "runs/" + model + "-" + stamp;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  io::AtomicFile file(path);
  file.write(text.data(), text.size());
  file.commit();
}

MetricsCsv::MetricsCsv(const std::string& path, int keep_epochs, int64_t keep_steps) : path_(path) {
  std::vector<std::string> kept;
  if (keep_steps > 0) {
    std::ifstream in(path);
    std::string line;
    bool header = true;
    while (std::getline(in, line)) {
      if (header) {
        header = false;
        continue;
      }
      // epoch,step,kind,...
      const size_t c1 = line.find(','), c2 = c1 == std::string::npos ? c1 : line.find(',', c1 + 1);
      if (c2 == std::string::npos) continue;
      const bool batch = line.compare(c2 + 1, 6, "batch,") == 0;
      if (batch ? std::atoll(line.c_str() + c1 + 1) <= keep_steps : std::atoi(line.c_str()) <= keep_epochs) {
        kept.push_back(line);
        if (batch) last_step_ = std::atoll(line.c_str() + c1 + 1);
      }
    }
  }
  file_ = std::fopen(path.c_str(), "w");
  KILN_CHECK(file_, IoError, "cannot write ", path, ": ", std::strerror(errno));
  std::fprintf(file_, "%s\n", kHeader);
  for (const std::string& line : kept) std::fprintf(file_, "%s\n", line.c_str());
  flush();
}

MetricsCsv::~MetricsCsv() {
  if (file_) std::fclose(file_);
}

void MetricsCsv::batch(const train::BatchEnd& e) {
  last_step_ = e.step;
  std::fprintf(file_, "%d,%lld,batch,%s,%s,%s,%s\n", e.epoch + 1, static_cast<long long>(e.step),
               field(e.loss).c_str(), field(e.accuracy).c_str(), field(e.lr).c_str(),
               field(e.samples_per_second).c_str());
}

void MetricsCsv::epoch(const train::EpochEnd& e) {
  std::fprintf(file_, "%d,%lld,train,%s,%s,%s,%s\n", e.epoch + 1, static_cast<long long>(last_step_),
               field(e.train_loss).c_str(), field(e.train_accuracy).c_str(), field(e.lr).c_str(),
               field(e.samples_per_second).c_str());
  if (!std::isnan(e.val_loss))
    std::fprintf(file_, "%d,%lld,val,%s,%s,%s,\n", e.epoch + 1, static_cast<long long>(last_step_),
                 field(e.val_loss).c_str(), field(e.val_accuracy).c_str(), field(e.lr).c_str());
  flush();
}

void MetricsCsv::flush() {
  KILN_CHECK(std::fflush(file_) == 0 && !std::ferror(file_), IoError, "cannot write ", path_, ": ",
             std::strerror(errno));
}

}  // namespace kiln::cli
