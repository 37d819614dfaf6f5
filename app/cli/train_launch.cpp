#include "app/cli/train_launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "app/cli/commands.h"
#include "app/cli/interrupt.h"
#include "engine/core/collectives.h"
#include "engine/core/error.h"
#include "engine/core/plural.h"
#include "engine/core/registry.h"
#include "engine/distributed/environment.h"

extern char** environ;

namespace kiln::cli {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kInterruptGrace = std::chrono::seconds(30);  // Note [Launcher signals]
constexpr auto kPeerGrace = std::chrono::seconds(15);       // after Ctrl-C, once a rank has stopped
constexpr auto kTermGrace = std::chrono::seconds(5);

// The variables the launcher sets for each rank; the parent's own values are not passed on.
constexpr const char* kRankVariables[] = {"MASTER_ADDR", "MASTER_PORT",      "RANK",
                                          "WORLD_SIZE",  "LOCAL_RANK",       "LOCAL_WORLD_SIZE",
                                          "NCCL_NVLS_ENABLE"};

// A TCP port of 127.0.0.1 that nobody listens on now (the kernel's pick for port 0), for rank 0's
// rendezvous. Another process may take it before rank 0 binds it: rank 0 then says the port is in use.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  KILN_CHECK(fd >= 0, DistributedError, "kiln train --gpus: socket: ", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int error = errno;
  close(fd);
  KILN_CHECK(ok, DistributedError, "kiln train --gpus: no free TCP port on 127.0.0.1 for the rendezvous: ",
             std::strerror(error));
  return ntohs(addr.sin_port);
}

// "SIGSEGV (Segmentation fault)".
std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* what = strsignal(sig);
  return (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig)) +
         (what ? " (" + std::string(what) + ")" : "");
}

// Checks that cuda:0 .. cuda:gpus-1 exist and have collectives (UsageError otherwise).
void check_gpus(const Args& args, int gpus) {
  std::vector<std::string> found;
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::cuda) found.push_back(d.device.str());
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;  // cuda:2 before cuda:10
  });
  const std::string flag = "--gpus " + std::to_string(gpus) + ": ";
  if (found.empty()) {
    std::string why;
    for (const std::string& u : unavailable_backends())
      if (u.rfind("cuda:", 0) == 0) why = " (" + u + ")";
    args.fail(flag + "this machine has no CUDA device" + why);
  }
  if (static_cast<int>(found.size()) < gpus) {
    std::string list;
    for (const std::string& f : found) list += (list.empty() ? "" : ", ") + f;
    args.fail(flag + "this machine has " + count_of(static_cast<long long>(found.size()), "CUDA device") + " (" +
              list + ")");
  }
  if (!collectives_of(*backend_for(Device(DeviceType::cuda, 0))))
    args.fail(flag + "this build of Kiln has no NCCL (its CUDA backend was configured without it: KILN_NCCL=OFF), "
              "which data-parallel training needs");
}

struct Rank {
  pid_t pid = -1;
  bool running = false;
};

// The environment of rank `rank`: the parent's without kRankVariables, plus the launcher's.
std::vector<std::string> rank_environment(int rank, int world_size, int port, int threads) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (std::find(std::begin(kRankVariables), std::end(kRankVariables), name) != std::end(kRankVariables)) continue;
    env.push_back(entry);
  }
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(world_size));
  env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(world_size));
  env.push_back("NCCL_NVLS_ENABLE=0");
  if (threads > 0) env.push_back("OMP_NUM_THREADS=" + std::to_string(threads));
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  for (std::string& s : items) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Starts rank `rank` (fork + execve of /proc/self/exe). DistributedError when fork fails.
pid_t start_rank(int rank, std::vector<std::string> argv, std::vector<std::string> env) {
  std::vector<char*> c_argv = c_strings(argv), c_env = c_strings(env);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  KILN_CHECK(pid >= 0, DistributedError, "kiln train --gpus: cannot start rank ", rank, ": fork: ",
             std::strerror(errno));
  if (pid > 0) return pid;
  // The child: async-signal-safe calls only until execve (the parent may have had other threads).
  setpgid(0, 0);                     // Note [Launcher signals]: a terminal's Ctrl-C reaches the launcher only
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher's death ends the rank
  if (getppid() != parent) _exit(128 + SIGKILL);  // it died before prctl
  const int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, STDIN_FILENO);
    if (rank > 0) dup2(null_fd, STDOUT_FILENO);
    if (null_fd > STDERR_FILENO) close(null_fd);
  }
  execve("/proc/self/exe", c_argv.data(), c_env.data());
  const char message[] = "kiln train --gpus: cannot execute /proc/self/exe\n";
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(127);
}

