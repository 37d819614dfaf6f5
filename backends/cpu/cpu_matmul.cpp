// CpuBackend::matmul: batched, broadcast and strided matrix products.
//
// f32, bf16 and f16 run through a cached dnnl::matmul primitive whose memory
// descriptors carry the operands' own strides (a transposed operand costs
// nothing); a broadcast batch dim (stride 0) becomes a size-1 dim, which
// oneDNN broadcasts. An operand whose matrix has no unit stride is copied to a
// dense scratch first; a dtype oneDNN cannot run on this CPU goes through f32.
// f64 (gradcheck) runs our own loop, since oneDNN has no f64.
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dnnl_context.h"
#include "backends/cpu/small_matmul.h"
#include "engine/core/error.h"

namespace kiln::cpu {
namespace {

// One operand of a batched product as the kernels see it: dims [B..., R, C] with
// size 1 in broadcast batch dims, strides in elements (0 in broadcast dims).
struct Operand {
  char* data = nullptr;
  DType dtype = DType::f32;
  std::vector<int64_t> dims, strides;
  size_t rank() const { return dims.size(); }
  int64_t rows() const { return dims[rank() - 2]; }
  int64_t cols() const { return dims[rank() - 1]; }
  int64_t row_stride() const { return strides[rank() - 2]; }
  int64_t col_stride() const { return strides[rank() - 1]; }
  int64_t numel() const { return kiln::numel(dims); }
  TensorArg arg() const { return TensorArg{data, 0, dtype, dims, strides}; }
};

// Size-1 matrix dims get the stride that makes the layout plain (row- or column-major).
void normalize_matrix(Operand& x) {
  int64_t& sr = x.strides[x.rank() - 2];
  int64_t& sc = x.strides[x.rank() - 1];
  if (x.cols() == 1) sc = 1;
  if (x.rows() == 1) sr = sc == 1 ? x.cols() : 1;
}

// oneDNN's matmul takes a plain matrix: one unit stride, the other at least the extent.
bool plain_matrix(const Operand& x) {
  return (x.col_stride() == 1 && x.row_stride() >= x.cols()) || (x.row_stride() == 1 && x.col_stride() >= x.rows());
}

bool is_dense(const Operand& x) {
  int64_t expect = 1;
  for (size_t d = x.rank(); d-- > 0;) {
    if (x.dims[d] != 1 && x.strides[d] != expect) return false;
    expect *= x.dims[d];
  }
  return true;
}

// A dense copy of x (dtype `want`) in scratch `slot`; broadcast dims stay size 1.
Operand densify(const Operand& x, DType want, Scratch slot, bool load) {
  Operand d = x;
  d.dtype = want;
  d.data = static_cast<char*>(scratch(slot, static_cast<size_t>(x.numel()) * dtype_size(want)));
  d.strides = contiguous_strides(x.dims);
  for (size_t i = 0; i + 2 < d.rank(); ++i)
    if (d.dims[i] == 1) d.strides[i] = 0;
  if (load) gather_dense(x.arg(), d.data, want);
  return d;
}

dnnl::memory::desc memory_desc(const Operand& x, dnnl::memory::data_type dt) {
  dnnl::memory::dims dims(x.dims.begin(), x.dims.end()), strides(x.strides.begin(), x.strides.end());
  int64_t extent = 1 + (x.rows() - 1) * x.row_stride() + (x.cols() - 1) * x.col_stride();
  for (size_t d = x.rank() - 2; d-- > 0;) {
    if (dims[d] == 1) strides[d] = extent;  // a broadcast dim: any stride past the rest
    extent += (dims[d] - 1) * strides[d];
  }
  return dnnl::memory::desc(dims, dt, strides);
}

struct MatmulPlan {
  enum class Mode { native, via_f32, dense } mode = Mode::native;
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md;
};

std::shared_ptr<MatmulPlan> make_plan(const Operand& a, const Operand& b, const Operand& c) {
  auto plan = std::make_shared<MatmulPlan>();
  try {
    auto dt = dnnl_type(c.dtype);
    plan->a_md = memory_desc(a, dt);
    plan->b_md = memory_desc(b, dt);
    plan->c_md = memory_desc(c, dt);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(plan->a_md, plan->b_md, plan->c_md), dnnl_engine());
    // The reference kernel is far slower than a copy to dense operands.
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0 && !(is_dense(a) && is_dense(b) && is_dense(c)))
      plan->mode = MatmulPlan::Mode::dense;
    else
      plan->prim = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    plan->mode = c.dtype == DType::f32 ? MatmulPlan::Mode::dense : MatmulPlan::Mode::via_f32;
  }
  return plan;
}

