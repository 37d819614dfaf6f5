// CudaBackend::matmul through cuBLAS (cublasGemmStridedBatchedEx). Row-major
// out[M, N] = a[M, K] @ b[K, N] is computed as column-major out^T = b^T a^T, so a row-major
// operand is a non-transposed column-major one and a transposed view (unit row stride)
// is a transposed one: no copies for either. Batch dims coalesce to one batch stride per
// operand where they can; other batch layouts loop on the host; operands whose inner
// strides cuBLAS cannot express are copied to contiguous scratch first. f32 computes in
// f32 (TF32 tensor cores only when allowed), f16/bf16 on tensor cores accumulating in f32,
// f64 in f64. The HIP build (no hipBLAS on Debian 12) and KILN_CUDA_MATMUL=kiln run our
// own tiled GEMM instead (gemm.cu), which takes every stride as it is.
#if !defined(KILN_HIP)
#include <cublas_v2.h>
#endif

#include <cstdlib>
#include <cstring>
#include <optional>

#include "backends/cuda/common.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/profile.h"
#include "backends/cuda/gemm.h"

namespace kiln::cuda {
namespace {

// True when matmul runs gemm.cu instead of cuBLAS.
bool own_gemm() {
#if defined(KILN_HIP)
  return true;
#else
  static const bool forced = [] {
    const char* e = std::getenv("KILN_CUDA_MATMUL");
    return e && std::strcmp(e, "kiln") == 0;
  }();
  return forced;
#endif
}

#if !defined(KILN_HIP)

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

void check_blas(cublasStatus_t st, const char* what, const std::string& shapes) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  throw DeviceError(detail::str_cat(KILN_GPU_NAME, ": matmul ", shapes, ": ", what, " failed: ",
                                    cublasGetStatusName(st), " (", cublasGetStatusString(st), ")"));
}

// A row-major [rows, cols] matrix as cuBLAS sees it (see the top of the file).
struct Mat {
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 0;
};

// `want_rows` is the leading dimension's lower bound for the non-transposed view.
std::optional<Mat> describe(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 || cols == 1) {  // row-major: column-major [cols, rows] with ld = row stride
    const int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    if (ld >= std::max<int64_t>(cols, 1)) return Mat{CUBLAS_OP_N, ld};
  }
  if (rs == 1 || rows == 1) {  // column-major [rows, cols] with ld = column stride: transposed
    const int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    if (ld >= std::max<int64_t>(rows, 1)) return Mat{CUBLAS_OP_T, ld};
  }
  return std::nullopt;
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f64: return CUDA_R_64F;
    default: break;
  }
  throw DTypeError(detail::str_cat("matmul: dtype ", dtype_name(t), " is not supported on the CUDA backend (f32, f16, ",
                                   "bf16, f64)"));
}

int to_int(int64_t v, const char* what, const std::string& shapes) {
  KILN_CHECK(v >= 0 && v <= 0x7fffffff, ShapeError, "matmul ", shapes, ": ", what, " ", v,
             " exceeds cuBLAS's 32-bit limit");
  return static_cast<int>(v);
}

#endif  // !KILN_HIP

}  // namespace

#if defined(KILN_HIP)
void* CudaBackend::blas_handle() { return nullptr; }  // no vendor BLAS: gemm.cu
#else
void* CudaBackend::blas_handle() {
  if (cublas_) return cublas_;
  make_current();
  cublasHandle_t h = nullptr;
  check_blas(cublasCreate(&h), "cublasCreate", name());
  check_blas(cublasSetStream(h, stream_), "cublasSetStream", name());
  blas_workspace_ = alloc_.allocate(kWorkspaceBytes);  // held for the backend's life
  check_blas(cublasSetWorkspace(h, blas_workspace_, kWorkspaceBytes), "cublasSetWorkspace", name());
  cublas_ = h;
  return cublas_;
}
#endif

