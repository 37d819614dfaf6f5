// VulkanBackend: 2-d pooling (shaders/pool.comp) and index ops (shaders/index.comp).
#include "backends/vulkan/vk_backend.h"
#include "engine/core/error.h"

namespace kiln::vk {

namespace {
void check_pool(const char* op, const TensorArg& out, const TensorArg& in) {
  KILN_CHECK(in.shape.size() == 4 && out.shape.size() == 4 && in.shape[0] == out.shape[0] &&
                 in.shape[1] == out.shape[1],
             ShapeError, op, ": expects NCHW input and output with the same N, C; got ", shape_str(in.shape), " and ",
             shape_str(out.shape));
  KILN_CHECK(in.is_contiguous() && out.is_contiguous(), ValueError, op, ": tensors must be contiguous (shape ",
             shape_str(in.shape), ")");
  KILN_CHECK(in.dtype == out.dtype, DTypeError, op, ": dtypes ", dtype_name(in.dtype), " and ",
             dtype_name(out.dtype), " differ");
}

void pool_params(Params& q, const TensorArg& big, const TensorArg& small, const Pool2dParams* p, int64_t threads) {
  q.i[0] = static_cast<int32_t>(big.shape[0] * big.shape[1]);
  q.i[1] = static_cast<int32_t>(big.shape[2]);
  q.i[2] = static_cast<int32_t>(big.shape[3]);
  q.i[3] = static_cast<int32_t>(small.shape[2]);
  q.i[4] = static_cast<int32_t>(small.shape[3]);
  if (p) {
    const int64_t v[9] = {p->kernel[0], p->kernel[1], p->stride[0], p->stride[1], p->padding[0], p->padding[1],
                          p->dilation[0], p->dilation[1], p->count_include_pad ? 1 : 0};
    for (int i = 0; i < 9; ++i) q.i[5 + i] = static_cast<int32_t>(v[i]);
    KILN_CHECK(p->kernel[0] > 0 && p->kernel[1] > 0 && p->stride[0] > 0 && p->stride[1] > 0 && p->dilation[0] > 0 &&
                   p->dilation[1] > 0,
               ValueError, "pool2d: kernel, stride and dilation must be positive");
  }
  q.i[14] = static_cast<int32_t>(threads);
}
}  // namespace

void VulkanBackend::max_pool2d_forward(const TensorArg& out, const TensorArg& indices, const TensorArg& in,
                                       const Pool2dParams& pp) {
  require(OpId::max_pool2d_forward, in.dtype, "max_pool2d");
  check_pool("max_pool2d", out, in);
  KILN_CHECK(indices.dtype == DType::i64 && indices.shape == out.shape && indices.is_contiguous(), ShapeError,
             "max_pool2d: indices must be contiguous i64 of shape ", shape_str(out.shape));
  if (out.numel() == 0) return;
  ctx_->set_op("max_pool2d", in.shape);
  check_index_range(*ctx_, "max_pool2d", in);
  Params p;
  p.ptr[0] = address(out);
  p.ptr[1] = address(indices);
  p.ptr[2] = address(in);
  pool_params(p, in, out, &pp, out.numel());
  ctx_->dispatch_1d(ShaderId::pool, {256, 0, static_cast<int>(in.dtype)}, p, static_cast<uint64_t>(out.numel()));
}

void VulkanBackend::max_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out,
                                        const TensorArg& indices) {
  require(OpId::max_pool2d_backward, grad_out.dtype, "max_pool2d_backward");
  check_pool("max_pool2d_backward", grad_out, grad_in);
  KILN_CHECK(indices.dtype == DType::i64 && indices.shape == grad_out.shape && indices.is_contiguous(), ShapeError,
             "max_pool2d_backward: indices must be contiguous i64 of shape ", shape_str(grad_out.shape));
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0) return fill(grad_in, 0.0);
  ctx_->set_op("max_pool2d_backward", grad_in.shape);
  check_index_range(*ctx_, "max_pool2d_backward", grad_in);
  // Windows may overlap, so gradients are added atomically, in f32: 16-bit grad_in goes
  // through an f32 buffer converted at the end.
  Allocation* acc = nullptr;
  TensorArg sum = grad_in;
  if (grad_in.dtype != DType::f32) {
    acc = ctx_->allocate(static_cast<size_t>(grad_in.numel()) * 4);
    sum = TensorArg{acc, 0, DType::f32, grad_in.shape, contiguous_strides(grad_in.shape)};
  }
  fill(sum, 0.0);
  Params p;
  p.ptr[0] = address(sum);
  p.ptr[1] = address(indices);
  p.ptr[2] = address(grad_out);
  pool_params(p, grad_in, grad_out, nullptr, grad_out.numel());
  ctx_->dispatch_1d(ShaderId::pool, {256, 1, static_cast<int>(grad_out.dtype)}, p,
                    static_cast<uint64_t>(grad_out.numel()));
  if (acc) {
    copy(grad_in, sum);
    ctx_->deallocate(acc);  // reuse is ordered after the copy (one queue)
  }
}