void signal_running(std::vector<Rank>& ranks, int sig) {
  for (Rank& r : ranks)
    if (r.running) kill(r.pid, sig);
}

}  // namespace

std::vector<std::string> rank_arguments(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--gpus") {
      ++i;  // and its value
      continue;
    }
    if (argv[i].rfind("--gpus=", 0) == 0) continue;
    out.push_back(argv[i]);
  }
  out.push_back("--distributed");
  return out;
}

int launch_ranks(const std::vector<std::string>& argv, const Args& args, int gpus) {
  check_gpus(args, gpus);
  const int port = free_port();
  int threads = 0;  // OMP_NUM_THREADS for the ranks (0: leave it)
  if (std::getenv("OMP_NUM_THREADS") == nullptr && !args.given("threads"))
    threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / gpus);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  const std::string program = n > 0 ? std::string(self, static_cast<size_t>(n)) : "kiln";  // argv[0], for ps
  std::vector<std::string> rank_argv{program, "train"};
  for (const std::string& a : rank_arguments(argv)) rank_argv.push_back(a);

  // Installed before the ranks start, so that they begin with SIGINT's default action (execve resets
  // a handled signal; an ignored one would stay ignored).
  InterruptGuard interrupt;
  std::vector<Rank> ranks(static_cast<size_t>(gpus));
  try {
    for (int i = 0; i < gpus; ++i) {
      ranks[i].pid = start_rank(i, rank_argv, rank_environment(i, gpus, port, threads));
      ranks[i].running = true;
    }
  } catch (...) {
    signal_running(ranks, SIGKILL);
    for (Rank& r : ranks)
      if (r.running) waitpid(r.pid, nullptr, 0);
    throw;
  }

  int status = kExitOk;
  std::optional<int> failed;                        // the first rank that failed
  std::optional<Clock::time_point> term_at, kill_at;  // when the running ranks get SIGTERM, SIGKILL
  bool forwarded = false;
  for (;;) {
    const auto now = Clock::now();
    if (InterruptGuard::interrupted() && !forwarded) {
      signal_running(ranks, SIGINT);
      forwarded = true;
      if (!term_at) term_at = now + kInterruptGrace;
    }
    int running = 0;
    for (int i = 0; i < gpus; ++i) {
      Rank& r = ranks[i];
      if (!r.running) continue;
      int st = 0;
      const pid_t done = waitpid(r.pid, &st, WNOHANG);
      if (done == 0 || (done < 0 && errno == EINTR)) {
        ++running;
        continue;
      }
      r.running = false;
      if (done < 0) continue;  // not our child any more (cannot happen): nothing to report
      const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      // After a Ctrl-C every rank is on its way out: their statuses are not news (130, or a SIGINT
      // that came before the rank handles it), nor those of ranks the launcher ended.
      if (forwarded) {
        term_at = std::min(*term_at, now + kPeerGrace);  // the others stop within a batch of this one
        continue;
      }
      if (ok || failed) continue;
      failed = i;
      status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      const std::string how = WIFEXITED(st) ? "exited with status " + std::to_string(WEXITSTATUS(st))
                                            : "was killed by " + signal_text(WTERMSIG(st));
      std::fprintf(stderr, "kiln: rank %d %s; stopping the other ranks\n", i, how.c_str());
      term_at = now;
    }
    if (running == 0) break;
    if (term_at && now >= *term_at && !kill_at) {
      if (!failed)
        for (int i = 0; i < gpus; ++i)
          if (ranks[i].running)
            std::fprintf(stderr,
                         "kiln: rank %d has not stopped since Ctrl-C (it may wait for a rank that stopped a "
                         "step earlier); ending it\n", i);
      signal_running(ranks, SIGTERM);
      kill_at = now + kTermGrace;
    }
    if (kill_at && now >= *kill_at) {
      signal_running(ranks, SIGKILL);
      kill_at = Clock::time_point::max();  // once
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (failed) return status;
  return forwarded ? kExitInterrupted : kExitOk;
}

}  // namespace kiln::cli
