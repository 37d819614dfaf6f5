#include "engine/graph/onnx_export.h"

namespace kiln::graph {

std::string OnnxEmitter::scalar(const std::string& name, float v) {
  return constant(name, Tensor::from_vector<float>({v}, {}));
}
std::string OnnxEmitter::ints(const std::string& name, const std::vector<int64_t>& v) {
  return constant(name, Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}));
}
std::string OnnxEmitter::int_scalar(const std::string& name, int64_t v) {
  return constant(name, Tensor::scalar(static_cast<double>(v), DType::i64));
}

}  // namespace kiln::graph
