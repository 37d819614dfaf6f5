// VulkanBackend: matmul and conv2d forward/backward, all through shaders/gemm.comp
// (conv2d as an implicit GEMM).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "backends/vulkan/vk_backend.h"
#include "engine/core/error.h"

namespace kiln::vk {

namespace {
struct Tile {
  int bm, bn, bk, tm, tn;
  int threads() const { return (bm / tm) * (bn / tn); }
};
// Large products on a GPU take 128x128 tiles (8x8 per thread); others 64x64 (4x4).
Tile pick_tile(const Context& ctx, int64_t m, int64_t n) {
  const bool gpu = ctx.caps().type != VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (gpu && m >= 512 && n >= 512) return {128, 128, 8, 8, 8};
  return {64, 64, 16, 4, 4};
}
std::vector<int32_t> spec(int mode, const Tile& t) { return {t.threads(), mode, t.bm, t.bn, t.bk, t.tm, t.tn}; }

uint32_t groups(int64_t n, int tile) { return static_cast<uint32_t>((n + tile - 1) / tile); }

void check_f32(const char* op, std::initializer_list<const TensorArg*> ts) {
  for (const TensorArg* t : ts)
    KILN_CHECK(t->dtype == DType::f32, DTypeError, op, ": ", dtype_name(t->dtype), " is not supported (f32 only)");
}
void check_contiguous(const char* op, std::initializer_list<const TensorArg*> ts) {
  for (const TensorArg* t : ts)
    KILN_CHECK(t->is_contiguous(), ValueError, op, ": tensors must be contiguous (shape ", shape_str(t->shape), ")");
}

struct ConvGeom {
  int64_t n, ci, h, w, co, ho, wo, kh, kw;
};
ConvGeom geometry(const char* op, const TensorArg& in, const TensorArg& weight, const TensorArg& out,
                  const Conv2dParams& p) {
  KILN_CHECK(in.shape.size() == 4 && weight.shape.size() == 4 && out.shape.size() == 4, ShapeError, op,
             ": expects 4-d input, weight and output, got ", shape_str(in.shape), ", ", shape_str(weight.shape), ", ",
             shape_str(out.shape));
  ConvGeom g{in.shape[0], in.shape[1], in.shape[2], in.shape[3], weight.shape[0], out.shape[2], out.shape[3],
             weight.shape[2], weight.shape[3]};
  KILN_CHECK(p.groups >= 1 && g.ci % p.groups == 0 && g.co % p.groups == 0 && weight.shape[1] * p.groups == g.ci &&
                 out.shape[1] == g.co && out.shape[0] == g.n,
             ShapeError, op, ": input ", shape_str(in.shape), ", weight ", shape_str(weight.shape), ", output ",
             shape_str(out.shape), " and groups ", p.groups, " do not fit");
  return g;
}
void conv_params(Params& q, const ConvGeom& g, const Conv2dParams& p) {
  const int64_t v[16] = {g.n, g.ci, g.h, g.w, g.co, g.ho, g.wo, g.kh, g.kw, p.stride[0], p.stride[1],
                         p.padding[0], p.padding[1], p.dilation[0], p.dilation[1], p.groups};
  for (int i = 0; i < 16; ++i) q.i[10 + i] = static_cast<int32_t>(v[i]);
}
}  // namespace

void VulkanBackend::matmul(const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  require(OpId::matmul, a.dtype, "matmul");
  check_f32("matmul", {&out, &a, &b});
  const size_t r = out.shape.size();
  KILN_CHECK(r >= 2 && a.shape.size() == r && b.shape.size() == r, ShapeError, "matmul: shapes ", shape_str(a.shape),
             " @ ", shape_str(b.shape), " -> ", shape_str(out.shape), " must have one rank >= 2");
  const int64_t M = out.shape[r - 2], N = out.shape[r - 1], K = a.shape[r - 1];
  KILN_CHECK(a.shape[r - 2] == M && b.shape[r - 2] == K && b.shape[r - 1] == N, ShapeError, "matmul: shapes ",
             shape_str(a.shape), " @ ", shape_str(b.shape), " -> ", shape_str(out.shape), " do not fit");
  if (out.numel() == 0) return;
  ctx_->set_op("matmul", out.shape);
  for (const TensorArg* t : {&out, &a, &b}) check_index_range(*ctx_, "matmul", *t);
  if (K == 0) return fill(out, 0.0);
  Shape batch(out.shape.begin(), out.shape.end() - 2);
  Strides sa(a.strides.begin(), a.strides.end() - 2), sb(b.strides.begin(), b.strides.end() - 2),
      sc(out.strides.begin(), out.strides.end() - 2);
  Collapsed c = collapse("matmul", batch, {&sa, &sb, &sc});
  KILN_CHECK(c.ndim <= 4, ShapeError, "matmul: batch dims of ", shape_str(out.shape), " do not merge into 4");
  const int64_t nbatch = numel(batch);
  KILN_CHECK(nbatch <= 65535, ShapeError, "matmul: ", nbatch, " batches exceed one dispatch (65535)");
  Params p;
  p.ptr[0] = address(out);
  p.ptr[1] = address(a);
  p.ptr[2] = address(b);
  const int64_t v[9] = {M, N, K, a.strides[r - 2], a.strides[r - 1], b.strides[r - 2], b.strides[r - 1],
                        out.strides[r - 2], out.strides[r - 1]};
  for (int i = 0; i < 9; ++i) p.i[i] = static_cast<int32_t>(v[i]);
  p.i[9] = c.ndim;
  for (int d = 0; d < c.ndim; ++d) {
    p.i[10 + d] = static_cast<int32_t>(c.size[d]);
    p.i[14 + d] = static_cast<int32_t>(c.stride[0][d]);
    p.i[18 + d] = static_cast<int32_t>(c.stride[1][d]);
    p.i[22 + d] = static_cast<int32_t>(c.stride[2][d]);
  }
  // The fast kernel (shaders/gemm_fast.glsl): dense row-major C, A and B row-major or
  // transposed, contiguous dims multiples of 4, 16-byte aligned bases and batch strides.
  const bool ta = a.strides[r - 2] == 1 && a.strides[r - 1] == M && M % 4 == 0;
  const bool na = a.strides[r - 1] == 1 && a.strides[r - 2] == K && K % 4 == 0;
  const bool tb = b.strides[r - 2] == 1 && b.strides[r - 1] == K && K % 4 == 0;
  const bool nb = b.strides[r - 1] == 1 && b.strides[r - 2] == N && N % 4 == 0;
  bool fast = (ta || na) && (tb || nb) && out.strides[r - 1] == 1 && out.strides[r - 2] == N && N % 4 == 0 &&
              M * N >= 4096 && p.ptr[0] % 16 == 0 && p.ptr[1] % 16 == 0 && p.ptr[2] % 16 == 0;
  for (int d = 0; d < c.ndim && fast; ++d)
    fast = c.stride[0][d] % 4 == 0 && c.stride[1][d] % 4 == 0 && c.stride[2][d] % 4 == 0;
  if (fast) {
    // 16-deep K slices: 31 TFLOP/s at 4096^3 on an H200, 8-deep: 26 (tests/bench/vulkan_vs_torch.sh);
    // KILN_VK_GEMM_BK=8 picks the shallower variant (for tuning on other GPUs).
    static const bool deep = [] {
      const char* e = std::getenv("KILN_VK_GEMM_BK");
      return !(e && std::string(e) == "8");
    }();
    ctx_->dispatch(deep ? ShaderId::gemm_fast16 : ShaderId::gemm_fast, {256, ta ? 1 : 0, tb ? 1 : 0}, p,
                   groups(N, 128), groups(M, 128), static_cast<uint32_t>(nbatch));
    return;
  }
  Tile t = pick_tile(*ctx_, M, N);
  ctx_->dispatch(ShaderId::gemm, spec(0, t), p, groups(N, t.bn), groups(M, t.bm), static_cast<uint32_t>(nbatch));
}

void VulkanBackend::conv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                                   const TensorArg& bias, const Conv2dParams& cp) {
  require(OpId::conv2d_forward, in.dtype, "conv2d");
  check_f32("conv2d", {&out, &in, &weight});
  check_contiguous("conv2d", {&out, &in, &weight});
  ConvGeom g = geometry("conv2d", in, weight, out, cp);
  if (out.numel() == 0) return;
  ctx_->set_op("conv2d", in.shape);
  for (const TensorArg* t : {&out, &in, &weight}) check_index_range(*ctx_, "conv2d", *t);
  Params p;
  p.ptr[0] = address(out);
  p.ptr[1] = address(weight);
  p.ptr[2] = address(in);
  if (bias.data) {
    check_f32("conv2d", {&bias});
    KILN_CHECK(bias.numel() == g.co && bias.is_contiguous(), ShapeError, "conv2d: bias ", shape_str(bias.shape),
               " must be contiguous with ", g.co, " elements");
    p.ptr[3] = address(bias);
    p.i[26] = 1;
  }
  const int64_t M = g.co / cp.groups, N = g.n * g.ho * g.wo, K = g.ci / cp.groups * g.kh * g.kw;
  p.i[0] = static_cast<int32_t>(M);
  p.i[1] = static_cast<int32_t>(N);
  p.i[2] = static_cast<int32_t>(K);
  conv_params(p, g, cp);
  Tile t = pick_tile(*ctx_, M, N);
  ctx_->dispatch(ShaderId::gemm, spec(1, t), p, groups(N, t.bn), groups(M, t.bm), static_cast<uint32_t>(cp.groups));
}

