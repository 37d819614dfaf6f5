// Training checkpoints: a directory holding
//   model.safetensors      the model's state_dict
//   optimizer.safetensors  optimizer state tensors (moments ...); its scalars
//                          (step, lr ...) in the safetensors metadata as text
//   trainer.json           trainer state: strings and numbers (epoch, best loss ...)
// A save replaces the directory as a whole: the files are written into DIR.new, then
// DIR is renamed to DIR.old, DIR.new to DIR, and DIR.old removed. A kill at any moment
// leaves DIR or (between the two renames) DIR.old complete; a DIR.new that a kill left
// half-written is removed by the next save and never read.
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
  std::string note;  // set by load_checkpoint when it read DIR.old instead of DIR, saying so
};

// Writes the three files into dir (created with its parents when missing).
// IoError naming the file that cannot be written; ValueError as save_safetensors.
void save_checkpoint(const std::string& dir, const Checkpoint& checkpoint);

// Reads a checkpoint written by save_checkpoint. Tensors come back on the CPU. When DIR
// is missing but DIR.old (a save killed between its renames) exists, reads that and sets
// Checkpoint::note. IoError naming the file when one is missing or malformed.
Checkpoint load_checkpoint(const std::string& dir);

}  // namespace kiln::io
