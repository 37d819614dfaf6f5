// CudaBackend::reduce: sum, mean, prod, max, min, argmax, argmin, var over any set of dims.
//
// The input's dims split into kept and reduced ones, each coalesced (common.cuh). A group
// of G threads makes one output: G = 32 (a warp) or 256 (a block, for few long rows) when
// the reduced elements are contiguous or the outputs few and long, G = 1 otherwise (neighbouring threads make
// neighbouring outputs, so reads coalesce along the kept dims). Floats accumulate in
// double, integers in wrapping i64; var is two-pass with the mean correction term (Chan,
// Golub & LeVeque), as the CPU backend. NaN propagates through max/min; argmax/argmin
// point at the first NaN, ties keep the first index (torch).
#include <cmath>
#include <limits>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"

namespace kiln::cuda {
namespace {

template <class T> using val_t = std::conditional_t<is_float_v<T>, double, int64_t>;

template <class V>
struct St {
  V v;
  int64_t i;
};

template <class V>
__device__ __forceinline__ bool is_nan(V x) { return x != x; }

template <ReduceOp OP, class V>
__device__ __forceinline__ St<V> init() {
  if constexpr (OP == ReduceOp::prod) return {V(1), 0};
  else return {V(0), -1};
}

// x (at index i) into s; i grows within one thread.
template <ReduceOp OP, class V>
__device__ __forceinline__ void acc(St<V>& s, V x, int64_t i) {
  if constexpr (OP == ReduceOp::sum || OP == ReduceOp::mean || OP == ReduceOp::var) {
    if constexpr (std::is_integral_v<V>) s.v = static_cast<V>(static_cast<uint64_t>(s.v) + static_cast<uint64_t>(x));
    else s.v += x;
  } else if constexpr (OP == ReduceOp::prod) {
    if constexpr (std::is_integral_v<V>) s.v = static_cast<V>(static_cast<uint64_t>(s.v) * static_cast<uint64_t>(x));
    else s.v *= x;
  } else {
    constexpr bool mx = OP == ReduceOp::max || OP == ReduceOp::argmax;
    if (s.i < 0) {
      s = {x, i};
    } else if (!is_nan(s.v) && (is_nan(x) || (mx ? x > s.v : x < s.v))) {
      s = {x, i};
    }
  }
}

template <ReduceOp OP, class V>
__device__ __forceinline__ void merge(St<V>& s, const St<V>& o) {
  if constexpr (OP == ReduceOp::sum || OP == ReduceOp::mean || OP == ReduceOp::var || OP == ReduceOp::prod) {
    acc<OP>(s, o.v, 0);
  } else {
    constexpr bool mx = OP == ReduceOp::max || OP == ReduceOp::argmax;
    if (o.i < 0) return;
    if (s.i < 0) { s = o; return; }
    const bool sn = is_nan(s.v), on = is_nan(o.v);
    bool take;
    if (sn || on) take = on && (!sn || o.i < s.i);
    else take = (mx ? o.v > s.v : o.v < s.v) || (o.v == s.v && o.i < s.i);
    if (take) s = o;
  }
}

template <class V>
__device__ __forceinline__ St<V> shfl_xor(const St<V>& s, int mask) {
  St<V> o;
  o.v = __shfl_xor_sync(0xffffffffu, s.v, mask);
  o.i = __shfl_xor_sync(0xffffffffu, s.i, mask);
  return o;
}

// Combines the G lanes' states; every lane gets the result.
template <int G, ReduceOp OP, class V>
__device__ __forceinline__ St<V> group_reduce(St<V> s, St<V>* shared) {
  if constexpr (G == 1) {
    return s;
  } else {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) merge<OP>(s, shfl_xor(s, m));
    if constexpr (G == 32) {
      return s;
    } else {
      const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
      __syncthreads();
      if (lane == 0) shared[warp] = s;
      __syncthreads();
      St<V> t = shared[0];
      for (int w = 1; w < G / 32; ++w) merge<OP>(t, shared[w]);
      return t;
    }
  }
}

__device__ __forceinline__ int64_t offset1(const Indexer<1>& ix, int64_t i) {
  if (ix.ndim == 1) return i * ix.stride[0][0];
  int64_t off[1];
  ix.offsets(i, off);
  return off[0];
}

template <class T, class O, ReduceOp OP, int G>
__global__ void reduce_kernel(int64_t M, int64_t R, Indexer<2> kept, Indexer<1> red, const T* __restrict__ in,
                              O* __restrict__ out, double correction) {
  using V = val_t<T>;
  __shared__ St<V> shared[G >= 32 ? G / 32 : 1];
  const int64_t groups = static_cast<int64_t>(gridDim.x) * blockDim.x / G;
  const int lane = threadIdx.x % G;
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G; o < M; o += groups) {
    int64_t ko[2];
    kept.offsets(o, ko);
    const T* base = in + ko[0];
    St<V> s = init<OP, V>();
    for (int64_t r = lane; r < R; r += G) acc<OP>(s, convert<V>(base[offset1(red, r)]), r);
    s = group_reduce<G, OP>(s, shared);
    if constexpr (OP == ReduceOp::var) {
      const double mean = static_cast<double>(s.v) / static_cast<double>(R);
      St<V> ss{V(0), 0}, sd{V(0), 0};
      for (int64_t r = lane; r < R; r += G) {
        const double d = static_cast<double>(convert<V>(base[offset1(red, r)])) - mean;
        ss.v += d * d;
        sd.v += d;
      }
      ss = group_reduce<G, ReduceOp::sum>(ss, shared);
      sd = group_reduce<G, ReduceOp::sum>(sd, shared);
      const double denom = fmax(0.0, static_cast<double>(R) - correction);
      if (lane == 0) out[ko[1]] = convert<O>((ss.v - sd.v * sd.v / static_cast<double>(R)) / denom);
    } else if (lane == 0) {
      if constexpr (OP == ReduceOp::argmax || OP == ReduceOp::argmin) out[ko[1]] = static_cast<O>(s.i);
      else if constexpr (OP == ReduceOp::mean) out[ko[1]] = convert<O>(static_cast<double>(s.v) / static_cast<double>(R));
      else out[ko[1]] = convert<O>(s.v);
    }
  }
}

