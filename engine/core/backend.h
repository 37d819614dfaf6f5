// The Backend interface: everything a device must do for the engine to run on it.
//
// One Backend object serves one device. The front end (ops.h) has already
// checked shapes and dtypes, computed output shapes, broadcast inputs (stride 0)
// and allocated outputs, so a backend only runs kernels. Every method may throw
// kiln::Error (DTypeError for a dtype it does not support, DeviceError for a
// device failure) naming the op and shapes. Methods marked (optional) have a
// default that throws DTypeError; `supports()` must say truthfully which
// (op, dtype) pairs run, down to the sub-op (which UnaryOp, BinaryOp, ReduceOp):
// the front end checks it before each elementwise or reduce kernel, and the
// conformance suite reports coverage from it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/dtype.h"
#include "engine/core/nn_params.h"
#include "engine/core/shape.h"

namespace kiln {

// A strided view of device memory as a kernel sees it.
struct TensorArg {
  void* data = nullptr;  // the buffer's base (a host pointer on the CPU backend)
  int64_t offset = 0;    // in elements, from data
  DType dtype = DType::f32;
  Shape shape;
  Strides strides;       // in elements; 0 for broadcast dimensions
  int64_t numel() const { return kiln::numel(shape); }
  bool is_contiguous() const;
};

// One enumerator per row of engine/core/elementwise_ops.def, in its order.
enum class UnaryOp : uint8_t {
#define KILN_UNARY_OP(name, real, grad, saves, plain) name,
#include "engine/core/elementwise_ops.def"
  count
};
enum class BinaryOp : uint8_t {
#define KILN_BINARY_OP(name, compare, grad) name,
#include "engine/core/elementwise_ops.def"
  count
};
enum class ReduceOp : uint8_t {
  sum, mean, prod, max, min, argmax, argmin,  // argmax/argmin output i64 (first index of the extremum)
  var,  // p0 = correction (1 = unbiased, as torch.var's default)
  count
};

const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);
const char* reduce_op_name(ReduceOp op);
bool is_comparison(BinaryOp op);  // output dtype is bool (the def's `compare`)
// Ops defined on real numbers only (the def's `real`: exp, log, sqrt, tanh, sigmoid, gelu, erf
// ...): integer and bool inputs compute in floating point, as PyTorch promotes them.
bool is_floating_only(UnaryOp op);

// Every operation a backend can be asked about in supports().
enum class OpId : uint16_t {
  copy, fill, unary, binary, where, reduce, matmul,
  conv2d_forward, conv2d_backward_input, conv2d_backward_weight,
  max_pool2d_forward, max_pool2d_backward, avg_pool2d_forward, avg_pool2d_backward,
  softmax_forward, softmax_backward, gather, scatter_add, index_select, index_add,
  adam_step, batch_norm_forward, batch_norm_backward,
  qconv2d_forward, qlinear_forward,  // int8 inference (dtype asked: u8, the input's)
  relu_backward,
  bernoulli,  // floating outputs
  fake_quantize,  // quantization-aware training (dtype asked: the input's)
  conv2d_fused_forward,  // inference conv2d with its epilogue (ConvEpilogue); dtype asked: the input's
  count
};
const char* op_id_name(OpId op);

// Hyper-parameters of one Adam/AdamW step (torch.optim.Adam / AdamW, amsgrad off).
struct AdamParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool decoupled = false;  // AdamW: decay the weight directly, not through the gradient
  int64_t step = 1;        // 1-based step count, for bias correction
};

// The quantization of an int8 conv2d or linear (engine/quant/scheme.h): input u8 with
// real = in_scale * (q - in_zero_point); weight s8, symmetric per output channel, real =
// weight_scales[c] * q; bias s32 at scale in_scale * weight_scales[c]. With the s32 accumulator
//   acc[c] = sum (q_in - in_zero_point) * q_w + q_bias[c]
// the output is y = in_scale * weight_scales[c] * acc[c], then max(y, 0) when relu, then
// for an f32 output y itself, for a u8 output clamp(round_half_even(y / out_scale) + out_zero_point, 0, 255).
struct QuantizedParams {
  float in_scale = 1;       // > 0
  int32_t in_zero_point = 0;  // [0, 255]
  std::vector<float> weight_scales;  // one per output channel, > 0
  bool relu = false;
  float out_scale = 1;      // u8 output only, > 0
  int32_t out_zero_point = 0;  // u8 output only, [0, 255]
};

