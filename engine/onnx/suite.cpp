#include "engine/onnx/suite.h"

#include <onnx/onnx_pb.h>
#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx {

namespace fs = std::filesystem;

const char* status_name(CaseResult::Status s) {
  switch (s) {
    case CaseResult::Status::Passed: return "passed";
    case CaseResult::Status::Failed: return "failed";
    case CaseResult::Status::Unsupported: return "unsupported";
  }
  return "?";
}

std::vector<std::string> find_cases(const std::string& dir) {
  std::error_code ec;
  KILN_CHECK(!fs::exists(dir, ec) || fs::is_directory(dir, ec), IoError, dir,
             " is a file, not a folder of test cases (folders with model.onnx and test_data_set_*)");
  KILN_CHECK(fs::is_directory(dir, ec), IoError, "no such folder: ", dir);
  if (fs::exists(fs::path(dir) / "model.onnx")) return {dir};
  std::vector<std::string> cases;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path().string());
  std::sort(cases.begin(), cases.end());
  return cases;
}

namespace {

std::string index_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
  return shape_str(idx);
}

std::vector<std::string> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() + 3 && n.substr(n.size() - 3) == ".pb")
      files.emplace_back(std::atoi(n.c_str() + prefix.size()), e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (auto& f : files) out.push_back(f.second);
  return out;
}

// A TensorProto test data file: numeric or STRING. ONNX's test generator before 1.15 stored
// BFLOAT16 values as UINT16 bit patterns (numpy has no bfloat16), so a UINT16 file of a value
// declared BFLOAT16 is read as BFLOAT16 (the same 16 bits).
Value load_tensor_value(const std::string& path, const ValueInfo& info) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  ::onnx::TensorProto p;
  KILN_CHECK(p.ParseFromString(ss.str()), IoError, path, ": not a valid ONNX TensorProto (truncated or corrupt)");
  if (p.data_type() == ::onnx::TensorProto::UINT16 && info.elem_type == ::onnx::TensorProto::BFLOAT16)
    p.set_data_type(::onnx::TensorProto::BFLOAT16);
  try {
    if (p.data_type() == ::onnx::TensorProto::STRING) return Value::of_strings(strings_from_proto(p));
    return tensor_from_proto(p, fs::path(path).parent_path().string());
  } catch (const Error& e) {
    throw IoError(path + ": " + e.what());
  }
}

// A test data file of a graph input or output: a TensorProto, a SequenceProto, or an
// OptionalProto (of a tensor or a sequence), as the value's declared type says.
Value load_value_file(const std::string& path, const ValueInfo& info) {
  if (!info.is_optional) return info.is_sequence ? Value::of_sequence(load_sequence_file(path)) : load_tensor_value(path, info);
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, IoError, "cannot open ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  ::onnx::OptionalProto p;
  KILN_CHECK(p.ParseFromString(ss.str()), IoError, path, ": not a valid ONNX OptionalProto");
  Value v = Value::empty_optional();
  std::string base = fs::path(path).parent_path().string();
  try {
    if (p.has_tensor_value()) {
      v.tensor = tensor_from_proto(p.tensor_value(), base);
    } else if (p.has_sequence_value()) {
      std::vector<Tensor> items;
      for (const auto& t : p.sequence_value().tensor_values()) items.push_back(tensor_from_proto(t, base));
      v.sequence = std::make_shared<const std::vector<Tensor>>(std::move(items));
    }
  } catch (const Error& e) {
    throw IoError(path + ": " + e.what());
  }
  return v;
}

// "" when `got` matches `want` (tensors, sequences and optionals), else the reason.
std::string compare_values(const Value& want, const Value& got, const SuiteOptions& opt, double& max_error) {
  if (want.has_element() != got.has_element())
    return want.has_element() ? "an empty optional where a value is expected" : "a value where an empty optional is expected";
  if (!want.has_element()) return "";
  if (want.is_sequence() != got.is_sequence())
    return want.is_sequence() ? "a tensor where a sequence is expected" : "a sequence where a tensor is expected";
  if (want.is_strings() != got.is_strings())
    return want.is_strings() ? "a numeric tensor where a STRING tensor is expected" : "a STRING tensor where a numeric one is expected";
  if (want.is_strings()) {
    if (want.strings->shape != got.strings->shape)
      return "shape " + shape_str(got.strings->shape) + " differs from the expected " + shape_str(want.strings->shape);
    for (size_t k = 0; k < want.strings->data.size(); ++k)
      if (want.strings->data[k] != got.strings->data[k])
        return "string '" + got.strings->data[k] + "' at " + index_str(static_cast<int64_t>(k), want.strings->shape) +
               " differs from the expected '" + want.strings->data[k] + "'";
    return "";
  }
  if (!want.is_sequence()) return compare_tensors(want.tensor, got.tensor, opt.rtol, opt.atol, max_error);
  if (want.sequence->size() != got.sequence->size())
    return "a sequence of " + std::to_string(got.sequence->size()) + " tensors where " +
           std::to_string(want.sequence->size()) + " are expected";
  for (size_t k = 0; k < want.sequence->size(); ++k) {
    std::string why = compare_tensors((*want.sequence)[k], (*got.sequence)[k], opt.rtol, opt.atol, max_error);
    if (!why.empty()) return "element " + std::to_string(k) + ": " + why;
  }
  return "";
}

}  // namespace

