// VulkanBackend: matmul and conv2d forward/backward, all through shaders/gemm.comp
// (conv2d as an implicit GEMM), in f32, f16 or bf16 (16-bit operands accumulate in f32);
// dense f32 matmul through shaders/gemm_fast.glsl; f16 matmul on tensor cores through
// shaders/gemm_coop.comp where the device has cooperative matrices.
//
// Note [NV cooperative matrices]: Debian 12's Vulkan headers (1.3.239) and glslang (11.13)
// predate VK_KHR_cooperative_matrix (1.3.255) and GL_KHR_cooperative_matrix, and Kiln
// vendors no headers, so gemm_coop.comp is written against GL_NV_cooperative_matrix and the
// device's shapes come from vkGetPhysicalDeviceCooperativeMatrixPropertiesNV. It is the same
// tensor-core path on NVIDIA GPUs (which list both extensions); a device with only the KHR
// extension (AMD, Intel) runs f16 matmul on the tiled shader.
#include <algorithm>
#include <cstdio>
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
// Specialization of shaders/gemm.comp: operands of `dt`, C of `out` (f32 partial sums).
std::vector<int32_t> spec(int mode, const Tile& t, DType dt, DType out) {
  return {t.threads(), mode, t.bm, t.bn, t.bk, t.tm, t.tn, static_cast<int32_t>(dt), static_cast<int32_t>(out)};
}

uint32_t groups(int64_t n, int tile) { return static_cast<uint32_t>((n + tile - 1) / tile); }

// Every operand has the first one's dtype (f32, f16 or bf16: supports() checked it).
void check_same(const char* op, std::initializer_list<const TensorArg*> ts) {
  const DType dt = (*ts.begin())->dtype;
  for (const TensorArg* t : ts)
    KILN_CHECK(t->dtype == dt, DTypeError, op, ": operands mix ", dtype_name(dt), " and ", dtype_name(t->dtype));
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

bool VulkanBackend::use_coop(DType dt) const {
  static const bool allow_f32 = [] {
    const char* e = std::getenv("KILN_ALLOW_F16_MATMUL");
    return e && std::string(e) == "1";
  }();
  return ctx_->caps().coop_m > 0 && !coop_failed_ && (dt == DType::f16 || (dt == DType::f32 && allow_f32));
}

void VulkanBackend::matmul(const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  require(OpId::matmul, a.dtype, "matmul");
  check_same("matmul", {&out, &a, &b});
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
  // Tensor cores (shaders/gemm_coop.comp): f16 operands, or f32 ones rounded to f16 when
  // KILN_ALLOW_F16_MATMUL=1 (reduced precision, as PyTorch's allow_tf32 for f32 matmul).
  if (use_coop(a.dtype) && M * N >= 4096 && K >= 16) {
    const bool h = a.dtype == DType::f16;
    bool va = h && a.strides[r - 1] == 1 && a.strides[r - 2] % 8 == 0 && p.ptr[1] % 16 == 0;
    bool vb = h && b.strides[r - 1] == 1 && b.strides[r - 2] % 8 == 0 && p.ptr[2] % 16 == 0;
    for (int d = 0; d < c.ndim; ++d) {
      va = va && c.stride[0][d] % 8 == 0;
      vb = vb && c.stride[1][d] % 8 == 0;
    }
    p.i[26] = va ? 1 : 0;
    p.i[27] = vb ? 1 : 0;
    const DeviceCaps& caps = ctx_->caps();
    try {
      ctx_->dispatch(ShaderId::gemm_coop,
                     {256, static_cast<int32_t>(caps.coop_m), static_cast<int32_t>(caps.coop_n),
                      static_cast<int32_t>(caps.coop_k), static_cast<int32_t>(a.dtype), static_cast<int32_t>(out.dtype)},
                     p, groups(N, 128), groups(M, 128), static_cast<uint32_t>(nbatch));
      return;
    } catch (const DeviceError& e) {  // the pipeline did not build: say so once, use the tiled shader
      coop_failed_ = true;
      std::fprintf(stderr, "kiln: %s: cooperative-matrix matmul unavailable (%s); using the tiled shader\n",
                   device().str().c_str(), e.what());
    }
  }
  // The fast kernel (shaders/gemm_fast.glsl): dense row-major C, A and B row-major or
  // transposed, contiguous dims multiples of 4, 16-byte aligned bases and batch strides.
  const bool f32 = a.dtype == DType::f32;
  const bool ta = a.strides[r - 2] == 1 && a.strides[r - 1] == M && M % 4 == 0;
  const bool na = a.strides[r - 1] == 1 && a.strides[r - 2] == K && K % 4 == 0;
  const bool tb = b.strides[r - 2] == 1 && b.strides[r - 1] == K && K % 4 == 0;
  const bool nb = b.strides[r - 1] == 1 && b.strides[r - 2] == N && N % 4 == 0;
  bool fast = f32 && (ta || na) && (tb || nb) && out.strides[r - 1] == 1 && out.strides[r - 2] == N && N % 4 == 0 &&
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
  ctx_->dispatch(ShaderId::gemm, spec(0, t, a.dtype, out.dtype), p, groups(N, t.bn), groups(M, t.bm), static_cast<uint32_t>(nbatch));
}

void VulkanBackend::conv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                                   const TensorArg& bias, const Conv2dParams& cp) {
  require(OpId::conv2d_forward, in.dtype, "conv2d");
  check_same("conv2d", {&out, &in, &weight});
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
    check_same("conv2d", {&in, &bias});
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
  ctx_->dispatch(ShaderId::gemm, spec(1, t, in.dtype, out.dtype), p, groups(N, t.bn), groups(M, t.bm), static_cast<uint32_t>(cp.groups));
}