// What the registry shows about a device.
struct DeviceInfo {
  Device device;
  std::string name;          // "AMD EPYC 9B14 (2 threads)", "NVIDIA H200"
  std::string kind;          // "cpu", "discrete GPU", "integrated GPU", "software"
  uint64_t memory_bytes = 0; // device memory (system RAM for the CPU)
  int compute_units = 0;     // threads, SMs or CUs
  double score = 0;          // higher is better; the registry picks the best
};

// Memory statistics of a device's caching allocator, in bytes.
struct MemoryStats {
  uint64_t allocated = 0;       // held by live tensors
  uint64_t reserved = 0;        // held by the allocator (live + cached)
  uint64_t peak_allocated = 0;
  bool tracked = true;  // false: the backend cannot tell (Backend's default memory_stats())
};

class Backend {
 public:
  explicit Backend(Device device) : device_(device) {}
  virtual ~Backend() = default;
  const Device& device() const { return device_; }
  virtual DeviceInfo info() const = 0;  // may be slow (queries the system); device() is not

  // ---- what runs here ----
  // Whether `op` runs on this device for inputs of `dtype` (after the front end's promotion;
  // for logical_not, the input's own dtype). For OpId::unary, binary and reduce, `sub_op`
  // (a UnaryOp, BinaryOp or ReduceOp as int) narrows the question to one of them, and
  // kEverySubOp asks whether every one of them runs; other ops ignore it.
  static constexpr int kEverySubOp = -1;
  bool supports(OpId op, DType dtype, int sub_op = kEverySubOp) const { return supports_op(op, dtype, sub_op); }
  bool supports(UnaryOp op, DType dtype) const { return supports_op(OpId::unary, dtype, static_cast<int>(op)); }
  bool supports(BinaryOp op, DType dtype) const { return supports_op(OpId::binary, dtype, static_cast<int>(op)); }
  bool supports(ReduceOp op, DType dtype) const { return supports_op(OpId::reduce, dtype, static_cast<int>(op)); }

  // ---- memory (bytes) ----
  virtual void* allocate(size_t nbytes) = 0;            // throws DeviceError on out-of-memory
  virtual void deallocate(void* data, size_t nbytes) = 0;
  virtual void upload(void* dst, size_t dst_byte_offset, const void* host, size_t nbytes) = 0;
  virtual void download(void* host, const void* src, size_t src_byte_offset, size_t nbytes) = 0;
  virtual void synchronize() {}
  virtual MemoryStats memory_stats() const {
    MemoryStats unknown;
    unknown.tracked = false;
    return unknown;
  }
  virtual void empty_cache() {}
  // Reading back without waiting for later work: read_async starts copying nbytes from src
  // (at src_byte_offset) to the host, in order after the work enqueued so far, and returns a
  // ticket at once; read_wait(ticket, host) waits for that copy only, not for work enqueued
  // after it, and writes the bytes to host. So a training loop reads step k's loss while step
  // k + 1 runs (engine/core/async_read.h, engine/train/trainer.cpp). Each ticket is waited for
  // once. The default copies at once (download) and keeps the bytes until read_wait; a backend
  // with a stream overrides both (CUDA: page-locked buffers and an event per read). DeviceError
  // for an unknown or already read ticket, or a read_async while work is being recorded.
  virtual int64_t read_async(const void* src, size_t src_byte_offset, size_t nbytes);
  virtual void read_wait(int64_t ticket, void* host);

