// Training checkpoints: a directory holding
//   model.safetensors      the model's state_dict
//   optimizer.safetensors  optimizer state tensors (moments ...); its scalars
//                          (step, lr ...) in the safetensors metadata as text
//   trainer.json           trainer state: strings and numbers (epoch, best loss ...)
// Each file is replaced atomically; trainer.json is written last, so a directory
// with a trainer.json from this save has the matching model and optimizer files.
#pragma once
#include <map>
#include <string>

#include "engine/io/safetensors.h"

namespace kiln::io {

struct Checkpoint {
  NamedTensors model;                                // state_dict, in order
  NamedTensors optimizer;                            // optimizer state tensors
  std::map<std::string, double> optimizer_scalars;   // exact round trip (17 digits; inf and nan kept)
  std::map<std::string, std::string> trainer;        // e.g. {"run_name": "..."}
  std::map<std::string, double> trainer_scalars;     // e.g. {"epoch": 3, "best_val_loss": 0.31}
};

// Writes the three files into dir (created with its parents when missing).
// IoError naming the file that cannot be written; ValueError as save_safetensors.
void save_checkpoint(const std::string& dir, const Checkpoint& checkpoint);

// Reads a checkpoint written by save_checkpoint. Tensors come back on the CPU.
// IoError naming the file when one is missing or malformed.
Checkpoint load_checkpoint(const std::string& dir);

}  // namespace kiln::io
