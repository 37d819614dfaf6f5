// The kiln.fused ops that the inference passes (rewrite.h) put in place of elementwise chains,
// each one engine kernel over its input: SiLU(x) = x * sigmoid(x) (Elfwing et al. 2018, torch's
// silu) and Gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (Hendrycks & Gimpel 2016, exact).
#include "engine/core/ops.h"
#include "engine/onnx/op_context.h"
#include "engine/onnx/rewrite.h"

namespace kiln::onnx {

void register_fused_ops(OpTable& t) {
  const std::string d = std::string(kFusedDomain) + ".";
  t[d + "SiLU"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    if (!is_floating(x.dtype())) c.fail("SiLU needs a floating-point input, got " + std::string(dtype_name(x.dtype())));
    return {silu(x)};
  };
  t[d + "Gelu"] = [](OpContext& c) -> std::vector<Tensor> {
    const Tensor& x = c.input(0);
    if (!is_floating(x.dtype())) c.fail("Gelu needs a floating-point input, got " + std::string(dtype_name(x.dtype())));
    return {gelu(x, "none")};
  };
}

}  // namespace kiln::onnx
