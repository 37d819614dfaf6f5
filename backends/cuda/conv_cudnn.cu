// conv2d through cuDNN's convolution API (cudnnConvolutionForward, BackwardData,
// BackwardFilter; bias through cudnnAddTensor). One plan per shape, dtype and TF32
// setting: descriptors and the fastest algorithms (timed by cudnnFind*Algorithm, the median of
// three searches: ranked(); PyTorch with cudnn.benchmark on searches once; KILN_CUDNN_FIND=0 takes the ones cuDNN's heuristics rank
// first, cudnnGet*Algorithm_v7) among those whose workspace fits 1 GiB; f32 runs with CUDNN_FMA_MATH (no TF32) unless TF32 is allowed, f16/bf16 on tensor
// cores. Errors carry cuDNN's string, the op and the shapes. KILN_CUDNN_VERBOSE=1 prints each
// new plan's ranking and choice to stderr.
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "backends/cuda/common.cuh"
#include "backends/cuda/conv.h"

namespace kiln::cuda {

namespace {
constexpr size_t kMaxWorkspace = size_t{1} << 30;

std::string geom_str(const ConvGeom& g) {
  return detail::str_cat("input [", g.N, ", ", g.C, ", ", g.H, ", ", g.W, "], weight [", g.K, ", ", g.C / g.p.groups,
                         ", ", g.kH, ", ", g.kW, "]");
}

void check_dnn(cudnnStatus_t st, const char* what, const ConvGeom& g) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  throw DeviceError(detail::str_cat("cuda: conv2d ", geom_str(g), ": ", what, " failed: ", cudnnGetErrorString(st)));
}

cudnnDataType_t dnn_type(DType t) {
  switch (t) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::f64: return CUDNN_DATA_DOUBLE;
    default: break;
  }
  throw DTypeError(detail::str_cat("conv2d: dtype ", dtype_name(t), " is not supported on the CUDA backend"));
}

struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool have_fwd = false, have_bd = false, have_bf = false;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bd{};
  cudnnConvolutionBwdFilterAlgo_t bf{};
  size_t fwd_ws = 0, bd_ws = 0, bf_ws = 0;
  // The math type each chosen algorithm was ranked with: the three directions share one
  // convolution descriptor, so each call sets its own before it runs (as PyTorch does with the
  // perf result's mathType).
  cudnnMathType_t fwd_math = CUDNN_DEFAULT_MATH, bd_math = CUDNN_DEFAULT_MATH, bf_math = CUDNN_DEFAULT_MATH;
};

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int, bool>;

// KILN_CUDNN_FIND=0: take the algorithm cuDNN's heuristics rank first; otherwise (default)
// time them per shape (cudnnFind*, as torch.backends.cudnn.benchmark) and take the fastest
// (ranked(): one search to load the candidates' kernels, CUDA loading modules lazily, then
// kTimedSearches whose median time per algorithm ranks them: cudnnFind times each algorithm
// once, and on the H200 a single search picked a 3x slower kernel for a small bf16 conv in
// some runs, which moved ResNet-18's step time by 50% from run to run).
bool find() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_CUDNN_FIND");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

constexpr int kTimedSearches = 3;

// The candidates of one direction, best first, in perf[0, returned count): the heuristics'
// ranking, or the timed searches' (algorithm, math type) pairs that ran, by median time.
// search(perf, &n) runs cudnnGet*_v7 or cudnnFind* into perf.
template <class Perf, class Search>
int ranked(Search search, Perf* perf, int capacity) {
  int n = 0;
  search(perf, &n);
  if (!find()) return n;
  std::map<std::pair<int, int>, std::pair<Perf, std::vector<float>>> seen;  // (algo, math) -> perf, times
  for (int pass = 0; pass < kTimedSearches; ++pass) {
    search(perf, &n);
    for (int i = 0; i < n; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      auto& [first, times] = seen[{static_cast<int>(perf[i].algo), static_cast<int>(perf[i].mathType)}];
      if (times.empty()) first = perf[i];
      times.push_back(perf[i].time);
    }
  }
  std::vector<Perf> out;
  for (auto& [key, entry] : seen) {
    std::vector<float>& t = entry.second;
    std::sort(t.begin(), t.end());
    entry.first.time = t[t.size() / 2];
    out.push_back(entry.first);
  }
  std::sort(out.begin(), out.end(), [](const Perf& a, const Perf& b) { return a.time < b.time; });
  n = std::min(static_cast<int>(out.size()), capacity);
  std::copy(out.begin(), out.begin() + n, perf);
  return n;
}

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_CUDNN_VERBOSE");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

