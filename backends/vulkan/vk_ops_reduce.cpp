// VulkanBackend: reduce (shaders/reduce.comp) and softmax (shaders/softmax.comp).
#include <algorithm>

#include "backends/vulkan/vk_backend.h"
#include "engine/core/error.h"

namespace kiln::vk {

namespace {
// Dims of one group (kept or reduced) merged where contiguous across them.
struct Group {
  std::vector<int64_t> size, s0, s1;  // sizes, in-strides, out-strides
  void add(int64_t n, int64_t a, int64_t b) {
    if (!size.empty() && s0.back() == a * n && s1.back() == b * n) {
      size.back() *= n;
      s0.back() = a;
      s1.back() = b;
    } else {
      size.push_back(n);
      s0.push_back(a);
      s1.push_back(b);
    }
  }
};
}  // namespace

void VulkanBackend::reduce(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0) {
  const char* name = reduce_op_name(op);
  require(OpId::reduce, in.dtype, name);
  require(OpId::reduce, out.dtype, name);
  reduce_into(op, out, in, p0);
}

void VulkanBackend::reduce_into(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0) {
  const char* name = reduce_op_name(op);
  KILN_CHECK(out.shape.size() == in.shape.size(), ShapeError, name, ": output ", shape_str(out.shape),
             " must keep the rank of input ", shape_str(in.shape));
  const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  KILN_CHECK(!arg || out.dtype == DType::i64, DTypeError, name, ": output must be i64, got ", dtype_name(out.dtype));
  Group kept, red;
  int64_t n_red = 1;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    KILN_CHECK(out.shape[d] == in.shape[d] || out.shape[d] == 1, ShapeError, name, ": output ", shape_str(out.shape),
               " does not fit input ", shape_str(in.shape));
    if (in.shape[d] == 1) continue;
    if (out.shape[d] == 1) {
      red.add(in.shape[d], in.strides[d], 0);
      n_red *= in.shape[d];
    } else {
      kept.add(in.shape[d], in.strides[d], out.strides[d]);
    }
  }
  if (out.numel() == 0) return;
  ctx_->set_op(name, in.shape);
  check_index_range(*ctx_, name, in);
  check_index_range(*ctx_, name, out);
  KILN_CHECK(kept.size.size() <= 8 && red.size.size() <= 8, ShapeError, name, ": input ", shape_str(in.shape),
             " has more than 8 non-mergeable dims");
  if (red.size.empty()) red.add(1, 0, 0);
  Params p;
  p.ptr[0] = address(out);
  p.ptr[1] = address(in);
  p.i[0] = static_cast<int32_t>(out.numel());
  p.i[1] = static_cast<int32_t>(n_red);
  p.i[2] = static_cast<int32_t>(kept.size.size());
  for (size_t d = 0; d < kept.size.size(); ++d) {
    p.i[3 + d] = static_cast<int32_t>(kept.size[d]);
    p.i[11 + d] = static_cast<int32_t>(kept.s0[d]);
    p.i[19 + d] = static_cast<int32_t>(kept.s1[d]);
  }
  p.i[27] = static_cast<int32_t>(red.size.size());
  for (size_t d = 0; d < red.size.size(); ++d) {
    p.i[28 + d] = static_cast<int32_t>(red.size[d]);
    p.i[36 + d] = static_cast<int32_t>(red.s0[d]);
  }
  p.f[0] = static_cast<float>(p0);
  const int64_t outs = out.numel();
  // Long reductions, or few of them: a work group per output; else a thread per output.
  const bool group = n_red > 256 || (n_red > 16 && outs < 4096);
  auto launch = [&](Params& q, ReduceOp rop, DType od, DType id, int64_t work_groups) {
    std::vector<int32_t> spec{256, static_cast<int>(rop), static_cast<int>(od), static_cast<int>(id), group ? 1 : 0};
    if (group) {
      uint32_t gx = static_cast<uint32_t>(std::min<int64_t>(work_groups, 65535));
      ctx_->dispatch(ShaderId::reduce, spec, q, gx, static_cast<uint32_t>((work_groups + gx - 1) / gx));
    } else {
      ctx_->dispatch_1d(ShaderId::reduce, spec, q, static_cast<uint64_t>(outs));
    }
  };
  // Few outputs of very long reductions: split each into chunks (work groups) writing
  // partial results, then reduce the partials (sum, mean, prod, max, min).
  const bool splittable = op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::prod ||
                          op == ReduceOp::max || op == ReduceOp::min;
  const int64_t chunks = std::min<int64_t>({1024, 4096 / outs, n_red / 8192});
  if (!group || !splittable || outs > 1024 || chunks < 2) return launch(p, op, out.dtype, in.dtype, outs);
  const bool integer = !is_floating(in.dtype);
  const DType pd = integer ? DType::i64 : DType::f32;
  const ReduceOp first = op == ReduceOp::mean ? ReduceOp::sum : op;
  Allocation* partial = ctx_->allocate(static_cast<size_t>(outs * chunks) * dtype_size(pd));
  Params q = p;
  q.ptr[0] = partial->address;
  q.i[44] = static_cast<int32_t>(chunks);
  q.i[45] = static_cast<int32_t>((n_red + chunks - 1) / chunks);
  launch(q, first, pd, in.dtype, outs * chunks);
  // second pass: partials [outputs, chunks], contiguous, kept dims in row-major order
  Params r = p;
  r.ptr[1] = partial->address;
  r.i[1] = static_cast<int32_t>(chunks);
  int64_t stride = chunks;
  for (size_t d = kept.size.size(); d-- > 0;) {
    r.i[11 + d] = static_cast<int32_t>(stride);
    stride *= kept.size[d];
  }
  r.i[27] = 1;
  r.i[28] = static_cast<int32_t>(chunks);
  r.i[36] = 1;
  if (op == ReduceOp::mean) r.f[1] = static_cast<float>(1.0 / static_cast<double>(n_red));
  launch(r, op == ReduceOp::mean ? ReduceOp::sum : op, out.dtype, pd, outs);
  ctx_->deallocate(partial);  // reuse is ordered after the second pass (one queue)
}

