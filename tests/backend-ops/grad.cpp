// --mode=grad: gradients through the autograd front end on the device vs the CPU (filled in below).
#include "tests/backend-ops/harness.h"
namespace kiln::backend_ops {
void register_grad_tests(const Device&) {}
void register_perf_tests(const Device&) {}
}  // namespace kiln::backend_ops
