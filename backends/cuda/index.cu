// CudaBackend::gather, scatter_add, index_select, index_add and check_indices. Each op
// walks its iteration shape with the strided indexer (common.cuh), the indexed dim's
// stride set to 0, and adds index * stride; the adds of scatter_add and index_add are
// atomic (so the order of float sums is not fixed). The kernels check every index and
// skip those out of range; the IndexError (naming the op, the index, the dim and its
// size) comes at the next wait for the device (CudaBackend::deferred_check).
#include "backends/cuda/atomic.cuh"
#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"

namespace kiln::cuda {
namespace {

void check_index_arg(const char* op, const TensorArg& index, int64_t dim, size_t rank) {
  KILN_CHECK(index.dtype == DType::i64, DTypeError, op, ": index must be i64, got ", dtype_name(index.dtype));
  KILN_CHECK(dim >= 0 && static_cast<size_t>(dim) < std::max<size_t>(rank, 1), IndexError, op, ": dim ", dim,
             " is out of range for a tensor of rank ", rank);
}

// Every dim but `dim` of small must not exceed big's (torch.gather / scatter_add).
void check_fits(const char* op, const char* what, const Shape& small, const char* bigname, const Shape& big,
                int64_t dim) {
  bool ok = small.size() == big.size();
  for (size_t d = 0; ok && d < small.size(); ++d)
    if (static_cast<int64_t>(d) != dim && small[d] > big[d]) ok = false;
  KILN_CHECK(ok, ShapeError, op, ": ", what, " shape ", shape_str(small), " does not fit ", bigname, " shape ",
             shape_str(big), " outside dim ", dim);
}

// False (and the first failure recorded, see CudaBackend::deferred_check) when v is outside [0, size).
__device__ __forceinline__ bool in_range(int64_t v, int64_t size, int64_t* bad, int64_t id) {
  if (v >= 0 && v < size) return true;
  if (atomicCAS(reinterpret_cast<unsigned long long*>(bad), 0ull, static_cast<unsigned long long>(id)) == 0ull)
    bad[1] = v;
  return false;
}

Strides with_zero(Strides s, int64_t dim) {
  if (!s.empty()) s[static_cast<size_t>(dim)] = 0;
  return s;
}

// The 1-d index's stride at `dim`, 0 elsewhere (index_select / index_add).
Strides along(const TensorArg& index, size_t rank, int64_t dim) {
  Strides s(rank, 0);
  if (rank) s[static_cast<size_t>(dim)] = index.strides.empty() ? 0 : index.strides[0];
  return s;
}


// f16/bf16 scatter_add and index_add add in index order, one thread per output element,
// rounding after each add as the CPU backend does, so both give the same bits (atomics
// would add in any order). Work is numel(out) * (extent of the indexed dim).
constexpr int kMaxRank = 8;
struct Dims {
  int rank;
  int64_t shape[kMaxRank], out_st[kMaxRank], src_st[kMaxRank], idx_st[kMaxRank], idx_shape[kMaxRank];
};

Dims make_dims(const char* op, const TensorArg& out, const TensorArg& src, const TensorArg& index, bool one_d_index,
               int64_t dim) {
  Dims d{};
  d.rank = static_cast<int>(out.shape.size());
  KILN_CHECK(d.rank <= kMaxRank, ShapeError, op, ": at most ", kMaxRank, " dims for f16/bf16 on the CUDA backend");
  for (int i = 0; i < d.rank; ++i) {
    d.shape[i] = out.shape[i];
    d.out_st[i] = out.strides[i];
    d.src_st[i] = src.strides[i];
    d.idx_st[i] = one_d_index ? (i == dim ? index.strides[0] : 0) : index.strides[i];
    d.idx_shape[i] = one_d_index ? (i == dim ? index.shape[0] : out.shape[i]) : index.shape[i];
  }
  return d;
}

template <class T>
__global__ void ordered_add_kernel(int64_t n, Dims d, int dim, T* __restrict__ out, const T* __restrict__ src,
                                   const int64_t* __restrict__ index) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, o = 0, s = 0, x = 0, r = 0;
    bool inside = true;
    for (int k = d.rank - 1; k >= 0; --k) {
      const int64_t c = rest % d.shape[k];
      rest /= d.shape[k];
      o += c * d.out_st[k];
      if (k == dim) {
        r = c;
      } else {
        inside = inside && c < d.idx_shape[k];
        s += c * d.src_st[k];
        x += c * d.idx_st[k];
      }
    }
    if (!inside) continue;
    float acc = static_cast<float>(out[o]);
    for (int64_t j = 0; j < d.idx_shape[dim]; ++j)
      if (index[x + j * d.idx_st[dim]] == r)
        acc = static_cast<float>(convert<T>(acc + static_cast<float>(src[s + j * d.src_st[dim]])));
    out[o] = convert<T>(acc);
  }
}