namespace {
void run_softmax(Context& ctx, const char* name, int backward, bool log, const TensorArg& dst, const TensorArg& a,
                 const TensorArg* y, int64_t dim) {
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  KILN_CHECK(nd == 0 ? (dim == 0 || dim == -1) : (dim >= -nd && dim < nd), ShapeError, name, ": dim ", dim,
             " is out of range for shape ", shape_str(a.shape));
  if (dim < 0) dim += std::max<int64_t>(nd, 1);
  for (const TensorArg* t : {&dst, &a, y}) {
    if (!t) continue;
    KILN_CHECK(t->shape == a.shape, ShapeError, name, ": shapes ", shape_str(t->shape), " and ", shape_str(a.shape),
               " differ");
    KILN_CHECK(t->is_contiguous(), ValueError, name, ": tensors must be contiguous (shape ", shape_str(a.shape), ")");
    KILN_CHECK(t->dtype == a.dtype, DTypeError, name, ": dtypes ", dtype_name(t->dtype), " and ",
               dtype_name(a.dtype), " differ");
  }
  if (a.numel() == 0) return;
  ctx.set_op(name, a.shape);
  check_index_range(ctx, name, a);
  int64_t len = nd == 0 ? 1 : a.shape[static_cast<size_t>(dim)], inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= a.shape[static_cast<size_t>(d)];
  const int64_t rows = a.numel() / len;
  Params p;
  p.ptr[0] = address(dst);
  p.ptr[1] = address(a);
  p.ptr[2] = y ? address(*y) : 0;
  p.i[0] = static_cast<int32_t>(rows);
  p.i[1] = static_cast<int32_t>(len);
  p.i[2] = static_cast<int32_t>(inner);
  const bool group = len > 64;
  std::vector<int32_t> spec{256, backward, log ? 1 : 0, static_cast<int>(a.dtype), group ? 1 : 0};
  if (group) {
    uint32_t gx = static_cast<uint32_t>(std::min<int64_t>(rows, 65535));
    ctx.dispatch(ShaderId::softmax, spec, p, gx, static_cast<uint32_t>((rows + gx - 1) / gx));
  } else {
    ctx.dispatch_1d(ShaderId::softmax, spec, p, static_cast<uint64_t>(rows));
  }
}
}  // namespace

void VulkanBackend::softmax_forward(const TensorArg& out, const TensorArg& in, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  require(OpId::softmax_forward, in.dtype, name);
  run_softmax(*ctx_, name, 0, log, out, in, nullptr, dim);
}

void VulkanBackend::softmax_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out,
                                     int64_t dim, bool log) {
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  require(OpId::softmax_backward, grad_out.dtype, name);
  run_softmax(*ctx_, name, 1, log, grad_in, grad_out, &out, dim);
}

}  // namespace kiln::vk