void VulkanBackend::avg_pool2d_forward(const TensorArg& out, const TensorArg& in, const Pool2dParams& pp) {
  require(OpId::avg_pool2d_forward, in.dtype, "avg_pool2d");
  check_pool("avg_pool2d", out, in);
  if (out.numel() == 0) return;
  ctx_->set_op("avg_pool2d", in.shape);
  check_index_range(*ctx_, "avg_pool2d", in);
  Params p;
  p.ptr[0] = address(out);
  p.ptr[1] = address(in);
  pool_params(p, in, out, &pp, out.numel());
  ctx_->dispatch_1d(ShaderId::pool, {256, 2, static_cast<int>(in.dtype)}, p, static_cast<uint64_t>(out.numel()));
}

void VulkanBackend::avg_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const Pool2dParams& pp) {
  require(OpId::avg_pool2d_backward, grad_out.dtype, "avg_pool2d_backward");
  check_pool("avg_pool2d_backward", grad_out, grad_in);
  if (grad_in.numel() == 0) return;
  ctx_->set_op("avg_pool2d_backward", grad_in.shape);
  check_index_range(*ctx_, "avg_pool2d_backward", grad_in);
  Params p;
  p.ptr[0] = address(grad_in);
  p.ptr[1] = address(grad_out);
  pool_params(p, grad_in, grad_out, &pp, grad_in.numel());
  ctx_->dispatch_1d(ShaderId::pool, {256, 3, static_cast<int>(grad_out.dtype)}, p,
                    static_cast<uint64_t>(grad_in.numel()));
}

namespace {
// kind: 0 gather, 1 scatter_add, 2 index_select, 3 index_add. `iter` is the shape threads
// walk; `indexed` the tensor whose dim the index points into.
void run_index(Context& ctx, const char* name, int kind, int64_t dim, const TensorArg& out, const TensorArg& data,
               const TensorArg& index, const TensorArg& iter, const TensorArg& indexed) {
  const int64_t nd = static_cast<int64_t>(iter.shape.size());
  KILN_CHECK(nd <= 8, ShapeError, name, ": rank ", nd, " exceeds 8");
  if (nd > 0) {
    KILN_CHECK(dim >= -nd && dim < nd, ShapeError, name, ": dim ", dim, " is out of range for rank ", nd);
    if (dim < 0) dim += nd;
  } else {
    dim = 0;
  }
  KILN_CHECK(index.dtype == DType::i64, DTypeError, name, ": index must be i64, got ", dtype_name(index.dtype));
  KILN_CHECK(out.dtype == data.dtype, DTypeError, name, ": dtypes ", dtype_name(out.dtype), " and ",
             dtype_name(data.dtype), " differ");
  KILN_CHECK(out.shape.size() == iter.shape.size() && data.shape.size() == iter.shape.size(), ShapeError, name,
             ": ranks of ", shape_str(out.shape), " and ", shape_str(data.shape), " differ");
  if (kind >= 2) KILN_CHECK(index.shape.size() == 1, ShapeError, name, ": index must be 1-d, got ", shape_str(index.shape));
  if (iter.numel() == 0) return;
  ctx.set_op(name, iter.shape);
  for (const TensorArg* t : {&out, &data, &index}) check_index_range(ctx, name, *t);
  Params p;
  p.ptr[0] = address(out);
  p.ptr[1] = address(data);
  p.ptr[2] = address(index);
  p.i[0] = static_cast<int32_t>(iter.numel());
  p.i[1] = static_cast<int32_t>(std::max<int64_t>(nd, 1));
  p.i[2] = static_cast<int32_t>(dim);
  p.i[3] = 1;
  for (int64_t d = 0; d < nd; ++d) {
    p.i[3 + d] = static_cast<int32_t>(iter.shape[d]);
    p.i[11 + d] = static_cast<int32_t>(out.strides[d]);
    p.i[27 + d] = static_cast<int32_t>(data.strides[d]);
    if (kind < 2) p.i[19 + d] = static_cast<int32_t>(index.strides[d]);
  }
  if (kind >= 2) p.i[19] = static_cast<int32_t>(index.strides[0]);
  p.i[35] = static_cast<int32_t>(nd ? indexed.shape[dim] : 1);
  ctx.dispatch_1d(ShaderId::index, {256, kind, static_cast<int>(out.dtype)}, p, static_cast<uint64_t>(iter.numel()));
}
}  // namespace

void VulkanBackend::gather(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) {
  require(OpId::gather, in.dtype, "gather");
  KILN_CHECK(index.shape == out.shape, ShapeError, "gather: index ", shape_str(index.shape), " and output ",
             shape_str(out.shape), " differ");
  run_index(*ctx_, "gather", 0, dim, out, in, index, index, in);
}

void VulkanBackend::scatter_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) {
  require(OpId::scatter_add, out.dtype, "scatter_add");
  KILN_CHECK(index.shape == src.shape, ShapeError, "scatter_add: index ", shape_str(index.shape), " and src ",
             shape_str(src.shape), " differ");
  run_index(*ctx_, "scatter_add", 1, dim, out, src, index, index, out);
}

void VulkanBackend::index_select(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) {
  require(OpId::index_select, in.dtype, "index_select");
  run_index(*ctx_, "index_select", 2, dim, out, in, index, out, in);
}

void VulkanBackend::index_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) {
  require(OpId::index_add, out.dtype, "index_add");
  run_index(*ctx_, "index_add", 3, dim, out, src, index, src, out);
}

}  // namespace kiln::vk
