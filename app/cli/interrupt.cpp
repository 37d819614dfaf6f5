#include "app/cli/interrupt.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <vector>

namespace kiln::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
struct sigaction g_previous {};

extern "C" void on_sigint(int) {
  g_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C kills the process as usual
}

// Note [Signals on their own stack]: a handler that runs on the stack of the code it interrupts
// writes below that code's stack pointer. oneDNN's JIT matmul did not survive it: `kiln bench
// --graph` stopped by Ctrl-C aborted in glibc's free() inside dnnl_primitive_execute ("corrupted
// size vs. prev_size while consolidating") in 9 of 100 runs on an AVX2 machine, also with one
// OpenMP thread and with Kiln's own kernels at KILN_CPU_ISA=base, and never without the signal.
// So the handler runs on an alternate stack (sigaltstack, SA_ONSTACK) of the thread that installs
// it, the main thread of `kiln`, to which Linux delivers a SIGINT sent to the process while that
// thread does not block it. A stack installed before (AddressSanitizer's) is kept.
void use_alternate_stack() {
  thread_local std::vector<char> stack;
  stack_t current{};
  if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;  // one is there
  stack.resize(std::max<size_t>(size_t{1} << 16, static_cast<size_t>(sysconf(_SC_MINSIGSTKSZ)) * 4));
  stack_t ss{};
  ss.ss_sp = stack.data();
  ss.ss_size = stack.size();
  sigaltstack(&ss, nullptr);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_interrupted = 0;
  use_alternate_stack();
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_ONSTACK;  // Note [Signals on their own stack]
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_previous);
}

InterruptGuard::~InterruptGuard() { sigaction(SIGINT, &g_previous, nullptr); }

bool InterruptGuard::interrupted() { return g_interrupted != 0; }

}  // namespace kiln::cli
