// The ONNX backend test suite runner (onnx/backend/test/data layout): a case is a folder
// with model.onnx and test_data_set_*/{input_*.pb, output_*.pb}. Outputs are compared
// with ONNX's tolerances (onnx/backend/test/runner: rtol 1e-3, atol 1e-7): floating values
// pass when |actual - expected| <= atol + rtol * |expected| (NaN matches NaN); integer
// and bool values must be equal; shapes and dtypes must match exactly.
#pragma once
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/onnx/executor.h"

namespace kiln::onnx {

struct SuiteOptions {
  Device device;
  double rtol = 1e-3, atol = 1e-7;
  bool cpu_fallback = true;  // SessionOptions::cpu_fallback: false measures the device alone
};

struct CaseResult {
  enum class Status { Passed, Failed, Unsupported };
  std::string name;                   // the case folder's name, "test_abs"
  Status status = Status::Failed;
  std::string reason;                 // why it failed (the first mismatch or error)
  double max_error = 0;               // largest |actual - expected| over compared outputs
  std::vector<UnsupportedOp> unsupported;
  FallbackStats fallback;             // nodes that ran on the CPU instead of the device
  double seconds = 0;                 // wall time of loading and running the case
};
const char* status_name(CaseResult::Status s);  // "passed", "failed", "unsupported"

// Case folders under dir (each subfolder holding model.onnx), sorted by name; dir itself
// when it holds model.onnx. IoError when dir does not exist or is a file.
std::vector<std::string> find_cases(const std::string& dir);

// Loads the model (unsupported ops -> Unsupported, before running anything) and runs every
// test_data_set_* of the case. Never throws for a problem of the case itself.
CaseResult run_case(const std::string& case_dir, const SuiteOptions& options);

// "" when actual matches expected within the tolerances, else the reason
// ("output 0: value 3.1 at [1, 2] differs from 3.0 by 0.1"); max_error gets the largest error.
std::string compare_tensors(const Tensor& expected, const Tensor& actual, double rtol, double atol, double& max_error);

}  // namespace kiln::onnx
