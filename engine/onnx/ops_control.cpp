// ONNX control flow: If and Loop run their body subgraphs through the executor
// (outer-scope values stay visible inside the bodies).
#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

std::vector<Tensor> if_op(OpContext& c) {
  bool cond = c.scalar_input(0) != 0;
  return c.run_subgraph(c.attr_graph(cond ? "then_branch" : "else_branch"), {});
}

// Loop: body(iteration_num, cond, v...) -> (cond, v..., scan_outputs...); the scan
// outputs of all iterations are stacked along a new first axis.
std::vector<Tensor> loop_op(OpContext& c) {
  const Graph& body = c.attr_graph("body");
  int64_t max_trip = c.has_input(0) ? static_cast<int64_t>(c.scalar_input(0)) : INT64_MAX;
  bool cond = c.has_input(1) ? c.scalar_input(1) != 0 : true;
  std::vector<Tensor> state(c.inputs().begin() + 2, c.inputs().end());
  size_t n_state = state.size();
  size_t n_scan = body.outputs.size() >= 1 + n_state ? body.outputs.size() - 1 - n_state : 0;
  std::vector<std::vector<Tensor>> scans(n_scan);
  for (int64_t i = 0; i < max_trip && cond; ++i) {
    std::vector<Tensor> in{Tensor::scalar(static_cast<double>(i), DType::i64, c.device()),
                           Tensor::scalar(cond ? 1 : 0, DType::bool_, c.device())};
    in.insert(in.end(), state.begin(), state.end());
    std::vector<Tensor> out = c.run_subgraph(body, in);
    if (out.size() != 1 + n_state + n_scan) c.fail("body returned " + std::to_string(out.size()) + " values");
    cond = out[0].to(DType::f64).reshape({}).item<double>() != 0;
    for (size_t k = 0; k < n_state; ++k) state[k] = out[1 + k];
    for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(out[1 + n_state + k]);
  }
  std::vector<Tensor> result = state;
  for (size_t k = 0; k < n_scan; ++k) {
    if (scans[k].empty()) c.fail("a scan output of a loop that ran 0 iterations has no shape");
    result.push_back(stack(scans[k], 0));
  }
  return result;
}

}  // namespace

void register_control_ops(OpTable& t) {
  t["If"] = if_op;
  t["Loop"] = loop_op;
}

}  // namespace kiln::onnx
