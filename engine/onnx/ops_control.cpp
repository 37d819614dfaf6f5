// ONNX control flow and sequences — the ops whose inputs or outputs may be sequences
// (seq(tensor)): If, Loop, Scan, Identity, SequenceEmpty, SequenceConstruct, SequenceInsert,
// SequenceErase, SequenceAt, SequenceLength, ConcatFromSequence, SplitToSequence,
// SequenceMap, Optional, OptionalHasElement, OptionalGetElement. Bodies run through the executor; outer-scope values stay visible in them.
#include <algorithm>
#include <climits>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

std::vector<Value> if_op(OpContext& c) {
  bool cond = c.scalar_input(0) != 0;
  return c.run_subgraph(c.attr_graph(cond ? "then_branch" : "else_branch"), {});
}

// Loop: body(iteration_num, cond, v...) -> (cond, v..., scan_outputs...); the scan
// outputs of all iterations are stacked along a new first axis.
std::vector<Value> loop_op(OpContext& c) {
  const Graph& body = c.attr_graph("body");
  int64_t max_trip = c.has_input(0) ? static_cast<int64_t>(c.scalar_input(0)) : INT64_MAX;
  bool cond = c.has_input(1) ? c.scalar_input(1) != 0 : true;
  std::vector<Value> state(c.values().begin() + 2, c.values().end());
  size_t n_state = state.size();
  size_t n_scan = body.outputs.size() >= 1 + n_state ? body.outputs.size() - 1 - n_state : 0;
  std::vector<std::vector<Tensor>> scans(n_scan);
  for (int64_t i = 0; i < max_trip && cond; ++i) {
    std::vector<Value> in{Tensor::scalar(static_cast<double>(i), DType::i64, c.device()),
                          Tensor::scalar(cond ? 1 : 0, DType::bool_, c.device())};
    in.insert(in.end(), state.begin(), state.end());
    std::vector<Value> out = c.run_subgraph(body, in);
    if (out.size() != 1 + n_state + n_scan) c.fail("body returned " + std::to_string(out.size()) + " values");
    cond = out[0].tensor.to(DType::f64).reshape({}).item<double>() != 0;
    for (size_t k = 0; k < n_state; ++k) state[k] = out[1 + k];
    for (size_t k = 0; k < n_scan; ++k) {
      if (out[1 + n_state + k].is_sequence()) c.fail("sequence scan outputs are not supported");
      scans[k].push_back(out[1 + n_state + k].tensor);
    }
  }
  std::vector<Value> result = state;
  for (size_t k = 0; k < n_scan; ++k) {
    if (scans[k].empty()) c.fail("a scan output of a loop that ran 0 iterations has no shape");
    result.push_back(stack(scans[k], 0));
  }
  return result;
}

// A position input (may be negative, counting from the end) checked against [lo, n].
int64_t position(OpContext& c, size_t input, int64_t n, int64_t def, bool allow_end) {
  if (!c.has_input(input)) return def;
  int64_t p = static_cast<int64_t>(c.scalar_input(input));
  if (p < 0) p += n;
  if (p < 0 || p > n || (!allow_end && p == n))
    c.fail("position " + std::to_string(static_cast<int64_t>(c.scalar_input(input))) + " is out of range for a sequence of " + std::to_string(n));
  return p;
}

std::vector<Value> sequence_empty(OpContext& c) { return {Value::of_sequence({})}; }

std::vector<Value> sequence_construct(OpContext& c) {
  std::vector<Tensor> items;
  for (size_t i = 0; i < c.num_inputs(); ++i) items.push_back(c.input(i));
  return {Value::of_sequence(items)};
}

std::vector<Value> sequence_insert(OpContext& c) {
  std::vector<Tensor> items = c.sequence_input(0);
  int64_t n = static_cast<int64_t>(items.size());
  int64_t p = position(c, 2, n, n, true);
  items.insert(items.begin() + p, c.input(1));
  return {Value::of_sequence(items)};
}

std::vector<Value> sequence_erase(OpContext& c) {
  std::vector<Tensor> items = c.sequence_input(0);
  int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) c.fail("cannot erase from an empty sequence");
  int64_t p = position(c, 1, n, n - 1, false);
  items.erase(items.begin() + p);
  return {Value::of_sequence(items)};
}

std::vector<Value> sequence_at(OpContext& c) {
  const std::vector<Tensor>& items = c.sequence_input(0);
  int64_t p = position(c, 1, static_cast<int64_t>(items.size()), 0, false);
  if (!c.has_input(1)) c.fail("position is required");
  return {items[size_t(p)]};
}