  // ---- profiling (optional) ----
  // Device time of the work enqueued between begin_timing() and end_timing(), read from
  // the device's own clock (Vulkan timestamp queries, CUDA events). begin_timing() returns false when
  // the device cannot time its work (no timestamps; the default): the caller then times on
  // the host and says so. end_timing() waits for the work and returns seconds (0 unless a
  // begin_timing() returned true).
  virtual bool begin_timing() { return false; }
  virtual double end_timing() { return 0; }

  // ---- elementwise (out and inputs have out's shape; inputs may have stride 0) ----
  virtual void copy(const TensorArg& out, const TensorArg& in) = 0;  // converts dtype too
  virtual void fill(const TensorArg& out, double value) = 0;
  virtual void unary(UnaryOp op, const TensorArg& out, const TensorArg& in, double p0, double p1) = 0;
  // a and b share a dtype; out has it too, or bool for comparisons and logical ops.
  virtual void binary(BinaryOp op, const TensorArg& out, const TensorArg& a, const TensorArg& b) = 0;
  virtual void where(const TensorArg& out, const TensorArg& cond, const TensorArg& a, const TensorArg& b) = 0;

  // ---- reductions: out has in's rank with size 1 in every reduced dimension ----
  virtual void reduce(ReduceOp op, const TensorArg& out, const TensorArg& in, double p0) = 0;

  // ---- linear algebra ----
  // out[..., M, N] = a[..., M, K] @ b[..., K, N]; batch dims already broadcast; any strides
  // (a transposed operand is a stride pattern).
  virtual void matmul(const TensorArg& out, const TensorArg& a, const TensorArg& b) = 0;