template <class Perf>
void print_ranking(const char* what, const ConvGeom& g, DType t, const Perf* perf, int n, const Perf* chosen) {
  if (!verbose()) return;
  std::fprintf(stderr, "cudnn %s %s %s:", what, geom_str(g).c_str(), dtype_name(t));
  for (int i = 0; i < n; ++i)
    std::fprintf(stderr, " [algo %d %s %.3f ms %zu B math %d]", static_cast<int>(perf[i].algo),
                 perf[i].status == CUDNN_STATUS_SUCCESS ? "ok" : "failed", perf[i].time, perf[i].memory,
                 static_cast<int>(perf[i].mathType));
  std::fprintf(stderr, " -> %d\n", chosen ? static_cast<int>(chosen->algo) : -1);
}

// The first ranked algorithm that ran in the heuristics and whose workspace fits.
template <class Perf>
const Perf* pick(const Perf* perf, int n, bool fma_only) {
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspace &&
        (!fma_only || perf[i].mathType == CUDNN_FMA_MATH))
      return &perf[i];
  return nullptr;
}
}  // namespace

struct ConvState {
  cudnnHandle_t handle = nullptr;
  std::map<Key, Plan> plans;
};
void ConvStateDeleter::operator()(ConvState* s) const { delete s; }

ConvState& conv_state(CudaBackend& be) {
  if (!be.conv_) {
    auto s = std::unique_ptr<ConvState, ConvStateDeleter>(new ConvState);
    cudnnStatus_t st = cudnnCreate(&s->handle);
    if (st != CUDNN_STATUS_SUCCESS)
      throw DeviceError(be.name() + ": cudnnCreate failed: " + cudnnGetErrorString(st));
    cudnnSetStream(s->handle, be.stream());
    be.conv_ = std::move(s);
  }
  return *be.conv_;
}