template <class T, ReduceOp OP>
void launch_reduce(cudaStream_t s, int64_t M, int64_t R, const Indexer<2>& kept, const Indexer<1>& red,
                   const TensorArg& in, const TensorArg& out, double p0, int sms) {
  using O = std::conditional_t<OP == ReduceOp::argmax || OP == ReduceOp::argmin, int64_t, T>;
  const T* x = ptr<const T>(in);
  O* y = ptr<O>(out);
  const bool inner = red.ndim == 1 && red.stride[0][0] == 1;
  if (R >= 2048 && M < 8 * sms) {  // few long reductions (a bias gradient): a block each
    reduce_kernel<T, O, OP, 256><<<static_cast<unsigned>(M), 256, 0, s>>>(M, R, kept, red, x, y, p0);
  } else if (inner || M < 1024) {
    reduce_kernel<T, O, OP, 32><<<grid_for(M * 32), kThreads, 0, s>>>(M, R, kept, red, x, y, p0);
  } else {
    reduce_kernel<T, O, OP, 1><<<grid_for(M), kThreads, 0, s>>>(M, R, kept, red, x, y, p0);
  }
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0) {
  ProfileScope prof_(stream_, reduce_op_name(op), in);
  const char* name = reduce_op_name(op);
  const size_t rank = in.shape.size();
  KILN_CHECK(out.shape.size() == rank, ShapeError, name, ": output rank ", out.shape.size(), " differs from input rank ",
             rank);
  for (size_t d = 0; d < rank; ++d)
    KILN_CHECK(out.shape[d] == in.shape[d] || out.shape[d] == 1, ShapeError, name, ": output shape ",
               shape_str(out.shape), " does not fit input shape ", shape_str(in.shape));
  const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  KILN_CHECK(!arg || out.dtype == DType::i64, DTypeError, name, ": output must be i64, got ", dtype_name(out.dtype));
  if (out.numel() == 0) return;
  make_current();
  if (!arg && out.dtype != in.dtype) {  // (sum of u8 into i64 &c.) reduce a copy in the output's dtype
    Scratch buf(*this, static_cast<size_t>(in.numel()) * dtype_size(out.dtype));
    TensorArg tmp = scratch_arg(buf, out.dtype, in.shape);
    copy(tmp, in);
    return reduce(op, out, tmp, p0);
  }
  KILN_CHECK(!(op == ReduceOp::mean || op == ReduceOp::var) || is_floating(in.dtype), DTypeError, name,
             ": input must be floating point on ", this->name(), ", got ", dtype_name(in.dtype));
  Shape ks, rs;
  Strides kis, kos, ris;
  for (size_t d = 0; d < rank; ++d) {
    if (out.shape[d] == 1 && in.shape[d] != 1) rs.push_back(in.shape[d]), ris.push_back(in.strides[d]);
    else ks.push_back(out.shape[d]), kis.push_back(in.strides[d]), kos.push_back(out.strides[d]);
  }
  const int64_t R = numel(rs), M = numel(ks);
  if (R == 0) {
    switch (op) {
      case ReduceOp::sum: return fill(out, 0.0);
      case ReduceOp::prod: return fill(out, 1.0);
      case ReduceOp::mean: case ReduceOp::var: return fill(out, std::numeric_limits<double>::quiet_NaN());
      default:
        throw IndexError(detail::str_cat(name, ": cannot reduce over a dimension of size 0 (input shape ",
                                         shape_str(in.shape), ")"));
    }
  }
  const Indexer<2> kept = make_indexer<2>(name, ks, {&kis, &kos});
  const Indexer<1> red = make_indexer<1>(name, rs, {&ris});
  const int sms = prop_.multiProcessorCount;
  const cudaStream_t s = stream_;
  KILN_CUDA_DISPATCH_ALL(in.dtype, name, {
    switch (op) {
      case ReduceOp::sum: launch_reduce<T, ReduceOp::sum>(s, M, R, kept, red, in, out, p0, sms); break;
      case ReduceOp::prod: launch_reduce<T, ReduceOp::prod>(s, M, R, kept, red, in, out, p0, sms); break;
      case ReduceOp::max: launch_reduce<T, ReduceOp::max>(s, M, R, kept, red, in, out, p0, sms); break;
      case ReduceOp::min: launch_reduce<T, ReduceOp::min>(s, M, R, kept, red, in, out, p0, sms); break;
      case ReduceOp::argmax: launch_reduce<T, ReduceOp::argmax>(s, M, R, kept, red, in, out, p0, sms); break;
      case ReduceOp::argmin: launch_reduce<T, ReduceOp::argmin>(s, M, R, kept, red, in, out, p0, sms); break;
      case ReduceOp::mean:
        if constexpr (is_float_v<T>) launch_reduce<T, ReduceOp::mean>(s, M, R, kept, red, in, out, p0, sms);
        break;
      case ReduceOp::var:
        if constexpr (is_float_v<T>) launch_reduce<T, ReduceOp::var>(s, M, R, kept, red, in, out, p0, sms);
        break;
      case ReduceOp::count: throw ValueError("reduce: unknown op");
    }
  });
  check_launch(name, in.shape);
}

}  // namespace kiln::cuda