void VulkanBackend::conv2d_backward_input(const TensorArg& grad_in, const TensorArg& grad_out,
                                          const TensorArg& weight, const Conv2dParams& cp) {
  require(OpId::conv2d_backward_input, grad_out.dtype, "conv2d_backward_input");
  check_f32("conv2d_backward_input", {&grad_in, &grad_out, &weight});
  check_contiguous("conv2d_backward_input", {&grad_in, &grad_out, &weight});
  ConvGeom g = geometry("conv2d_backward_input", grad_in, weight, grad_out, cp);
  if (grad_in.numel() == 0) return;
  ctx_->set_op("conv2d_backward_input", grad_in.shape);
  if (grad_out.numel() == 0) return fill(grad_in, 0.0);
  Params p;
  p.ptr[0] = address(grad_in);
  p.ptr[1] = address(weight);
  p.ptr[2] = address(grad_out);
  const int64_t M = g.ci / cp.groups, N = g.n * g.h * g.w, K = g.co / cp.groups * g.kh * g.kw;
  p.i[0] = static_cast<int32_t>(M);
  p.i[1] = static_cast<int32_t>(N);
  p.i[2] = static_cast<int32_t>(K);
  conv_params(p, g, cp);
  Tile t = pick_tile(*ctx_, M, N);
  ctx_->dispatch(ShaderId::gemm, spec(2, t), p, groups(N, t.bn), groups(M, t.bm), static_cast<uint32_t>(cp.groups));
}

