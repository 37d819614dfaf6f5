// The backend conformance harness (tests/backend-ops): runs each Backend op on a device
// and on the CPU backend (the reference) with the same inputs and compares.
//
// A Case holds its tensors as host bytes (Buf): inputs in a chosen memory layout
// (contiguous, transposed, sliced with a step, expanded with stride 0) and outputs with
// sentinel bytes before and after the view. Checks (Compare): normalized mean squared
// error  sum((dev - cpu)^2) / sum(cpu^2)  within the case's threshold (exact for integer
// and bool outputs), NaN and Inf at the same positions, sentinels unchanged.
// Modes (--mode= or KILN_BACKEND_OPS_MODE): test (default), grad, perf, support.
// Devices (--device= or KILN_BACKEND_OPS_DEVICE): "all" (default: every non-CPU device of
// kiln::list_devices()), a type ("vulkan", "cuda") or one device ("vulkan:0"). When none
// is found the program prints why and exits 77 (ctest: skipped).
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/core/backend.h"

namespace kiln::backend_ops {

enum class Layout { contiguous, transposed, stepped, expanded };
const char* layout_name(Layout l);

// One tensor of a case: the whole storage as host bytes and the view the op sees.
struct Buf {
  DType dtype = DType::f32;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  // elements
  std::vector<uint8_t> storage;
  bool output = false;
  int64_t numel() const { return kiln::numel(shape); }
  double get(int64_t storage_index) const;
  void set(int64_t storage_index, double v);
  // Storage index of the view's i-th element (row-major).
  int64_t position(int64_t i) const;
};

using Rng = std::mt19937_64;
using Fill = std::function<double(Rng&)>;
Fill uniform(double lo, double hi);
Fill integers(int64_t lo, int64_t hi);  // inclusive
Fill choice(std::vector<double> values);

// An input of `shape` laid out as `layout` (transposed: last two dims swapped in memory;
// stepped: every element of the last dim two apart, offset 3; expanded: dim 0 has stride 0).
Buf input(Rng& rng, DType dt, const Shape& shape, Layout layout, const Fill& fill);
// A contiguous output with sentinel bytes around it; its elements start as sentinels, or
// as `init` values for ops that accumulate into their output.
Buf output(Rng& rng, DType dt, const Shape& shape, const Fill* init = nullptr);

struct Case {
  std::string name;  // "binary.add/f32/[33, 17]/transposed"
  OpId op = OpId::copy;
  DType dtype = DType::f32;  // the dtype asked of supports()
  int sub_op = Backend::kEverySubOp;  // the UnaryOp, BinaryOp or ReduceOp asked of supports()
  std::vector<Buf> bufs;
  std::function<void(Backend&, std::vector<TensorArg>&)> run;
  double max_nmse = 1e-7;  // floating outputs; integer and bool outputs must be equal
  // Ops whose device errors are the point: the run must throw (bad-input cases).
  bool expect_error = false;
};

// Runs c.run on `b` with the case's tensors; returns the storage bytes of each output
// buffer after b.synchronize(). Errors of the backend propagate.
std::vector<std::vector<uint8_t>> execute(Backend& b, const Case& c);
// Empty when the outputs agree; otherwise a description of the first disagreements.
std::string compare(const Case& c, const std::vector<std::vector<uint8_t>>& ref,
                    const std::vector<std::vector<uint8_t>>& got);

// The case lists (cases_*.cpp). Deterministic: the same cases and values every run.
void add_elementwise_cases(std::vector<Case>& out);
void add_reduce_cases(std::vector<Case>& out);
void add_nn_cases(std::vector<Case>& out);
void add_index_cases(std::vector<Case>& out);
std::vector<Case> all_cases();

// Thresholds by dtype: f32 1e-7, f16 1e-5, bf16 1e-4 (one ulp of rounding ~ 2^-11, 2^-8).
double nmse_for(DType dt, double f32_threshold = 1e-7);
std::string case_name(const std::string& op, DType dt, const Shape& shape, const std::string& extra = "");

// Devices the run covers (see the file comment); `why` lists the absent backends' reasons.
std::vector<Device> selected_devices(const std::string& spec, std::string& why);

// Modes besides `test`: register GoogleTest tests for `dev` (grad) or print (perf, support).
void register_grad_tests(const Device& dev);
void register_error_tests(const Device& dev);  // errors.cpp (test mode)
void register_perf_tests(const Device& dev);
void register_timing_tests(const Device& dev);  // perf.cpp (test mode): Backend::begin_timing
void print_support_table(const std::vector<Device>& devs);

}  // namespace kiln::backend_ops