// f64: rows of c in parallel, c[i, :] += a[i, k] * b[k, :] for k in order.
void matmul_f64(const Operand& a, const Operand& b, const Operand& c) {
  const size_t nb = c.rank() - 2;
  const int64_t M = c.rows(), N = c.cols(), K = a.cols();
  int64_t batches = 1;
  for (size_t d = 0; d < nb; ++d) batches *= c.dims[d];
  const auto* A = reinterpret_cast<const double*>(a.data);
  const auto* B = reinterpret_cast<const double*>(b.data);
  auto* C = reinterpret_cast<double*>(c.data);
#pragma omp parallel
  {
    std::vector<double> acc(static_cast<size_t>(N));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < batches * M; ++r) {
      int64_t rem = r / M, oa = 0, ob = 0, oc = 0;
      const int64_t i = r % M;
      for (size_t d = nb; d-- > 0;) {
        const int64_t idx = rem % c.dims[d];
        rem /= c.dims[d];
        oa += idx * a.strides[d];  // 0 where broadcast
        ob += idx * b.strides[d];
        oc += idx * c.strides[d];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      const double* arow = A + oa + i * a.row_stride();
      for (int64_t k = 0; k < K; ++k) {
        const double av = arow[k * a.col_stride()];
        const double* brow = B + ob + k * b.row_stride();
        const int64_t sb = b.col_stride();
        for (int64_t j = 0; j < N; ++j) acc[static_cast<size_t>(j)] += av * brow[j * sb];
      }
      double* crow = C + oc + i * c.row_stride();
      for (int64_t j = 0; j < N; ++j) crow[j * c.col_stride()] = acc[static_cast<size_t>(j)];
    }
  }
}

