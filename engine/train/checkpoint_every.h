// `--checkpoint-every N|Nm`, how often a run checkpoints in the middle of an epoch, read the
// same way by `kiln train` (app/cli/train_config.cpp) and `kiln-studio --headless`
// (app/studio/headless.cpp); the result maps onto TrainerOptions::checkpoint_every_steps / _seconds.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace kiln::train {

struct CheckpointEvery {
  int64_t steps = 0;   // every N optimizer steps (0: not by steps)
  double minutes = 0;  // else every N minutes of training (0 with steps 0: at epoch ends only)
};

// "N": every N optimizer steps (a whole number in [0, 1e12]); "Nm": every N minutes (a number in
// [0, 1e6], fractions allowed: "0.5m"); "0" or "0m": at epoch ends only. Only digits, '.', an
// exponent and a sign are read: nullopt for "", "-1", "5x", "1.5" (steps are whole), " 5", "0x10",
// "inf" and anything out of range.
std::optional<CheckpointEvery> parse_checkpoint_every(const std::string& text);

// The usage message for a `text` parse_checkpoint_every refuses, naming the flag:
// "--checkpoint-every expects N (optimizer steps, a whole number) or Nm (minutes), ...; got '5x'".
std::string checkpoint_every_problem(const std::string& text);

}  // namespace kiln::train
