// Data-parallel `kiln train` (issue 21), the side of one process: --distributed makes this process
// one rank of a job that a launcher started (`kiln train --gpus N`, app/cli/train_launch.h, or
// torchrun-style launchers on several machines), as PyTorch's DistributedDataParallel does it:
//   - rank, world size and rank 0's address from MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
//     LOCAL_RANK (engine/distributed/environment.h); the device is cuda:LOCAL_RANK;
//   - a process group over NCCL (engine/distributed/process_group.h), waiting --timeout seconds;
//   - the model's parameters and buffers broadcast from rank 0, and every backward pass through a
//     Reducer (engine/distributed/reducer.h), which averages the gradients over the ranks;
//   - the training loader sharded by rank (DataLoader::Options::rank/world_size, Note
//     [Distributed sampling]); --batch-size is per GPU, the global batch is world_size times it.
// Note [Rank 0 speaks]: only rank 0 prints progress, writes checkpoints, metrics.csv, the model and
// summary.json, and evaluates the test set after the last epoch; every rank evaluates the whole
// validation set at each epoch's end (identical weights give identical figures, and the ranks stay
// in step without reducing metrics). Other ranks print only errors, prefixed "rank R: ".
#pragma once
#include <memory>
#include <string>

#include "app/cli/args.h"
#include "engine/core/device.h"
#include "engine/distributed/environment.h"

namespace kiln::distributed {
class ProcessGroup;
class Reducer;
}  // namespace kiln::distributed
namespace kiln::nn {
class Module;
}  // namespace kiln::nn
namespace kiln::train {
struct TrainerOptions;
}  // namespace kiln::train

namespace kiln::cli {

// The flags of data-parallel training, as TrainConfig holds them.
struct ParallelConfig {
  int gpus = 0;              // --gpus N: launch N ranks on this machine (0: not a launcher)
  bool distributed = false;  // --distributed: this process is one rank
  double timeout_s = 600;    // --timeout: waits for the other ranks (torch.distributed's default)
};

// --gpus, --distributed, --timeout.
void add_parallel_flags(ArgParser& parser);
// UsageError for --gpus < 1, --gpus with --distributed, --device with --gpus (each rank uses
// cuda:LOCAL_RANK), --timeout without either, or a --timeout that is not a positive number.
ParallelConfig parallel_config(const Args& args);

// This process's part in a data-parallel job.
class DataParallel {
 public:
  // Checks the device (cuda:LOCAL_RANK, which must exist; a --device naming another is a
  // UsageError "kiln train: rank R: --device ...") and joins the process group. DeviceError (the
  // registry's reason when the device is not there) and the process group's errors (a port in use,
  // a rank missing at the timeout, ...); messages name the rank.
  DataParallel(const distributed::DistributedEnvironment& env, const Args& args, double timeout_s);
  ~DataParallel();

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  bool speaks() const { return env_.rank == 0; }  // Note [Rank 0 speaks]
  const Device& device() const { return device_; }
  const std::string& library() const;  // "NCCL 2.27.7"

  // Broadcasts the model's state from rank 0 and makes options.backward the Reducer's backward
  // over model's parameters (those that require grad), which averages the gradients over the
  // ranks. The model must be on device() and outlive the trainer; call once.
  void wrap(const nn::Module& model, train::TrainerOptions& options);
  // A host-side barrier of every rank, named in its errors: a rank that died before it is named
  // within the timeout rather than leaving the others waiting on the device.
  void barrier(const std::string& what);
  // Ends the communicator without waiting for the other ranks (after an error or a Ctrl-C, when
  // the ranks may have stopped at different steps and a clean finalize would wait for the
  // timeout). Later collectives throw.
  void abort();

 private:
  distributed::DistributedEnvironment env_;
  Device device_;
  std::unique_ptr<distributed::ProcessGroup> group_;
  std::unique_ptr<distributed::Reducer> reducer_;
};

// "rank R: " + message, unless the message already starts with "rank R:" or "rank R of ".
std::string rank_message(int rank, const std::string& message);

}  // namespace kiln::cli