std::vector<Value> sequence_length(OpContext& c) {
  return {Tensor::scalar(static_cast<double>(c.sequence_input(0).size()), DType::i64, c.device())};
}

std::vector<Value> concat_from_sequence(OpContext& c) {
  const std::vector<Tensor>& items = c.sequence_input(0);
  if (items.empty()) c.fail("the sequence is empty");
  bool new_axis = c.attr_int("new_axis", 0) != 0;
  int64_t rank = items[0].dim() + (new_axis ? 1 : 0);
  int64_t axis = wrap_axis(c, c.attr_int("axis"), rank);
  return {new_axis ? stack(items, axis) : cat(items, axis)};
}

std::vector<Value> split_to_sequence(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t axis = wrap_axis(c, c.attr_int("axis", 0), x.dim());
  bool keepdims = c.attr_int("keepdims", 1) != 0;
  int64_t n = x.size(axis);
  std::vector<int64_t> sizes;
  bool scalar_split = false;
  if (c.has_input(1)) {
    const Tensor& s = c.input(1);
    if (s.dim() == 0) {
      int64_t k = static_cast<int64_t>(c.scalar_input(1));
      if (k <= 0) c.fail("split must be positive");
      for (int64_t start = 0; start < n; start += k) sizes.push_back(std::min(k, n - start));
      scalar_split = true;
    } else {
      sizes = c.ints_input(1);
    }
  } else {
    sizes.assign(static_cast<size_t>(n), 1);
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != n) c.fail("split sizes do not add up to " + std::to_string(n));
  std::vector<Tensor> items;
  int64_t start = 0;
  for (int64_t s : sizes) {
    Tensor part = x.slice(axis, start, start + s).contiguous();
    if (!c.has_input(1) && !keepdims) part = part.squeeze(axis);
    items.push_back(part);
    start += s;
  }
  (void)scalar_split;
  return {Value::of_sequence(items)};
}

// SequenceMap: runs the body once per element; sequence inputs give their i-th element,
// tensor inputs are passed whole; each body output collects into an output sequence.
std::vector<Value> sequence_map(OpContext& c) {
  const Graph& body = c.attr_graph("body");
  size_t n = c.sequence_input(0).size();
  for (size_t k = 1; k < c.num_inputs(); ++k)
    if (c.is_sequence(k) && c.sequence_input(k).size() != n) c.fail("input sequences differ in length");
  std::vector<std::vector<Tensor>> outs(body.outputs.size());
  for (size_t i = 0; i < n; ++i) {
    std::vector<Value> in;
    for (size_t k = 0; k < c.num_inputs(); ++k) in.push_back(c.is_sequence(k) ? Value(c.sequence_input(k)[i]) : c.values()[k]);
    std::vector<Value> out = c.run_subgraph(body, in);
    for (size_t j = 0; j < out.size() && j < outs.size(); ++j) outs[j].push_back(out[j].tensor);
  }
  std::vector<Value> result;
  for (auto& o : outs) result.push_back(Value::of_sequence(o));
  return result;
}

// Scan-9+ on states and scan inputs: the body runs once per slice of the scan inputs
// along their axes (reversed for direction 1); final states, then the scan outputs
// stacked along scan_output_axes (in reverse order for direction 1).
std::vector<Value> scan_core(OpContext& c, std::vector<Tensor> states, const std::vector<Tensor>& scans) {
  const Graph& body = c.attr_graph("body");
  size_t m = scans.size(), n = states.size();
  std::vector<int64_t> in_axes = c.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> in_dirs = c.attr_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  if (in_axes.size() != m || in_dirs.size() != m) c.fail("scan_input_axes/directions do not fit num_scan_inputs");
  int64_t steps = -1;
  for (size_t k = 0; k < m; ++k) {
    in_axes[k] = wrap_axis(c, in_axes[k], scans[k].dim());
    int64_t len = scans[k].size(in_axes[k]);
    if (steps >= 0 && len != steps) c.fail("scan inputs differ in length along their axes");
    steps = len;
  }
  size_t k_out = body.outputs.size() >= n ? body.outputs.size() - n : 0;
  std::vector<std::vector<Tensor>> outs(k_out);
  for (int64_t t = 0; t < std::max<int64_t>(steps, 0); ++t) {
    std::vector<Value> in(states.begin(), states.end());
    for (size_t k = 0; k < m; ++k) in.push_back(scans[k].select(in_axes[k], in_dirs[k] ? steps - 1 - t : t).contiguous());
    std::vector<Value> out = c.run_subgraph(body, in);
    if (out.size() != n + k_out) c.fail("body returned " + std::to_string(out.size()) + " values");
    for (size_t j = 0; j < n; ++j) states[j] = out[j].tensor;
    for (size_t j = 0; j < k_out; ++j) outs[j].push_back(out[n + j].tensor);
  }
  std::vector<int64_t> out_axes = c.attr_ints("scan_output_axes", std::vector<int64_t>(k_out, 0));
  std::vector<int64_t> out_dirs = c.attr_ints("scan_output_directions", std::vector<int64_t>(k_out, 0));
  if (out_axes.size() != k_out || out_dirs.size() != k_out) c.fail("scan_output_axes/directions do not fit the body");
  std::vector<Value> result(states.begin(), states.end());
  for (size_t j = 0; j < k_out; ++j) {
    if (outs[j].empty()) c.fail("a scan over 0 steps has no scan output shape");
    if (out_dirs[j]) std::reverse(outs[j].begin(), outs[j].end());
    result.push_back(stack(outs[j], wrap_axis(c, out_axes[j], outs[j][0].dim() + 1)));
  }
  return result;
}