namespace {
Plan& plan_for(CudaBackend& be, const ConvGeom& g, DType t) {
  ConvState& s = conv_state(be);
  const bool tf32 = be.allow_tf32() && t == DType::f32;
  const Key key{g.N, g.C, g.H, g.W, g.K, g.kH, g.kW, g.p.stride[0], g.p.stride[1], g.p.padding[0], g.p.padding[1],
                g.p.dilation[0], g.p.dilation[1], g.p.groups, static_cast<int>(t), tf32};
  auto it = s.plans.find(key);
  if (it != s.plans.end()) return it->second;
  Plan p;
  const cudnnDataType_t dt = dnn_type(t);
  auto to_i = [&](int64_t v) {
    KILN_CHECK(v <= 0x7fffffff, ShapeError, "conv2d ", geom_str(g), ": size ", v, " exceeds cuDNN's 32-bit limit");
    return static_cast<int>(v);
  };
  check_dnn(cudnnCreateTensorDescriptor(&p.x), "cudnnCreateTensorDescriptor", g);
  check_dnn(cudnnCreateTensorDescriptor(&p.y), "cudnnCreateTensorDescriptor", g);
  check_dnn(cudnnCreateTensorDescriptor(&p.b), "cudnnCreateTensorDescriptor", g);
  check_dnn(cudnnCreateFilterDescriptor(&p.w), "cudnnCreateFilterDescriptor", g);
  check_dnn(cudnnCreateConvolutionDescriptor(&p.conv), "cudnnCreateConvolutionDescriptor", g);
  check_dnn(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, dt, to_i(g.N), to_i(g.C), to_i(g.H), to_i(g.W)),
            "input descriptor", g);
  check_dnn(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, dt, to_i(g.N), to_i(g.K), to_i(g.Ho), to_i(g.Wo)),
            "output descriptor", g);
  check_dnn(cudnnSetTensor4dDescriptor(p.b, CUDNN_TENSOR_NCHW, dt, 1, to_i(g.K), 1, 1), "bias descriptor", g);
  check_dnn(cudnnSetFilter4dDescriptor(p.w, dt, CUDNN_TENSOR_NCHW, to_i(g.K), to_i(g.C / g.p.groups), to_i(g.kH),
                                       to_i(g.kW)),
            "weight descriptor", g);
  check_dnn(cudnnSetConvolution2dDescriptor(p.conv, to_i(g.p.padding[0]), to_i(g.p.padding[1]), to_i(g.p.stride[0]),
                                            to_i(g.p.stride[1]), to_i(g.p.dilation[0]), to_i(g.p.dilation[1]),
                                            CUDNN_CROSS_CORRELATION,
                                            t == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
            "convolution descriptor", g);
  check_dnn(cudnnSetConvolutionGroupCount(p.conv, to_i(g.p.groups)), "group count", g);
  const bool fma_only = t == DType::f32 && !tf32;
  check_dnn(cudnnSetConvolutionMathType(p.conv, fma_only ? CUDNN_FMA_MATH
                                                 : t == DType::f32 ? CUDNN_DEFAULT_MATH
                                                                   : CUDNN_TENSOR_OP_MATH),
            "math type", g);
  cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int n = ranked(
      [&](cudnnConvolutionFwdAlgoPerf_t* perf, int* count) {
        constexpr int cap = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
        check_dnn(find() ? cudnnFindConvolutionForwardAlgorithm(s.handle, p.x, p.w, p.conv, p.y, cap, count, perf)
                         : cudnnGetConvolutionForwardAlgorithm_v7(s.handle, p.x, p.w, p.conv, p.y, cap, count, perf),
                  "forward algorithm", g);
      },
      fp, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  const auto* f = pick(fp, n, fma_only);
  if (!f && fma_only) f = pick(fp, n, false);
  print_ranking("forward", g, t, fp, n, f);
  if (f) p.have_fwd = true, p.fwd = f->algo, p.fwd_ws = f->memory, p.fwd_math = f->mathType;
  cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  n = ranked(
      [&](cudnnConvolutionBwdDataAlgoPerf_t* perf, int* count) {
        constexpr int cap = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
        check_dnn(find() ? cudnnFindConvolutionBackwardDataAlgorithm(s.handle, p.w, p.y, p.conv, p.x, cap, count, perf)
                         : cudnnGetConvolutionBackwardDataAlgorithm_v7(s.handle, p.w, p.y, p.conv, p.x, cap, count, perf),
                  "backward-data algorithm", g);
      },
      dp, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  const auto* d = pick(dp, n, fma_only);
  if (!d && fma_only) d = pick(dp, n, false);
  print_ranking("backward-data", g, t, dp, n, d);
  if (d) p.have_bd = true, p.bd = d->algo, p.bd_ws = d->memory, p.bd_math = d->mathType;
  cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  n = ranked(
      [&](cudnnConvolutionBwdFilterAlgoPerf_t* perf, int* count) {
        constexpr int cap = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
        check_dnn(find() ? cudnnFindConvolutionBackwardFilterAlgorithm(s.handle, p.x, p.y, p.conv, p.w, cap, count, perf)
                         : cudnnGetConvolutionBackwardFilterAlgorithm_v7(s.handle, p.x, p.y, p.conv, p.w, cap, count, perf),
                  "backward-filter algorithm", g);
      },
      wp, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  const auto* w = pick(wp, n, fma_only);
  if (!w && fma_only) w = pick(wp, n, false);
  print_ranking("backward-filter", g, t, wp, n, w);
  if (w) p.have_bf = true, p.bf = w->algo, p.bf_ws = w->memory, p.bf_math = w->mathType;
  return s.plans.emplace(key, p).first->second;
}

struct Scalars {
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  bool dbl;
  const void* one() const { return dbl ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return dbl ? static_cast<const void*>(&d0) : &f0; }
};
}  // namespace

void cudnn_conv_forward(CudaBackend& be, const ConvGeom& g, const TensorArg& out, const TensorArg& in,
                        const TensorArg& w, const TensorArg& bias) {
  Plan& p = plan_for(be, g, in.dtype);
  if (!p.have_fwd) return im2col_conv_forward(be, g, out, in, w, bias);
  cudnnHandle_t h = conv_state(be).handle;
  check_dnn(cudnnSetConvolutionMathType(p.conv, p.fwd_math), "math type", g);
  const Scalars s{.dbl = in.dtype == DType::f64};
  Scratch ws(be, p.fwd_ws);
  const size_t es = dtype_size(in.dtype);
  check_dnn(cudnnConvolutionForward(h, s.one(), p.x, static_cast<const char*>(in.data) + in.offset * es, p.w,
                                    static_cast<const char*>(w.data) + w.offset * es, p.conv, p.fwd, ws.get(),
                                    p.fwd_ws, s.zero(), p.y, static_cast<char*>(out.data) + out.offset * es),
            "cudnnConvolutionForward", g);
  if (bias.data) {
    std::optional<Scratch> bb;
    TensorArg b = bias;
    if (!bias.is_contiguous()) {
      bb.emplace(be, g.K * dtype_size(bias.dtype));
      b = scratch_arg(*bb, bias.dtype, bias.shape);
      be.copy(b, bias);
    }
    check_dnn(cudnnAddTensor(h, s.one(), p.b, static_cast<const char*>(b.data) + b.offset * dtype_size(b.dtype),
                             s.one(), p.y, static_cast<char*>(out.data) + out.offset * dtype_size(out.dtype)),
              "cudnnAddTensor (bias)", g);
  }
}

void cudnn_conv_backward_input(CudaBackend& be, const ConvGeom& g, const TensorArg& gx, const TensorArg& gy,
                               const TensorArg& w) {
  Plan& p = plan_for(be, g, gx.dtype);
  if (!p.have_bd) return im2col_conv_backward_input(be, g, gx, gy, w);
  check_dnn(cudnnSetConvolutionMathType(p.conv, p.bd_math), "math type", g);
  const Scalars s{.dbl = gx.dtype == DType::f64};
  Scratch ws(be, p.bd_ws);
  const size_t es = dtype_size(gx.dtype);
  check_dnn(cudnnConvolutionBackwardData(conv_state(be).handle, s.one(), p.w,
                                         static_cast<const char*>(w.data) + w.offset * es, p.y,
                                         static_cast<const char*>(gy.data) + gy.offset * es, p.conv, p.bd, ws.get(),
                                         p.bd_ws, s.zero(), p.x, static_cast<char*>(gx.data) + gx.offset * es),
            "cudnnConvolutionBackwardData", g);
}

void cudnn_conv_backward_weight(CudaBackend& be, const ConvGeom& g, const TensorArg& gw, const TensorArg& gy,
                                const TensorArg& in) {
  Plan& p = plan_for(be, g, gw.dtype);
  if (!p.have_bf) return im2col_conv_backward_weight(be, g, gw, gy, in);
  check_dnn(cudnnSetConvolutionMathType(p.conv, p.bf_math), "math type", g);
  const Scalars s{.dbl = gw.dtype == DType::f64};
  Scratch ws(be, p.bf_ws);
  const size_t es = dtype_size(gw.dtype);
  check_dnn(cudnnConvolutionBackwardFilter(conv_state(be).handle, s.one(), p.x,
                                           static_cast<const char*>(in.data) + in.offset * es, p.y,
                                           static_cast<const char*>(gy.data) + gy.offset * es, p.conv, p.bf, ws.get(),
                                           p.bf_ws, s.zero(), p.w, static_cast<char*>(gw.data) + gw.offset * es),
            "cudnnConvolutionBackwardFilter", g);
}

}  // namespace kiln::cuda