template <class T>
void ordered_add(CudaBackend& be, const char* op, const TensorArg& out, const TensorArg& src, const TensorArg& index,
                 bool one_d_index, int64_t dim, int64_t size, int64_t* bad, int64_t id) {
  const Dims d = make_dims(op, out, src, index, one_d_index, dim);
  const int64_t* ix = ptr<const int64_t>(index);
  launch_elementwise<1>(op, be.stream(), index.shape, {&index.strides},  // out-of-range indices match no output
                        [=] __device__(const int64_t(&off)[1]) { in_range(ix[off[0]], size, bad, id); });
  const int64_t n = out.numel();
  ordered_add_kernel<T><<<grid_for(n), kThreads, 0, be.stream()>>>(n, d, static_cast<int>(dim), ptr<T>(out),
                                                                     ptr<const T>(src), ix);
  check_launch(op, out.shape);
}

}  // namespace

void CudaBackend::gather(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) {
  ProfileScope prof_(stream_, "gather", out);
  const char* op = "gather";
  check_index_arg(op, index, dim, in.shape.size());
  KILN_CHECK(out.shape == index.shape && out.dtype == in.dtype, ShapeError, op, ": output ", args_str({&out}),
             " must have the index's shape ", shape_str(index.shape), " and the input's dtype");
  check_fits(op, "index", index.shape, "input", in.shape, dim);
  if (out.numel() == 0) return;
  make_current();
  const int64_t size = in.shape.empty() ? 1 : in.shape[dim];
  int64_t id = 0;
  int64_t* bad = deferred_check(op, dim, size, &id);
  const Strides in_s = with_zero(in.strides, dim);
  const int64_t step = in.strides.empty() ? 0 : in.strides[dim];
  const int64_t* ix = ptr<const int64_t>(index);
  KILN_CUDA_DISPATCH_ALL(in.dtype, op, {
    T* o = ptr<T>(out);
    const T* x = ptr<const T>(in);
    launch_elementwise<3>(op, stream_, index.shape, {&out.strides, &index.strides, &in_s},
                          [=] __device__(const int64_t(&off)[3]) {
                            const int64_t v = ix[off[1]];
                            if (!in_range(v, size, bad, id)) return void(o[off[0]] = T());
                            o[off[0]] = x[off[2] + v * step];
                          });
  });
}

void CudaBackend::scatter_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) {
  ProfileScope prof_(stream_, "scatter_add", src);
  const char* op = "scatter_add";
  check_index_arg(op, index, dim, out.shape.size());
  KILN_CHECK(src.dtype == out.dtype, DTypeError, op, ": source ", dtype_name(src.dtype), " and output ",
             dtype_name(out.dtype), " differ");
  check_fits(op, "index", index.shape, "source", src.shape, -1);
  check_fits(op, "index", index.shape, "output", out.shape, dim);
  if (index.numel() == 0) return;
  make_current();
  const int64_t size = out.shape.empty() ? 1 : out.shape[dim];
  int64_t id = 0;
  int64_t* bad = deferred_check(op, dim, size, &id);
  if (out.dtype == DType::f16) return ordered_add<f16_t>(*this, op, out, src, index, false, dim, size, bad, id);
  if (out.dtype == DType::bf16) return ordered_add<bf16_t>(*this, op, out, src, index, false, dim, size, bad, id);
  const Strides out_s = with_zero(out.strides, dim);
  const int64_t step = out.strides.empty() ? 0 : out.strides[dim];
  const int64_t* ix = ptr<const int64_t>(index);
  KILN_CUDA_DISPATCH_ALL(out.dtype, op, {
    T* o = ptr<T>(out);
    const T* s = ptr<const T>(src);
    launch_elementwise<3>(op, stream_, index.shape, {&index.strides, &src.strides, &out_s},
                          [=] __device__(const int64_t(&off)[3]) {
                            const int64_t v = ix[off[0]];
                            if (in_range(v, size, bad, id)) atomic_add(o + off[2] + v * step, s[off[1]]);
                          });
  });
}