void VulkanBackend::conv2d_backward_weight(const TensorArg& grad_weight, const TensorArg& grad_bias,
                                           const TensorArg& grad_out, const TensorArg& in, const Conv2dParams& cp) {
  const char* name = "conv2d_backward_weight";
  require(OpId::conv2d_backward_weight, grad_out.dtype, name);
  check_f32(name, {&grad_weight, &grad_out, &in});
  check_contiguous(name, {&grad_weight, &grad_out, &in});
  ConvGeom g = geometry(name, in, grad_weight, grad_out, cp);
  if (grad_bias.data) {  // sum of grad_out over N, H, W
    check_f32(name, {&grad_bias});
    KILN_CHECK(grad_bias.numel() == g.co && grad_bias.is_contiguous(), ShapeError, name, ": grad_bias ",
               shape_str(grad_bias.shape), " must be contiguous with ", g.co, " elements");
    TensorArg src{grad_out.data, grad_out.offset, DType::f32, {g.n, g.co, g.ho * g.wo}, {g.co * g.ho * g.wo, g.ho * g.wo, 1}};
    TensorArg dst{grad_bias.data, grad_bias.offset, DType::f32, {1, g.co, 1}, {g.co, 1, 1}};
    if (grad_out.numel() == 0) fill(dst, 0.0);
    else reduce_into(ReduceOp::sum, dst, src, 0);
  }
  if (grad_weight.numel() == 0) return;
  ctx_->set_op(name, grad_weight.shape);
  if (grad_out.numel() == 0) return fill(grad_weight, 0.0);
  const int64_t M = g.co / cp.groups, N = g.ci / cp.groups * g.kh * g.kw, K = g.n * g.ho * g.wo;
  // Split K (images x output positions, usually long) so that enough work groups run.
  Tile t = pick_tile(*ctx_, M, N);
  const int64_t tiles = groups(M, t.bm) * groups(N, t.bn) * cp.groups;
  const int64_t want = ctx_->caps().type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 16 : 512;
  int64_t splits = std::clamp<int64_t>(want / tiles, 1, std::max<int64_t>(1, K / 256));
  splits = std::min<int64_t>(splits, 256);
  const int64_t k_per = ((K + splits - 1) / splits + t.bk - 1) / t.bk * t.bk;
  splits = (K + k_per - 1) / k_per;
  Allocation* partial = nullptr;
  Params p;
  p.ptr[0] = address(grad_weight);
  if (splits > 1) {
    partial = ctx_->allocate(static_cast<size_t>(splits * g.co * N) * 4);
    p.ptr[0] = partial->address;
  }
  p.ptr[1] = address(grad_out);
  p.ptr[2] = address(in);
  p.i[0] = static_cast<int32_t>(M);
  p.i[1] = static_cast<int32_t>(N);
  p.i[2] = static_cast<int32_t>(K);
  conv_params(p, g, cp);
  p.i[27] = static_cast<int32_t>(k_per);
  p.i[28] = static_cast<int32_t>(splits);
  ctx_->dispatch(ShaderId::gemm, spec(3, t), p, groups(N, t.bn), groups(M, t.bm),
                 static_cast<uint32_t>(cp.groups * splits));
  if (partial) {
    const int64_t total = g.co * N;
    TensorArg src{partial, 0, DType::f32, {splits, total}, {total, 1}};
    TensorArg dst{grad_weight.data, grad_weight.offset, DType::f32, {1, total}, {total, 1}};
    reduce_into(ReduceOp::sum, dst, src, 0);
    ctx_->deallocate(partial);  // reuse is ordered after the reduction (one queue)
  }
}

}  // namespace kiln::vk
