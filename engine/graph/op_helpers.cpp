#include "engine/graph/op_helpers.h"

#include "engine/nn/module.h"

namespace kiln::graph::detail {

int64_t sample_numel(const SymShape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (!is_symbolic(d)) n = sat_mul(n, d);
  return n;
}

int64_t checked_numel(const std::string& op, const SymShape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d == kBatch) continue;
    KILN_CHECK(!is_symbolic(d), ShapeError, op, ": the size of ", shape_str(s), " depends on its symbolic dimension ",
               dim_str(d), "; give it a fixed size on the Input first");
    KILN_CHECK(!__builtin_mul_overflow(n, d, &n), ShapeError, op, ": size of ", shape_str(s), " overflows int64");
  }
  return n;
}

void expect_rank(const std::string& op, const TensorType& t, size_t rank, const char* layout) {
  KILN_CHECK(t.shape.size() == rank, ShapeError, op, " expects input ", layout, ", got ", shape_str(t.shape));
}

void expect_floating(const std::string& op, const TensorType& t) {
  KILN_CHECK(is_floating(t.dtype), DTypeError, op, " expects a floating-point input, got ", t.str());
}

void expect_batched(const std::string& op, const TensorType& t) {
  KILN_CHECK(!t.shape.empty() && t.shape[0] == kBatch, ShapeError, op,
             " expects an input with the batch dimension N first, got ", shape_str(t.shape));
}

int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  if (is_symbolic(in)) return kUnknownDim;
  int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

int64_t wrap_dim(const std::string& op, int64_t dim, const TensorType& t) {
  auto rank = static_cast<int64_t>(t.shape.size());
  KILN_CHECK(dim >= -rank && dim < rank, ShapeError, op, ": dim ", dim, " is out of range for ", shape_str(t.shape),
             " (rank ", rank, ")");
  return dim < 0 ? dim + rank : dim;
}

AttrSpec int_attr(std::string name, int64_t def, double min, double max, std::string unit, std::string desc) {
  AttrSpec a{std::move(name), AttrType::Int, def, min, max, {}, std::move(unit), std::move(desc)};
  return a;
}
AttrSpec float_attr(std::string name, double def, double min, double max, std::string unit, std::string desc) {
  return AttrSpec{std::move(name), AttrType::Float, def, min, max, {}, std::move(unit), std::move(desc)};
}
AttrSpec bool_attr(std::string name, bool def, std::string desc) {
  return AttrSpec{std::move(name), AttrType::Bool, def, std::nullopt, std::nullopt, {}, "", std::move(desc)};
}
AttrSpec choice_attr(std::string name, std::string def, std::vector<std::string> choices, std::string desc) {
  return AttrSpec{std::move(name), AttrType::Choice, std::move(def), std::nullopt, std::nullopt, std::move(choices), "",
                  std::move(desc)};
}
AttrSpec ints_attr(std::string name, std::vector<int64_t> def, int min_items, int max_items, double min, double max,
                   std::string unit, std::string desc) {
  AttrSpec a{std::move(name), AttrType::Ints, std::move(def), min, max, {}, std::move(unit), std::move(desc)};
  a.min_items = min_items;
  a.max_items = max_items;
  return a;
}

std::vector<Tensor> module_forward(nn::Module* m, const std::vector<Tensor>& inputs, const Attributes&) {
  return {m->forward(inputs.at(0))};
}

std::vector<TensorType> same_type(const std::string& op, const std::vector<TensorType>& in) {
  expect_floating(op, in.at(0));
  return {in[0]};
}

}  // namespace kiln::graph::detail