std::string compare_tensors(const Tensor& expected, const Tensor& actual, double rtol, double atol, double& max_error) {
  if (expected.shape() != actual.shape())
    return "shape " + shape_str(actual.shape()) + " differs from the expected " + shape_str(expected.shape());
  if (expected.dtype() != actual.dtype())
    return std::string("dtype ") + dtype_name(actual.dtype()) + " differs from the expected " + dtype_name(expected.dtype());
  // On the host: a device may hold a dtype it cannot convert (vulkan's u16 has no cast to f64).
  std::vector<double> e = expected.to(Device()).to_vector<double>(), a = actual.to(Device()).to_vector<double>();
  bool floating = is_floating(expected.dtype());
  int64_t worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    double x = a[i], y = e[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    double err = std::fabs(x - y);
    if (std::isnan(err)) err = INFINITY;
    max_error = std::max(max_error, err);
    double excess = floating ? err - (atol + rtol * std::fabs(y)) : err;
    if (!(excess <= 0) && (worst < 0 || excess > worst_excess || std::isnan(excess))) {
      worst = static_cast<int64_t>(i);
      worst_excess = std::isnan(excess) ? INFINITY : excess;
    }
  }
  if (worst < 0) return "";
  std::ostringstream os;
  os.precision(8);
  os << "value " << a[size_t(worst)] << " at " << index_str(worst, expected.shape()) << " differs from the expected "
     << e[size_t(worst)] << " by " << std::fabs(a[size_t(worst)] - e[size_t(worst)]);
  return os.str();
}

namespace {

// Runs every test_data_set_* of the case; r gets the first mismatch, else Passed.
void run_data_sets(const Session& session, const std::string& case_dir, const SuiteOptions& opt, CaseResult& r) {
  std::vector<std::string> names = session.input_names();
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(case_dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) throw IoError(case_dir + ": no test_data_set_* folder");
  for (const fs::path& set : sets) {
    std::vector<std::string> inputs = sorted_files(set, "input_"), outputs = sorted_files(set, "output_");
    if (inputs.size() > names.size())
      throw ValueError(set.string() + ": " + std::to_string(inputs.size()) + " input files for " +
                       std::to_string(names.size()) + " model inputs");
    const std::vector<ValueInfo>& in_info = session.model().graph.inputs;
    const std::vector<ValueInfo>& out_info = session.model().graph.outputs;
    std::map<std::string, Value> feed;
    for (size_t i = 0; i < inputs.size(); ++i) feed[names[i]] = load_value_file(inputs[i], in_info[i]);
    std::vector<Value> got = session.run_values(feed);
    if (got.size() != outputs.size())
      throw ValueError(std::to_string(got.size()) + " outputs for " + std::to_string(outputs.size()) + " expected");
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string why = compare_values(load_value_file(outputs[i], out_info[i]), got[i], opt, r.max_error);
      if (!why.empty()) {
        r.reason = set.filename().string() + " output " + std::to_string(i) + " '" + session.output_names()[i] +
                   "': " + why;
        return;
      }
    }
  }
  r.status = CaseResult::Status::Passed;
}

// Loads and runs the case (run_case without the clock).
CaseResult run_case_untimed(const std::string& case_dir, const SuiteOptions& opt) {
  CaseResult r;
  r.name = fs::path(case_dir).filename().string();
  std::unique_ptr<Session> session;
  try {
    Model model = load_model((fs::path(case_dir) / "model.onnx").string());
    r.unsupported = find_unsupported(model);
    if (!r.unsupported.empty()) {
      r.status = CaseResult::Status::Unsupported;
      r.reason = "unsupported op " + r.unsupported[0].str();
      return r;
    }
    SessionOptions session_options;
    session_options.cpu_fallback = opt.cpu_fallback;
    session = std::make_unique<Session>(std::move(model), opt.device, session_options);
    run_data_sets(*session, case_dir, opt, r);
  } catch (const UnsupportedError& e) {
    r.status = CaseResult::Status::Unsupported;
    r.unsupported = e.ops;
    r.reason = e.what();
  } catch (const std::exception& e) {
    r.status = CaseResult::Status::Failed;
    r.reason = e.what();
  }
  if (session) r.fallback = session->fallback_stats();
  return r;
}

}  // namespace

CaseResult run_case(const std::string& case_dir, const SuiteOptions& opt) {
  auto start = std::chrono::steady_clock::now();
  CaseResult r = run_case_untimed(case_dir, opt);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace kiln::onnx
