// conv2d without cuDNN: im2col / col2im kernels and batched GEMMs through
// CudaBackend::matmul (cuBLAS). The batch goes in chunks whose column buffer stays under
// 256 MiB; each chunk is one strided-batched GEMM per group:
//   forward          out[n, g]  = W[g] @ col[n, g]          col [n, C*kH*kW, Ho*Wo]
//   backward input   gcol[n, g] = W[g]^T @ gy[n, g], then col2im (a gather: no atomics)
//   backward weight  gW[g] = sum_n gy[n, g] @ col[n, g]^T
#include <algorithm>

#include "backends/cuda/common.cuh"
#include "backends/cuda/conv.h"

namespace kiln::cuda {
namespace {

constexpr size_t kColBytes = size_t{256} << 20;

template <class T>
__global__ void im2col_kernel(int64_t total, ConvGeom g, const T* __restrict__ in, T* __restrict__ col) {
  const int64_t HoWo = g.Ho * g.Wo, CKK = g.C * g.kH * g.kW;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pos = i % HoWo, row = i / HoWo % CKK, n = i / (HoWo * CKK);
    const int64_t ow = pos % g.Wo, oh = pos / g.Wo;
    const int64_t kj = row % g.kW, ki = row / g.kW % g.kH, c = row / (g.kW * g.kH);
    const int64_t h = oh * g.p.stride[0] - g.p.padding[0] + ki * g.p.dilation[0];
    const int64_t w = ow * g.p.stride[1] - g.p.padding[1] + kj * g.p.dilation[1];
    col[i] = (h >= 0 && h < g.H && w >= 0 && w < g.W) ? in[((n * g.C + c) * g.H + h) * g.W + w] : T(0.0f);
  }
}

template <class T>
__global__ void col2im_kernel(int64_t total, ConvGeom g, const T* __restrict__ col, T* __restrict__ gx) {
  using A = acc_t<T>;
  const int64_t HoWo = g.Ho * g.Wo, CKK = g.C * g.kH * g.kW;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t w = i % g.W, h = i / g.W % g.H, c = i / (g.W * g.H) % g.C, n = i / (g.W * g.H * g.C);
    A sum = 0;
    for (int64_t ki = 0; ki < g.kH; ++ki) {
      const int64_t hh = h + g.p.padding[0] - ki * g.p.dilation[0];
      if (hh < 0 || hh % g.p.stride[0]) continue;
      const int64_t oh = hh / g.p.stride[0];
      if (oh >= g.Ho) continue;
      for (int64_t kj = 0; kj < g.kW; ++kj) {
        const int64_t ww = w + g.p.padding[1] - kj * g.p.dilation[1];
        if (ww < 0 || ww % g.p.stride[1]) continue;
        const int64_t ow = ww / g.p.stride[1];
        if (ow >= g.Wo) continue;
        const int64_t row = (c * g.kH + ki) * g.kW + kj;
        sum += static_cast<A>(col[(n * CKK + row) * HoWo + oh * g.Wo + ow]);
      }
    }
    gx[i] = convert<T>(sum);
  }
}

int64_t chunk_size(const ConvGeom& g, DType t) {
  const size_t per_sample = static_cast<size_t>(g.C * g.kH * g.kW * g.Ho * g.Wo) * dtype_size(t);
  return std::max<int64_t>(1, std::min<int64_t>(g.N, static_cast<int64_t>(kColBytes / std::max<size_t>(per_sample, 1))));
}

void im2col(CudaBackend& be, const ConvGeom& g, const TensorArg& in, int64_t n0, int64_t nb, void* col) {
  const int64_t total = nb * g.C * g.kH * g.kW * g.Ho * g.Wo;
  if (!total) return;
  KILN_CUDA_DISPATCH_FLOAT(in.dtype, "conv2d im2col", {
    im2col_kernel<T><<<grid_for(total), kThreads, 0, be.stream()>>>(total, g, ptr<const T>(in) + n0 * g.C * g.H * g.W,
                                                                     static_cast<T*>(col));
  });
  check_launch("conv2d im2col", in.shape);
}

// A [b0, b1, b2] view of t's buffer at element offset `off` with the given strides.
TensorArg view3(const TensorArg& t, int64_t off, Shape shape, Strides strides) {
  return TensorArg{t.data, t.offset + off, t.dtype, std::move(shape), std::move(strides)};
}

}  // namespace

void im2col_conv_forward(CudaBackend& be, const ConvGeom& g, const TensorArg& out, const TensorArg& in,
                         const TensorArg& w, const TensorArg& bias) {
  const int64_t G = g.p.groups, Kg = g.K / G, CKK = g.C * g.kH * g.kW, CKKg = CKK / G, HoWo = g.Ho * g.Wo;
  const int64_t per = chunk_size(g, in.dtype);
  Scratch col(be, static_cast<size_t>(per * CKK * HoWo) * dtype_size(in.dtype));
  const TensorArg colt{col.get(), 0, in.dtype, {per * CKK * HoWo}, {1}};
  for (int64_t n0 = 0; n0 < g.N; n0 += per) {
    const int64_t nb = std::min(per, g.N - n0);
    im2col(be, g, in, n0, nb, col.get());
    for (int64_t grp = 0; grp < G; ++grp) {
      TensorArg o = view3(out, n0 * g.K * HoWo + grp * Kg * HoWo, {nb, Kg, HoWo}, {g.K * HoWo, HoWo, 1});
      TensorArg wv = view3(w, grp * Kg * CKKg, {nb, Kg, CKKg}, {0, CKKg, 1});
      TensorArg cv = view3(colt, grp * CKKg * HoWo, {nb, CKKg, HoWo}, {CKK * HoWo, HoWo, 1});
      be.matmul(o, wv, cv);
    }
  }
  if (bias.data) {
    const Strides bs{0, bias.strides[0], 0, 0};
    KILN_CUDA_DISPATCH_FLOAT(out.dtype, "conv2d bias", {
      T* o = ptr<T>(out);
      const T* b = ptr<const T>(bias);
      launch_elementwise<2>("conv2d bias", be.stream(), out.shape, {&out.strides, &bs},
                            [=] __device__(const int64_t(&off)[2]) {
                              o[off[0]] = convert<T>(static_cast<acc_t<T>>(o[off[0]]) + static_cast<acc_t<T>>(b[off[1]]));
                            });
    });
  }
}

