#include "app/cli/train_distributed.h"

#include <algorithm>
#include <cstdlib>

#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/distributed/process_group.h"
#include "engine/distributed/reducer.h"
#include "engine/nn/module.h"
#include "engine/train/trainer.h"

namespace kiln::cli {

void add_parallel_flags(ArgParser& p) {
  p.flag("gpus", "N", "",
         "data-parallel training on N GPUs of this machine (cuda:0 .. cuda:N-1): one process per GPU,\n"
         "gradients averaged through NCCL as PyTorch's DistributedDataParallel does; --batch-size is\n"
         "per GPU (the global batch is N times it); one progress bar; rank 0 writes the run")
      .toggle("distributed",
              "this process is one rank of a data-parallel job a launcher started (torchrun-style:\n"
              "MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK); it trains on cuda:LOCAL_RANK")
      .flag("timeout", "SECONDS", "600",
            "with --gpus or --distributed: how long a rank waits for the others to join (and\n"
            "NCCL for a collective to start) before it stops with an error naming the ranks");
}

ParallelConfig parallel_config(const Args& args) {
  ParallelConfig c;
  c.distributed = args.given("distributed");
  if (args.given("gpus")) {
    c.gpus = static_cast<int>(std::min<int64_t>(args.integer("gpus", 1), 1 << 16));
    if (c.distributed)
      args.fail("--gpus and --distributed are exclusive: --gpus N starts N processes with --distributed itself; "
                "an external launcher (torchrun-style) starts each with --distributed");
    if (args.given("device"))
      args.fail("--gpus N trains on cuda:0 .. cuda:N-1 (one process each); leave --device out "
                "(CUDA_VISIBLE_DEVICES picks which GPUs those are)");
  }
  if (args.given("timeout") && c.gpus == 0 && !c.distributed)
    args.fail("--timeout applies to --gpus and --distributed only");
  c.timeout_s = args.positive("timeout", 7 * 24 * 3600.0);
  static_assert(ParallelConfig{}.timeout_s == distributed::kDefaultTimeoutSeconds);
  return c;
}

std::string rank_message(int rank, const std::string& message) {
  const std::string r = "rank " + std::to_string(rank);
  if (message.rfind(r + ":", 0) == 0 || message.rfind(r + " of ", 0) == 0) return message;  // NCCL's "rank 1 of 2 (cuda:1)"
  return r + ": " + message;
}

DataParallel::DataParallel(const distributed::DistributedEnvironment& env, const Args& args, double timeout_s)
    : env_(env), device_(DeviceType::cuda, env.local_rank) {
  const std::string rank = "rank " + std::to_string(env_.rank) + ": ";
  if (args.given("device")) {
    bool same = false;
    try {
      same = Device::parse(args.str("device")) == device_;
    } catch (const Error&) {  // malformed: not cuda:LOCAL_RANK either
    }
    if (!same)
      args.fail(rank + "--device " + args.str("device") + ": with --distributed each process trains on " +
                "cuda:LOCAL_RANK (here LOCAL_RANK=" + std::to_string(env_.local_rank) + ", " + device_.str() +
                "); leave --device out");
  }
  try {
    resolve_device(device_.str());  // DeviceError: not there, with the registry's reason and the devices found
  } catch (const DeviceError& e) {
    throw DeviceError(rank + "LOCAL_RANK=" + std::to_string(env_.local_rank) + " picks " + device_.str() + ": " +
                      e.what());
  }
  try {
    group_ = std::make_unique<distributed::ProcessGroup>(env_, device_, timeout_s);
  } catch (const DistributedError& e) {
    // torchrun's agent may serve its own store on MASTER_PORT to its workers (PyTorch's
    // _create_c10d_store), a protocol Kiln's rendezvous does not speak: say so.
    const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
    if (!agent_store || std::string(agent_store) != "True") throw;
    throw DistributedError(std::string(e.what()) +
                           " (TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent may hold MASTER_PORT for its own "
                           "store; start the ranks with the variables set directly, docs/multi-gpu.md)");
  }
}

DataParallel::~DataParallel() = default;

const std::string& DataParallel::library() const { return group_->library(); }

void DataParallel::wrap(const nn::Module& model, train::TrainerOptions& options) {
  KILN_CHECK(!reducer_, ValueError, "DataParallel::wrap: called twice");
  distributed::broadcast_state(model, group_->communicator());
  reducer_ = std::make_unique<distributed::Reducer>(model.parameters(), group_->communicator());
  options.backward = [reducer = reducer_.get()](const Tensor& loss) { reducer->backward(loss); };
}

void DataParallel::barrier(const std::string& what) { group_->rendezvous().barrier(what); }

void DataParallel::abort() { group_->communicator().abort(); }

}  // namespace kiln::cli
