#include "engine/graph/sequence_pool.h"

#include <cfloat>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"

namespace kiln::graph {

const std::vector<std::string>& sequence_pool_modes() {
  static const std::vector<std::string> m{"mean", "max", "last", "first"};
  return m;
}

Tensor sequence_pool(const Tensor& x, const Tensor& mask, const std::string& mode) {
  KILN_CHECK(x.dim() == 3, ShapeError, "SequencePool expects input [N, T, C], got ", kiln::shape_str(x.shape()));
  const int64_t n = x.size(0), t = x.size(1);
  KILN_CHECK(!mask.defined() || (mask.dim() == 2 && mask.size(0) == n && mask.size(1) == t), ShapeError,
             "SequencePool: the padding mask is ", kiln::shape_str(mask.shape()), " but the sequence is ",
             kiln::shape_str(x.shape()), " (a layer between the token input and the pool changed the sequence length)");
  const Tensor m = mask.defined() ? mask.to(x.dtype()) : Tensor::ones({n, t}, x.dtype(), x.device());
  const Tensor m3 = m.unsqueeze(2);                                       // [N, T, 1]
  const Tensor any = clamp(sum(m, {1}, /*keepdim=*/true), 0.0, 1.0);      // [N, 1]: 0 for an empty row
  if (mode == "mean") return div(sum(mul(x, m3), {1}), clamp(sum(m, {1}, true), 1.0, INFINITY));
  if (mode == "max") {
    const Tensor valid = ne(m3, scalar_like(0.0, m3));  // bool [N, T, 1]
    return mul(amax(where(valid, x, scalar_like(-FLT_MAX, x)), {1}), any);
  }
  if (mode == "last") {  // one-hot at the last valid step: m[t] - m[t + 1] for right padding
    const Tensor next = cat({m.slice(1, 1, t), Tensor::zeros({n, 1}, m.dtype(), m.device())}, 1);
    return sum(mul(x, sub(m, next).unsqueeze(2)), {1});
  }
  if (mode == "first") return sum(mul(x.slice(1, 0, 1), m3.slice(1, 0, 1)), {1});
  throw ValueError("SequencePool: unknown mode '" + mode + "' (mean, max, last or first)");
}

}  // namespace kiln::graph