void im2col_conv_backward_input(CudaBackend& be, const ConvGeom& g, const TensorArg& gx, const TensorArg& gy,
                                const TensorArg& w) {
  const int64_t G = g.p.groups, Kg = g.K / G, CKK = g.C * g.kH * g.kW, CKKg = CKK / G, HoWo = g.Ho * g.Wo;
  const int64_t per = chunk_size(g, gx.dtype);
  Scratch col(be, static_cast<size_t>(per * CKK * HoWo) * dtype_size(gx.dtype));
  const TensorArg colt{col.get(), 0, gx.dtype, {per * CKK * HoWo}, {1}};
  for (int64_t n0 = 0; n0 < g.N; n0 += per) {
    const int64_t nb = std::min(per, g.N - n0);
    for (int64_t grp = 0; grp < G; ++grp) {
      TensorArg cv = view3(colt, grp * CKKg * HoWo, {nb, CKKg, HoWo}, {CKK * HoWo, HoWo, 1});
      TensorArg wt = view3(w, grp * Kg * CKKg, {nb, CKKg, Kg}, {0, 1, CKKg});
      TensorArg yv = view3(gy, n0 * g.K * HoWo + grp * Kg * HoWo, {nb, Kg, HoWo}, {g.K * HoWo, HoWo, 1});
      be.matmul(cv, wt, yv);
    }
    const int64_t total = nb * g.C * g.H * g.W;
    KILN_CUDA_DISPATCH_FLOAT(gx.dtype, "conv2d col2im", {
      col2im_kernel<T><<<grid_for(total), kThreads, 0, be.stream()>>>(total, g, static_cast<const T*>(col.get()),
                                                                       ptr<T>(gx) + n0 * g.C * g.H * g.W);
    });
    check_launch("conv2d col2im", gx.shape);
  }
}

void im2col_conv_backward_weight(CudaBackend& be, const ConvGeom& g, const TensorArg& gw, const TensorArg& gy,
                                 const TensorArg& in) {
  const int64_t G = g.p.groups, Kg = g.K / G, CKK = g.C * g.kH * g.kW, CKKg = CKK / G, HoWo = g.Ho * g.Wo;
  const int64_t per = chunk_size(g, in.dtype);
  const size_t es = dtype_size(in.dtype);
  Scratch col(be, static_cast<size_t>(per * CKK * HoWo) * es);
  Scratch prod(be, static_cast<size_t>(per * Kg * CKKg) * es);
  Scratch part(be, static_cast<size_t>(Kg * CKKg) * es);
  const TensorArg colt{col.get(), 0, in.dtype, {per * CKK * HoWo}, {1}};
  for (int64_t n0 = 0; n0 < g.N; n0 += per) {
    const int64_t nb = std::min(per, g.N - n0);
    im2col(be, g, in, n0, nb, col.get());
    for (int64_t grp = 0; grp < G; ++grp) {
      TensorArg pv = scratch_arg(prod, in.dtype, {nb, Kg, CKKg});
      TensorArg yv = view3(gy, n0 * g.K * HoWo + grp * Kg * HoWo, {nb, Kg, HoWo}, {g.K * HoWo, HoWo, 1});
      TensorArg ct = view3(colt, grp * CKKg * HoWo, {nb, HoWo, CKKg}, {CKK * HoWo, 1, HoWo});
      be.matmul(pv, yv, ct);
      TensorArg wv = view3(gw, grp * Kg * CKKg, {1, Kg, CKKg}, {0, CKKg, 1});
      if (n0 == 0) {
        be.reduce(ReduceOp::sum, wv, pv, 0);
      } else {
        TensorArg partv = scratch_arg(part, in.dtype, {1, Kg, CKKg});
        be.reduce(ReduceOp::sum, partv, pv, 0);
        be.binary(BinaryOp::add, wv, wv, partv);
      }
    }
  }
}

#if !defined(KILN_HAVE_CUDNN)
void cudnn_conv_forward(CudaBackend& be, const ConvGeom&, const TensorArg&, const TensorArg&, const TensorArg&,
                        const TensorArg&) {
  throw DeviceError(be.name() + ": conv2d: this build has no cuDNN");
}
void cudnn_conv_backward_input(CudaBackend& be, const ConvGeom&, const TensorArg&, const TensorArg&, const TensorArg&) {
  throw DeviceError(be.name() + ": conv2d: this build has no cuDNN");
}
void cudnn_conv_backward_weight(CudaBackend& be, const ConvGeom&, const TensorArg&, const TensorArg&,
                                const TensorArg&) {
  throw DeviceError(be.name() + ": conv2d: this build has no cuDNN");
}
struct ConvState {};
void ConvStateDeleter::operator()(ConvState* s) const { delete s; }
#endif

}  // namespace kiln::cuda