  // ---- fused neural-network ops (contiguous NCHW inputs) ----
  // out [N, Cout, Ho, Wo] = conv2d(in [N, Cin, H, W], weight [Cout, Cin/groups, kH, kW]) + bias [Cout]
  // (bias.data may be null).
  virtual void conv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                              const TensorArg& bias, const Conv2dParams& p) = 0;
  virtual void conv2d_backward_input(const TensorArg& grad_in, const TensorArg& grad_out,
                                     const TensorArg& weight, const Conv2dParams& p) = 0;
  // grad_bias.data may be null when bias is absent.
  virtual void conv2d_backward_weight(const TensorArg& grad_weight, const TensorArg& grad_bias,
                                      const TensorArg& grad_out, const TensorArg& in,
                                      const Conv2dParams& p) = 0;
  // indices (i64, out's shape) hold the flat h*W+w position of each maximum in its plane.
  virtual void max_pool2d_forward(const TensorArg& out, const TensorArg& indices, const TensorArg& in,
                                  const Pool2dParams& p) = 0;
  virtual void max_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out,
                                   const TensorArg& indices) = 0;
  virtual void avg_pool2d_forward(const TensorArg& out, const TensorArg& in, const Pool2dParams& p) = 0;
  virtual void avg_pool2d_backward(const TensorArg& grad_in, const TensorArg& grad_out, const Pool2dParams& p) = 0;
  // Along `dim` of a contiguous tensor; log selects log_softmax.
  virtual void softmax_forward(const TensorArg& out, const TensorArg& in, int64_t dim, bool log) = 0;
  virtual void softmax_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out,
                                int64_t dim, bool log) = 0;

  // ---- index ops (index is i64; positions are checked by the backend, IndexError) ----
  // out[i][j][k] = in[index[i][j][k]][j][k] for dim 0 (torch.gather)
  virtual void gather(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) = 0;
  // out[index[i][j][k]][j][k] += src[i][j][k] for dim 0 (torch.Tensor.scatter_add_)
  virtual void scatter_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) = 0;
  // out = in.index_select(dim, index) for a 1-d index
  virtual void index_select(const TensorArg& out, const TensorArg& in, int64_t dim, const TensorArg& index) = 0;
  // out.index_add_(dim, index, src)
  virtual void index_add(const TensorArg& out, int64_t dim, const TensorArg& index, const TensorArg& src) = 0;

  // ---- batch normalization in training mode (optional; the front end decomposes it into
  // reductions and elementwise ops where a backend lacks it: engine/nn/functional.cpp) ----
  // x and y: contiguous [N, C, *] of dtype T (y has x's); every per-channel tensor is a
  // contiguous f32 [C]. Over N and *: mean and biased variance var; writes
  // save_mean = mean, save_invstd = 1 / sqrt(var + eps), y = (x - mean) * save_invstd * weight + bias
  // (weight.data null: 1; bias.data null: 0), and, where running_mean.data / running_var.data
  // are not null, running = (1 - momentum) * running + momentum * stat, with the unbiased
  // variance for running_var (torch.nn.functional.batch_norm, training=True).
  virtual void batch_norm_forward(const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                                  const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                                  const TensorArg& running_mean, const TensorArg& running_var, double momentum,
                                  double eps);
  // Its gradients (PyTorch's batch_norm_backward with batch statistics), xhat = (x - mean) * invstd,
  // M = N * prod(*): grad_x = weight * invstd * (grad_y - sum(grad_y) / M - xhat * sum(grad_y * xhat) / M),
  // grad_weight = sum(grad_y * xhat), grad_bias = sum(grad_y); each output may have data null
  // (not wanted). grad_x has x's dtype, grad_weight / grad_bias are f32 [C].
  virtual void batch_norm_backward(const TensorArg& grad_x, const TensorArg& grad_weight, const TensorArg& grad_bias,
                                   const TensorArg& grad_y, const TensorArg& x, const TensorArg& weight,
                                   const TensorArg& save_mean, const TensorArg& save_invstd);

  // ---- fused inference convolution (optional; the default throws DTypeError naming the device,
  // and the front end's conv2d_fused decomposes it into conv2d_forward and elementwise ops where
  // supports(OpId::conv2d_fused_forward, dtype) is false) ----
  // out [N, Cout, Ho, Wo] = act(conv2d(in, weight) + bias [+ residual]) with ConvEpilogue's act;
  // conv2d_forward's tensors, plus residual of out's shape and dtype (data null unless
  // e.residual). All contiguous; residual may be out itself (then added in place).
  virtual void conv2d_fused_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                                    const TensorArg& bias, const TensorArg& residual, const Conv2dParams& p,
                                    const ConvEpilogue& e);

  // ---- int8 inference (optional; the defaults throw DTypeError naming the device) ----
  // out [N, Cout, Ho, Wo] (f32 or u8) from in u8 [N, Cin, H, W], weight i8 [Cout, Cin/groups, kH, kW],
  // bias i32 [Cout] (data may be null); all contiguous. Arithmetic: QuantizedParams.
  virtual void qconv2d_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                               const TensorArg& bias, const Conv2dParams& p, const QuantizedParams& q);
  // out [M, Cout] (f32 or u8) from in u8 [M, K], weight i8 [Cout, K], bias i32 [Cout] (data may be
  // null); all contiguous. Arithmetic: QuantizedParams.
  virtual void qlinear_forward(const TensorArg& out, const TensorArg& in, const TensorArg& weight,
                               const TensorArg& bias, const QuantizedParams& q);

  // ---- captured work (optional; CUDA graphs) ----
  // begin_capture() starts recording, instead of running, the work enqueued from now on and
  // returns true, or returns false with the reason in `why` (the default: cannot record).
  // While recording nothing may wait for the device or copy from the host (DeviceError), and
  // memory comes from a pool kept for the recorded graphs, so that a replay never writes
  // into a tensor made outside them. end_capture() ends the recording and returns the
  // graph's id (> 0; DeviceError when the recording failed); abort_capture() drops a
  // recording after an error. replay(id, args) enqueues the recorded work again: same
  // buffers, same arguments, except the adam_step calls, which take their learning rate and
  // step count from `args` (written to a small device buffer of the graph just before the
  // launch): lr = args.lr (AdamParams::lr at recording is ignored on every launch, the first
  // included), step = AdamParams::step at recording + args.step_offset (clamped to >= 1), and
  // AdamW's decay 1 - lr * weight_decay follows lr. So a replayed Adam follows a scheduler
  // and the host's step count (engine/train/captured_step.h passes both). Every other kernel
  // keeps the scalars it was recorded with (SGD's lr, for one). DeviceError for an unknown id.
  // release_graph(id) frees a graph that will not be replayed again (its id stays unused;
  // a no-op for an unknown id and by default).
  struct ReplayArgs {
    double lr = 0;            // learning rate of the recorded adam_step calls
    int64_t step_offset = 0;  // added to each recorded AdamParams::step (0: the recorded step itself)
    uint64_t rng_key = 0;     // this launch's key of the recorded random draws (see bernoulli)
  };
  virtual bool begin_capture(std::string& why);
  virtual int64_t end_capture();
  virtual void abort_capture() {}
  virtual void replay(int64_t graph, const ReplayArgs& args);
  virtual void release_graph(int64_t /*graph*/) {}

  // ---- fused backward (optional; the autograd rule composes other ops where a backend lacks it) ----
  // grad_in = grad_out where out > 0, else 0 (PyTorch's threshold_backward(grad, out, 0); NaN in
  // out gives 0): ReLU's backward in one pass instead of gt, a cast and mul. All three have
  // one dtype and shape; any strides.
  virtual void relu_backward(const TensorArg& grad_in, const TensorArg& grad_out, const TensorArg& out);

  // ---- random draws (optional; the front end draws on the host and uploads where a backend lacks it) ----
  // Contiguous floating out, element i = value when bernoulli_keeps(key, i, threshold)
  // (engine/core/splitmix.h), else 0: random.h's bernoulli_scaled, the same elements on every
  // backend. A draw recorded into a graph uses, at each launch, key = mix64(ReplayArgs::rng_key +
  // its index among the recorded draws) instead, so each replay draws anew (CapturedStep passes
  // a fresh rng_key, drawn from the default generator, to every launch).
  virtual void bernoulli(const TensorArg& out, uint64_t key, uint64_t threshold, double value);

  // ---- fake quantization (optional; the front end composes it of elementwise ops where a
  // backend lacks it: engine/core/ops_fake_quant.cpp) ----
  // torch.fake_quantize_per_tensor_affine / _per_channel_affine as PyTorch's CPU kernel computes
  // them (aten/src/ATen/native/quantized/cpu/kernels/QuantizedOpKernels.cpp). With in viewed as
  // [outer, C, inner] (C = scale.numel(), 1 per tensor) and c the channel of an element:
  //   q    = zero_point[c] + round_half_even(in * (1.0f / scale[c]))  (the product in in's dtype)
  //   out  = (clamp(q, quant_min, quant_max) - zero_point[c]) * scale[c]
  //   mask = quant_min <= q <= quant_max   (the support of the straight-through gradient)
  // NaN gives NaN and mask false. in and out: one floating dtype; mask bool; scale f32 [C] > 0;
  // zero_point i32 [C]; all contiguous, out / mask of in's shape.
  virtual void fake_quantize(const TensorArg& out, const TensorArg& mask, const TensorArg& in, const TensorArg& scale,
                             const TensorArg& zero_point, int64_t inner, int64_t quant_min, int64_t quant_max);

  // ---- optimizer (optional) ----
  // One fused Adam/AdamW update of contiguous param, grad, exp_avg, exp_avg_sq.
  virtual void adam_step(const TensorArg& param, const TensorArg& grad, const TensorArg& exp_avg,
                         const TensorArg& exp_avg_sq, const AdamParams& p);

 protected:
  // What every supports() overload asks (sub_op: as there). One virtual under the overloads,
  // so that a backend overrides it without hiding them.
  virtual bool supports_op(OpId op, DType dtype, int sub_op) const = 0;

 private:
  Device device_;
  std::mutex reads_mutex_;  // the default read_async's copies, by ticket
  std::map<int64_t, std::vector<char>> reads_;
  int64_t next_read_ = 1;
};

}  // namespace kiln