void run_matmul(Operand a, Operand b, Operand c, bool may_densify) {
  if (c.dtype == DType::f64) return matmul_f64(a, b, c);
  if (c.dtype == DType::f32 && c.rank() == 2 && a.col_stride() == 1 && c.col_stride() == 1 &&
      small_matmul_f32(reinterpret_cast<const float*>(a.data), a.row_stride(), reinterpret_cast<const float*>(b.data),
                       b.row_stride(), b.col_stride(), reinterpret_cast<float*>(c.data), c.row_stride(), c.rows(),
                       c.cols(), a.cols()))
    return;
  // A matrix without a unit stride: oneDNN cannot take it, copy it.
  const Operand c_user = c;
  if (!plain_matrix(a)) a = densify(a, a.dtype, Scratch::dense0, true);
  if (!plain_matrix(b)) b = densify(b, b.dtype, Scratch::dense1, true);
  const bool c_copy = !plain_matrix(c);
  if (c_copy) c = densify(c, c.dtype, Scratch::dense2, false);

  PlanKey key("matmul");
  key.add(static_cast<int64_t>(c.dtype));
  for (const Operand* x : {&a, &b, &c}) key.add(x->dims).add(x->strides);
  int64_t macs = c.rows() * c.cols() * a.cols();
  for (size_t d = 0; d + 2 < c.rank(); ++d) macs *= c.dims[d];
  const OneThreadIf serial(macs < kSerialMatmulWork);  // Note [Serial small kernels]
  auto plan = cached_plan<MatmulPlan>(key, [&] { return make_plan(a, b, c); });

  switch (plan->mode) {
    case MatmulPlan::Mode::native: {
      dnnl::engine& eng = dnnl_engine();
      dnnl::memory ma(plan->a_md, eng, a.data), mb(plan->b_md, eng, b.data), mc(plan->c_md, eng, c.data);
      plan->prim.execute(dnnl_stream(), {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
      break;
    }
    case MatmulPlan::Mode::via_f32: {
      Operand c32 = densify(c, DType::f32, Scratch::cvt2, false);
      run_matmul(densify(a, DType::f32, Scratch::cvt0, true), densify(b, DType::f32, Scratch::cvt1, true), c32,
                 may_densify);
      scatter_dense(c.arg(), c32.data, DType::f32);
      break;
    }
    case MatmulPlan::Mode::dense: {
      KILN_CHECK(may_densify, DeviceError, "matmul: oneDNN rejected dense ", dtype_name(c.dtype), " operands ",
                 shape_str(a.dims), " @ ", shape_str(b.dims));
      Operand cd = is_dense(c) ? c : densify(c, c.dtype, Scratch::dense2, false);
      run_matmul(is_dense(a) ? a : densify(a, a.dtype, Scratch::dense0, true),
                 is_dense(b) ? b : densify(b, b.dtype, Scratch::dense1, true), cd, false);
      if (cd.data != c.data) scatter_dense(c.arg(), cd.data, c.dtype);
      break;
    }
  }
  if (c_copy) scatter_dense(c_user.arg(), c.data, c.dtype);
}

}  // namespace

void CpuBackend::matmul(const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  const size_t r = out.shape.size();
  KILN_CHECK(a.dtype == out.dtype && b.dtype == out.dtype, DTypeError, "matmul: dtypes ", dtype_name(a.dtype),
             " @ ", dtype_name(b.dtype), " -> ", dtype_name(out.dtype), " differ");
  KILN_CHECK(is_floating(out.dtype), DTypeError, "matmul: no ", dtype_name(out.dtype), " kernel on the CPU");
  KILN_CHECK(r >= 2 && a.shape.size() >= 2 && b.shape.size() >= 2 && a.shape.size() <= r && b.shape.size() <= r,
             ShapeError, "matmul: ranks of ", shape_str(a.shape), " @ ", shape_str(b.shape), " -> ",
             shape_str(out.shape));
  const int64_t M = out.shape[r - 2], N = out.shape[r - 1], K = a.shape.back();
  KILN_CHECK(a.shape[a.shape.size() - 2] == M && b.shape[b.shape.size() - 2] == K && b.shape.back() == N,
             ShapeError, "matmul: shapes ", shape_str(a.shape), " @ ", shape_str(b.shape), " -> ",
             shape_str(out.shape));
  if (out.numel() == 0) return;
  if (K == 0) return fill_zero(out);

  // Batch dims: drop size 1, merge neighbours whose strides allow it; a batch
  // dim an operand lacks, has size 1 in, or has stride 0 in, is broadcast.
  auto batch_stride = [&](const TensorArg& x, size_t d) -> int64_t {
    const size_t lead = r - x.shape.size();
    if (d < lead) return 0;
    KILN_CHECK(x.shape[d - lead] == out.shape[d] || x.shape[d - lead] == 1, ShapeError, "matmul: batch dims of ",
               shape_str(x.shape), " do not broadcast to ", shape_str(out.shape));
    return x.shape[d - lead] == 1 ? 0 : x.strides[d - lead];
  };
  Operand oa{first_element(a), a.dtype, {}, {}}, ob{first_element(b), b.dtype, {}, {}};
  Operand oc{first_element(out), out.dtype, {}, {}};
  std::vector<int64_t> batch;
  for (size_t d = 0; d + 2 < r; ++d) {
    const int64_t n = out.shape[d];
    const int64_t sa = batch_stride(a, d), sb = batch_stride(b, d), sc = out.strides[d];
    if (n == 1) continue;
    if (!batch.empty() && oa.strides.back() == sa * n && ob.strides.back() == sb * n && oc.strides.back() == sc * n) {
      batch.back() *= n;
      oa.strides.back() = sa;
      ob.strides.back() = sb;
      oc.strides.back() = sc;
    } else {
      batch.push_back(n);
      oa.strides.push_back(sa);
      ob.strides.push_back(sb);
      oc.strides.push_back(sc);
    }
  }
  KILN_CHECK(batch.size() <= 10, ShapeError, "matmul: more than 10 batch dims in ", shape_str(out.shape));
  for (size_t d = 0; d < batch.size(); ++d) {
    oa.dims.push_back(oa.strides[d] == 0 ? 1 : batch[d]);
    ob.dims.push_back(ob.strides[d] == 0 ? 1 : batch[d]);
    oc.dims.push_back(batch[d]);
  }
  auto add_matrix = [](Operand& x, const TensorArg& t, int64_t rows, int64_t cols) {
    const size_t n = t.shape.size();
    x.dims.insert(x.dims.end(), {rows, cols});
    x.strides.insert(x.strides.end(), {t.strides[n - 2], t.strides[n - 1]});
    normalize_matrix(x);
  };
  add_matrix(oa, a, M, K);
  add_matrix(ob, b, K, N);
  add_matrix(oc, out, M, N);
  run_matmul(oa, ob, oc, true);
}

}  // namespace kiln::cpu
