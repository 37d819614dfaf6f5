// `kiln train --gpus N` (issue 21): a launcher like `torchrun --standalone --nproc-per-node N` for one
// machine. It checks that the machine has N CUDA devices and NCCL, then starts N processes of this
// same binary (/proc/self/exe) with the same arguments minus --gpus N plus --distributed, each with
//   MASTER_ADDR=127.0.0.1, MASTER_PORT=<a free port>, RANK=LOCAL_RANK=i, WORLD_SIZE=LOCAL_WORLD_SIZE=N,
//   NCCL_NVLS_ENABLE=0 (issue 21 keeps NVLink multicast off in every launch), and, unless
//   OMP_NUM_THREADS is set or --threads given, OMP_NUM_THREADS = the CPUs / N (as torchrun sets
//   OMP_NUM_THREADS=1, so that N ranks do not each start a thread per core);
// stdin from /dev/null, and stdout to /dev/null for ranks > 0 (rank 0 prints the run; every rank's
// errors reach stderr, prefixed with its rank: app/cli/train_distributed.h).
//
// Note [Launcher signals]: the ranks run in a process group of their own, so that a Ctrl-C at the
// terminal reaches the launcher only, which passes one SIGINT to every rank (each stops after its
// current batch, exit status 130); ranks that have not ended 30 s later, or 15 s after the first
// rank ended (they may wait on the device for a peer that stopped one step earlier: the ranks do not
// agree on where to stop), get SIGTERM, and SIGKILL 5 s after that. A second
// Ctrl-C kills the launcher, and the kernel then kills the ranks (PR_SET_PDEATHSIG), as it does
// when the launcher dies any other way. When a rank exits with a non-zero status or dies by a signal,
// the launcher names it ("rank 1 was killed by SIGSEGV (Segmentation fault)"), sends SIGTERM to the
// others (SIGKILL after 5 s) and exits with that rank's status (128 + the signal's number for a
// signal), so that a dead rank never leaves the others waiting for it until the NCCL timeout.
#pragma once
#include <string>
#include <vector>

#include "app/cli/args.h"

namespace kiln::cli {

// Runs the N ranks of `kiln train <argv>` (argv as given after "train", with --gpus) and returns
// the exit status described above. UsageError before starting anything: the machine has fewer than
// `gpus` CUDA devices ("--gpus 4: this machine has 1 CUDA device (cuda:0)", or "has no CUDA device"
// with the registry's reason), or the CUDA backend was built without NCCL.
int launch_ranks(const std::vector<std::string>& argv, const Args& args, int gpus);

// argv without its --gpus flag and value ("--gpus N" or "--gpus=N"), with --distributed added.
std::vector<std::string> rank_arguments(const std::vector<std::string>& argv);

}  // namespace kiln::cli