void CudaBackend::index_select(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) {
  ProfileScope prof_(stream_, "index_select", out);
  const char* op = "index_select";
  const size_t rank = in.shape.size();
  check_index_arg(op, index, dim, rank);
  KILN_CHECK(index.shape.size() <= 1, ShapeError, op, ": index must be 1-d, got ", shape_str(index.shape));
  Shape want = in.shape;
  if (rank) want[dim] = index.numel();
  KILN_CHECK(out.shape == want && out.dtype == in.dtype, ShapeError, op, ": output ", args_str({&out}),
             " must be ", shape_str(want), " ", dtype_name(in.dtype));
  if (out.numel() == 0) return;
  make_current();
  const int64_t size = rank ? in.shape[dim] : 1;
  int64_t id = 0;
  int64_t* bad = deferred_check(op, dim, size, &id);
  const Strides in_s = with_zero(in.strides, dim), ix_s = along(index, rank, dim);
  const int64_t step = rank ? in.strides[dim] : 0;
  const int64_t* ix = ptr<const int64_t>(index);
  KILN_CUDA_DISPATCH_ALL(in.dtype, op, {
    T* o = ptr<T>(out);
    const T* x = ptr<const T>(in);
    launch_elementwise<3>(op, stream_, out.shape, {&out.strides, &in_s, &ix_s},
                          [=] __device__(const int64_t(&off)[3]) {
                            const int64_t v = ix[off[2]];
                            if (!in_range(v, size, bad, id)) return void(o[off[0]] = T());
                            o[off[0]] = x[off[1] + v * step];
                          });
  });
}

void CudaBackend::index_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) {
  ProfileScope prof_(stream_, "index_add", src);
  const char* op = "index_add";
  const size_t rank = out.shape.size();
  check_index_arg(op, index, dim, rank);
  KILN_CHECK(index.shape.size() <= 1, ShapeError, op, ": index must be 1-d, got ", shape_str(index.shape));
  Shape want = out.shape;
  if (rank) want[dim] = index.numel();
  KILN_CHECK(src.shape == want && src.dtype == out.dtype, ShapeError, op, ": source ", args_str({&src}), " must be ",
             shape_str(want), " ", dtype_name(out.dtype));
  if (src.numel() == 0) return;
  make_current();
  const int64_t size = rank ? out.shape[dim] : 1;
  int64_t id = 0;
  int64_t* bad = deferred_check(op, dim, size, &id);
  if (rank && out.dtype == DType::f16) return ordered_add<f16_t>(*this, op, out, src, index, true, dim, size, bad, id);
  if (rank && out.dtype == DType::bf16)
    return ordered_add<bf16_t>(*this, op, out, src, index, true, dim, size, bad, id);
  const Strides out_s = with_zero(out.strides, dim), ix_s = along(index, rank, dim);
  const int64_t step = rank ? out.strides[dim] : 0;
  const int64_t* ix = ptr<const int64_t>(index);
  KILN_CUDA_DISPATCH_ALL(out.dtype, op, {
    T* o = ptr<T>(out);
    const T* s = ptr<const T>(src);
    launch_elementwise<3>(op, stream_, src.shape, {&src.strides, &out_s, &ix_s},
                          [=] __device__(const int64_t(&off)[3]) {
                            const int64_t v = ix[off[2]];
                            if (in_range(v, size, bad, id)) atomic_add(o + off[1] + v * step, s[off[0]]);
                          });
  });
}

}  // namespace kiln::cuda
