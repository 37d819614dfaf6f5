#include "engine/nn/sequence.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/functional.h"
#include "engine/nn/init.h"

namespace kiln::nn {

namespace {

// x [T, N, C] or [N, T, C] -> x + table[t] where table is [max, C] or [max, 1, C].
Tensor add_positions(const char* me, const Tensor& x, const Tensor& table, bool batch_first) {
  const int64_t c = table.size(-1), max = table.size(0);
  KILN_CHECK(x.defined() && x.dim() == 3 && x.size(2) == c, ShapeError, me, ": input must be ",
             batch_first ? "[N, T, " : "[T, N, ", c, "], got ", x.defined() ? shape_str(x.shape()) : "undefined");
  const int64_t steps = x.size(batch_first ? 1 : 0);
  KILN_CHECK(steps <= max, ShapeError, me, ": the sequence has ", steps, " steps, more than the ", max,
             " positions it was built for");
  const Tensor pos = table.narrow(0, 0, steps).reshape({steps, c});  // [T, C]
  return x + (batch_first ? pos.unsqueeze(0) : pos.unsqueeze(1)).to(x.dtype());
}

// Checks x [N, T, C] and the mask; returns keep [N, T, 1] in x's dtype (1 = valid step).
Tensor keep_of(const char* me, const Tensor& x, const Tensor& mask) {
  KILN_CHECK(x.defined() && x.dim() == 3, ShapeError, me, ": input must be [N, T, C], got ",
             x.defined() ? shape_str(x.shape()) : "undefined");
  if (!mask.defined()) return Tensor();
  KILN_CHECK(mask.dtype() == DType::bool_, DTypeError, me, ": padding_mask must be bool (true = padded), got ",
             dtype_name(mask.dtype()));
  const Shape want = {x.size(0), x.size(1)};
  KILN_CHECK(mask.shape() == want, ShapeError, me, ": padding_mask must be [N, T] = ", shape_str(want), ", got ",
             shape_str(mask.shape()));
  return logical_not(mask).to(x.dtype()).unsqueeze(2);
}

}  // namespace

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t n, int64_t dim, bool bf)
    : num_positions(n), embedding_dim(dim), batch_first(bf) {
  KILN_CHECK(n > 0 && dim > 0, ValueError, "LearnedPositionalEmbedding: sizes must be positive, got num_positions=", n,
             ", embedding_dim=", dim);
  weight = register_parameter("weight", Tensor::empty({n, dim}));
  init::normal_(weight);
}

Tensor LearnedPositionalEmbedding::forward(const Tensor& x) {
  return add_positions("LearnedPositionalEmbedding", x, weight, batch_first);
}

std::string LearnedPositionalEmbedding::extra_repr() const {
  return detail::str_cat(num_positions, ", ", embedding_dim, batch_first ? "" : ", batch_first=False");
}

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int64_t d, double p, int64_t len, bool bf)
    : d_model(d), max_len(len), dropout(p), batch_first(bf) {
  KILN_CHECK(d > 0 && len >= 0, ValueError, "PositionalEncoding: d_model must be positive and max_len >= 0, got ", d,
             " and ", len);
  KILN_CHECK(p >= 0 && p <= 1, ValueError, "PositionalEncoding: dropout must be in [0, 1], got ", p);
  std::vector<double> table(static_cast<size_t>(len * d));
  for (int64_t t = 0; t < len; ++t)
    for (int64_t i = 0; i < d; ++i) {
      const double freq = std::exp(static_cast<double>(i - i % 2) * (-std::log(10000.0) / static_cast<double>(d)));
      table[static_cast<size_t>(t * d + i)] = i % 2 == 0 ? std::sin(t * freq) : std::cos(t * freq);
    }
  pe = register_buffer("pe", Tensor::from_vector(table, {len, 1, d}).to(DType::f32));
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x) {
  return functional::dropout(add_positions("PositionalEncoding", x, pe, batch_first), dropout, training_);
}

std::string SinusoidalPositionalEncoding::extra_repr() const {
  return detail::str_cat(d_model, ", dropout=", dropout, ", max_len=", max_len);
}

Tensor masked_mean_pool(const Tensor& x, const Tensor& padding_mask) {
  const Tensor keep = keep_of("masked_mean_pool", x, padding_mask);
  if (!keep.defined()) return mean(x, {1});
  const Tensor count = clamp(sum(keep, {1}), 1, INFINITY);  // [N, 1]
  return sum(x * keep, {1}) / count;
}

Tensor masked_max_pool(const Tensor& x, const Tensor& padding_mask) {
  const Tensor keep = keep_of("masked_max_pool", x, padding_mask);
  if (!keep.defined()) return amax(x, {1});
  const Tensor pad = padding_mask.unsqueeze(2);
  const Tensor m = amax(where(pad, scalar_like(-INFINITY, x), x), {1});  // [N, C]
  const Tensor empty = amin(padding_mask, {1}, true).to(DType::bool_);  // [N, 1]: every step padded
  return where(empty, scalar_like(0, m), m);
}

Tensor last_step_pool(const Tensor& x, const Tensor& padding_mask) {
  const Tensor keep = keep_of("last_step_pool", x, padding_mask);
  const int64_t n = x.size(0), steps = x.size(1), c = x.size(2);
  KILN_CHECK(steps >= 1, ShapeError, "last_step_pool: input ", shape_str(x.shape()), " has no steps");
  if (!keep.defined()) return x.select(1, steps - 1);
  // Index of the last valid step: max over t of (t if valid else -1), then -1 -> 0 (zeroed
  // below). Computed in x's floating dtype, which every backend reduces and clamps.
  const Tensor t = Tensor::arange(0, static_cast<double>(steps), 1, x.dtype(), x.device()).unsqueeze(0);  // [1, T]
  const Tensor idx = amax(where(padding_mask, scalar_like(-1, t), t), {1}, true);  // [N, 1]
  const Tensor safe = clamp(idx, 0, INFINITY).to(DType::i64).unsqueeze(2).expand({n, 1, c}).contiguous();
  const Tensor picked = gather(x, 1, safe).squeeze(1);  // [N, C]
  return where(lt(idx, scalar_like(0, idx)), scalar_like(0, picked), picked);
}

Tensor first_step_pool(const Tensor& x) {
  KILN_CHECK(x.defined() && x.dim() == 3 && x.size(1) >= 1, ShapeError, "first_step_pool: input must be [N, T, C] with T >= 1, got ",
             x.defined() ? shape_str(x.shape()) : "undefined");
  return x.select(1, 0);
}

}  // namespace kiln::nn