void CudaBackend::matmul(const TensorArg& out, const TensorArg& a_in, const TensorArg& b_in) {
  ProfileScope prof_(stream_, "matmul", a_in);
  const size_t r = out.shape.size();
  const std::string shapes = args_str({&a_in, &b_in});
  KILN_CHECK(r >= 2 && a_in.shape.size() == r && b_in.shape.size() == r, ShapeError, "matmul: operands ", shapes,
             " and output ", shape_str(out.shape), " must have one rank >= 2");
  const int64_t M = out.shape[r - 2], N = out.shape[r - 1], K = a_in.shape[r - 1];
  KILN_CHECK(a_in.shape[r - 2] == M && b_in.shape[r - 2] == K && b_in.shape[r - 1] == N, ShapeError, "matmul: operands ",
             shapes, " do not give output ", shape_str(out.shape));
  for (size_t d = 0; d + 2 < r; ++d)
    KILN_CHECK(a_in.shape[d] == out.shape[d] && b_in.shape[d] == out.shape[d], ShapeError, "matmul: batch dims of ",
               shapes, " must equal the output's ", shape_str(out.shape));
  KILN_CHECK(a_in.dtype == out.dtype && b_in.dtype == out.dtype, DTypeError, "matmul: operands ", shapes,
             " and output ", dtype_name(out.dtype), " must share a dtype");
  if (own_gemm()) {
    make_current();
    return gemm("matmul", stream_, out, a_in, b_in);
  }
#if !defined(KILN_HIP)
  const cudaDataType_t dt = cuda_type(out.dtype);
  if (out.numel() == 0) return;
  if (K == 0) return fill(out, 0.0);
  make_current();
  auto h = static_cast<cublasHandle_t>(blas_handle());

  // Operands cuBLAS cannot address as they are go through contiguous scratch.
  std::optional<Scratch> a_buf, b_buf, c_buf;
  TensorArg a = a_in, b = b_in, c = out;
  auto inner = [&](const TensorArg& t, int64_t rows, int64_t cols) {
    return describe(rows, cols, t.strides[r - 2], t.strides[r - 1]);
  };
  auto contiguous_copy = [&](const TensorArg& t, std::optional<Scratch>& buf) {
    buf.emplace(*this, static_cast<size_t>(t.numel()) * dtype_size(t.dtype));
    TensorArg c2 = scratch_arg(*buf, t.dtype, t.shape);
    copy(c2, t);
    return c2;
  };
  if (!inner(a, M, K)) a = contiguous_copy(a, a_buf);
  if (!inner(b, K, N)) b = contiguous_copy(b, b_buf);
  const bool c_ok = (c.strides[r - 1] == 1 || N == 1) && (M == 1 || c.strides[r - 2] >= N);
  if (!c_ok) {
    c_buf.emplace(*this, static_cast<size_t>(out.numel()) * dtype_size(out.dtype));
    c = scratch_arg(*c_buf, out.dtype, out.shape);
  }
  const Mat ma = *inner(a, M, K), mb = *inner(b, K, N);
  const int64_t ldc = M == 1 ? N : c.strides[r - 2];

  // Batch dims: the innermost coalesced one is cuBLAS's batch, the others loop here.
  Shape batch(out.shape.begin(), out.shape.end() - 2);
  Strides sa(a.strides.begin(), a.strides.end() - 2), sb(b.strides.begin(), b.strides.end() - 2),
      sc(c.strides.begin(), c.strides.end() - 2);
  const Indexer<3> bix = make_indexer<3>("matmul", batch, {&sc, &sa, &sb});
  const int64_t count = bix.ndim ? bix.size[bix.ndim - 1] : 1;
  const int64_t bsc = bix.ndim ? bix.stride[0][bix.ndim - 1] : 0, bsa = bix.ndim ? bix.stride[1][bix.ndim - 1] : 0,
                bsb = bix.ndim ? bix.stride[2][bix.ndim - 1] : 0;
  const int64_t outer = numel(batch) / std::max<int64_t>(count, 1);

  const size_t es = dtype_size(out.dtype);
  const bool f64 = out.dtype == DType::f64;
  const cublasComputeType_t ct = f64 ? CUBLAS_COMPUTE_64F
                                 : (out.dtype == DType::f32 && allow_tf32_) ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                            : CUBLAS_COMPUTE_32F;
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  const int m = to_int(N, "N", shapes), n = to_int(M, "M", shapes), k = to_int(K, "K", shapes);
  const int lda = to_int(mb.ld, "leading dimension", shapes), ldb = to_int(ma.ld, "leading dimension", shapes);
  const int ldc_i = to_int(ldc, "leading dimension", shapes), cnt = to_int(count, "batch count", shapes);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off_c = 0, off_a = 0, off_b = 0, rest = o;  // outer batch position over dims [0, ndim-1)
    for (int d = bix.ndim - 2; d >= 0; --d) {
      const int64_t i = rest % bix.size[d];
      rest /= bix.size[d];
      off_c += i * bix.stride[0][d], off_a += i * bix.stride[1][d], off_b += i * bix.stride[2][d];
    }
    const char* pa = static_cast<const char*>(a.data) + (a.offset + off_a) * es;
    const char* pb = static_cast<const char*>(b.data) + (b.offset + off_b) * es;
    char* pc = static_cast<char*>(c.data) + (c.offset + off_c) * es;
    check_blas(cublasGemmStridedBatchedEx(h, mb.op, ma.op, m, n, k, alpha, pb, dt, lda, bsb, pa, dt, ldb, bsa, beta, pc,
                                          dt, ldc_i, bsc, cnt, ct, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx", shapes);
  }
  if (c_buf) copy(out, c);
#endif
}

}  // namespace kiln::cuda