void VulkanBackend::conv2d_backward_input(const TensorArg& grad_in, const TensorArg& grad_out,
                                          const TensorArg& weight, const Conv2dParams& cp) {
  require(OpId::conv2d_backward_input, grad_out.dtype, "conv2d_backward_input");
  check_same("conv2d_backward_input", {&grad_out, &grad_in, &weight});
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
  ctx_->dispatch(ShaderId::gemm, spec(2, t, grad_out.dtype, grad_in.dtype), p, groups(N, t.bn), groups(M, t.bm), static_cast<uint32_t>(cp.groups));
}

void VulkanBackend::conv2d_backward_weight(const TensorArg& grad_weight, const TensorArg& grad_bias,
                                           const TensorArg& grad_out, const TensorArg& in, const Conv2dParams& cp) {
  const char* name = "conv2d_backward_weight";
  require(OpId::conv2d_backward_weight, grad_out.dtype, name);
  check_same(name, {&grad_out, &grad_weight, &in});
  const DType dt = grad_out.dtype;
  check_contiguous(name, {&grad_weight, &grad_out, &in});
  ConvGeom g = geometry(name, in, grad_weight, grad_out, cp);
  if (grad_bias.data) {  // sum of grad_out over N, H, W
    check_same(name, {&grad_out, &grad_bias});
    KILN_CHECK(grad_bias.numel() == g.co && grad_bias.is_contiguous(), ShapeError, name, ": grad_bias ",
               shape_str(grad_bias.shape), " must be contiguous with ", g.co, " elements");
    TensorArg src{grad_out.data, grad_out.offset, dt, {g.n, g.co, g.ho * g.wo}, {g.co * g.ho * g.wo, g.ho * g.wo, 1}};
    TensorArg dst{grad_bias.data, grad_bias.offset, dt, {1, g.co, 1}, {g.co, 1, 1}};
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
  ctx_->dispatch(ShaderId::gemm, spec(3, t, dt, partial ? DType::f32 : dt), p, groups(N, t.bn), groups(M, t.bm),
                 static_cast<uint32_t>(cp.groups * splits));
  if (partial) {
    const int64_t total = g.co * N;
    TensorArg src{partial, 0, DType::f32, {splits, total}, {total, 1}};
    TensorArg dst{grad_weight.data, grad_weight.offset, dt, {1, total}, {total, 1}};
    reduce_into(ReduceOp::sum, dst, src, 0);
    ctx_->deallocate(partial);  // reuse is ordered after the reduction (one queue)
  }
}

}  // namespace kiln::vk
