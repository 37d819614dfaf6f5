#include "engine/train/checkpoint_every.h"

#include <cmath>
#include <cstdlib>

namespace kiln::train {

std::optional<CheckpointEvery> parse_checkpoint_every(const std::string& text) {
  const bool minutes = !text.empty() && text.back() == 'm';
  const std::string number = minutes ? text.substr(0, text.size() - 1) : text;
  // strtod alone would take leading blanks, hexadecimal and "inf".
  if (number.empty() || number.find_first_not_of("0123456789.eE+-") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double n = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !(n >= 0)) return std::nullopt;
  if (minutes) {
    if (n > 1e6) return std::nullopt;  // TrainingConfig::checkpoint_minutes' range
    return CheckpointEvery{0, n};
  }
  if (n > 1e12 || n != std::floor(n)) return std::nullopt;
  return CheckpointEvery{static_cast<int64_t>(n), 0};
}

std::string checkpoint_every_problem(const std::string& text) {
  return "--checkpoint-every expects N (optimizer steps, a whole number) or Nm (minutes), e.g. 500 or 10m; "
         "0: at epoch ends only; got '" + text + "'";
}

}  // namespace kiln::train