std::vector<Value> scan_op(OpContext& c) {
  int64_t m = c.attr_int("num_scan_inputs");
  if (c.opset() >= 9) {
    int64_t n = static_cast<int64_t>(c.num_inputs()) - m;
    if (n < 0) c.fail("num_scan_inputs exceeds the inputs");
    std::vector<Tensor> states(c.inputs().begin(), c.inputs().begin() + n), scans(c.inputs().begin() + n, c.inputs().end());
    return scan_core(c, states, scans);
  }
  // Scan-8: input 0 is sequence_lens (must be full), every tensor has a leading batch dim.
  if (c.has_input(0)) c.fail("Scan-8 sequence_lens is not supported");
  int64_t n = static_cast<int64_t>(c.num_inputs()) - 1 - m;
  if (n < 0) c.fail("num_scan_inputs exceeds the inputs");
  int64_t batch = c.input(1).size(0);
  std::vector<std::vector<Tensor>> per_output;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> states, scans;
    for (int64_t i = 0; i < n; ++i) states.push_back(c.input(size_t(1 + i)).select(0, b));
    for (int64_t i = 0; i < m; ++i) scans.push_back(c.input(size_t(1 + n + i)).select(0, b));
    std::vector<Value> out = scan_core(c, states, scans);
    per_output.resize(out.size());
    for (size_t j = 0; j < out.size(); ++j) per_output[j].push_back(out[j].tensor);
  }
  std::vector<Value> result;
  for (auto& o : per_output) result.push_back(stack(o, 0));
  return result;
}

// Optional-15, OptionalHasElement-15/18, OptionalGetElement-15/18.
std::vector<Value> optional_op(OpContext& c) {
  if (!c.has_value(0)) return {Value::empty_optional()};
  Value v = c.values()[0];
  v.optional = true;
  return {v};
}
std::vector<Value> optional_has_element(OpContext& c) {
  bool has = c.has_value(0) && c.values()[0].has_element();
  return {Tensor::scalar(has ? 1 : 0, DType::bool_, c.device())};
}
std::vector<Value> optional_get_element(OpContext& c) {
  if (!c.has_value(0) || !c.values()[0].has_element()) c.fail("the optional input is empty");
  Value v = c.values()[0];
  v.optional = false;
  return {v};
}

}  // namespace

const SequenceOpTable& sequence_ops() {
  static const SequenceOpTable table = [] {
    SequenceOpTable t;
    t["If"] = if_op;
    t["Loop"] = loop_op;
    t["Scan"] = scan_op;
    t["Identity"] = [](OpContext& c) -> std::vector<Value> { return {c.values().at(0)}; };
    t["SequenceEmpty"] = sequence_empty;
    t["SequenceConstruct"] = sequence_construct;
    t["SequenceInsert"] = sequence_insert;
    t["SequenceErase"] = sequence_erase;
    t["SequenceAt"] = sequence_at;
    t["SequenceLength"] = sequence_length;
    t["ConcatFromSequence"] = concat_from_sequence;
    t["SplitToSequence"] = split_to_sequence;
    t["SequenceMap"] = sequence_map;
    t["Optional"] = optional_op;
    t["OptionalHasElement"] = optional_has_element;
    t["OptionalGetElement"] = optional_get_element;
    register_string_ops(t);
    register_ml_ops(t);
    return t;
  }();
  return table;
}

}  // namespace kiln::onnx
