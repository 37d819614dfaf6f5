// ONNX signal ops (opset 17) on the host (a clearly named fallback; the engine has no FFT):
// DFT and STFT by direct summation, O(n^2) per signal — exact enough for test sizes, not fast.
// Complex values are a trailing dimension of 2 (real, imaginary), as ONNX specifies.
#include <cmath>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

// out[k] = scale * sum_t x[t] e^{sign 2 pi i k t / n}, k < bins (x: n complex values).
void dft(const std::vector<double>& re, const std::vector<double>& im, int64_t bins, bool inverse, double* out) {
  int64_t n = static_cast<int64_t>(re.size());
  double sign = inverse ? 1.0 : -1.0, scale = inverse && n ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double sr = 0, si = 0;
    for (int64_t t = 0; t < n; ++t) {
      double ang = sign * 2 * M_PI * static_cast<double>((k * t) % n) / static_cast<double>(n);
      sr += re[size_t(t)] * std::cos(ang) - im[size_t(t)] * std::sin(ang);
      si += re[size_t(t)] * std::sin(ang) + im[size_t(t)] * std::cos(ang);
    }
    out[2 * k] = sr * scale;
    out[2 * k + 1] = si * scale;
  }
}

std::vector<Tensor> dft_op(OpContext& c) {
  const Tensor& x = c.input(0);
  int64_t rank = x.dim();
  if (rank < 2 || (x.size(-1) != 1 && x.size(-1) != 2)) c.fail("input must be [batch, signal..., 1 or 2], got " + shape_str(x.shape()));
  int64_t axis = wrap_axis(c, c.attr_int("axis", 1), rank);
  if (axis == rank - 1) c.fail("axis cannot be the last (complex) dimension");
  bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  bool complex = x.size(-1) == 2;
  int64_t n = x.size(axis);
  int64_t len = c.has_input(1) && c.input(1).numel() ? static_cast<int64_t>(c.scalar_input(1)) : n;
  if (len <= 0) c.fail("dft_length must be positive");
  int64_t bins = onesided ? len / 2 + 1 : len;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.size(d);
  std::vector<double> v = host_doubles(x);
  Shape out_shape = x.shape();
  out_shape[size_t(axis)] = bins;
  out_shape.back() = 2;
  std::vector<double> out(static_cast<size_t>(numel(out_shape)));
  std::vector<double> re(static_cast<size_t>(len)), im(static_cast<size_t>(len)), res(static_cast<size_t>(2 * bins));
  int64_t cw = x.size(-1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t t = 0; t < len; ++t) {
        bool in = t < n;
        size_t at = size_t(((o * n + t) * inner + i) * cw);
        re[size_t(t)] = in ? v[at] : 0.0;
        im[size_t(t)] = in && complex ? v[at + 1] : 0.0;
      }
      dft(re, im, bins, inverse, res.data());
      for (int64_t k = 0; k < bins; ++k) {
        size_t at = size_t(((o * bins + k) * inner + i) * 2);
        out[at] = res[size_t(2 * k)];
        out[at + 1] = res[size_t(2 * k + 1)];
      }
    }
  return {from_doubles(out, out_shape, x.dtype(), x.device())};
}

// STFT-17: signal [batch, length, 1 or 2] -> [batch, frames, bins, 2], frames of
// frame_length every frame_step samples, multiplied by the window.
std::vector<Tensor> stft_op(OpContext& c) {
  const Tensor& x = c.input(0);
  if (x.dim() != 3 || (x.size(2) != 1 && x.size(2) != 2)) c.fail("signal must be [batch, length, 1 or 2], got " + shape_str(x.shape()));
  int64_t step = static_cast<int64_t>(c.scalar_input(1));
  std::vector<double> window = c.has_input(2) ? host_doubles(c.input(2)) : std::vector<double>{};
  int64_t fl = c.has_input(3) ? static_cast<int64_t>(c.scalar_input(3)) : static_cast<int64_t>(window.size());
  if (fl <= 0 || step <= 0) c.fail("frame_length and frame_step must be positive (give a window or frame_length)");
  if (!window.empty() && static_cast<int64_t>(window.size()) != fl) c.fail("window length differs from frame_length");
  bool onesided = c.attr_int("onesided", 1) != 0;
  int64_t batch = x.size(0), len = x.size(1), cw = x.size(2);
  int64_t frames = len >= fl ? (len - fl) / step + 1 : 0, bins = onesided ? fl / 2 + 1 : fl;
  std::vector<double> v = host_doubles(x), out(static_cast<size_t>(batch * frames * bins * 2));
  std::vector<double> re(static_cast<size_t>(fl)), im(static_cast<size_t>(fl));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < fl; ++t) {
        double w = window.empty() ? 1.0 : window[size_t(t)];
        size_t at = size_t((b * len + f * step + t) * cw);
        re[size_t(t)] = v[at] * w;
        im[size_t(t)] = cw == 2 ? v[at + 1] * w : 0.0;
      }
      dft(re, im, bins, false, out.data() + (b * frames + f) * bins * 2);
    }
  return {from_doubles(out, {batch, frames, bins, 2}, x.dtype(), x.device())};
}

}  // namespace

void register_spectral_ops(OpTable& t) {
  t["DFT"] = dft_op;
  t["STFT"] = stft_op;
}

}  // namespace kiln::onnx
