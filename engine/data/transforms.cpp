#include "engine/data/transforms.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"

namespace kiln::data {

Normalize::Normalize(std::vector<double> mean, std::vector<double> stddev)
    : mean_(std::move(mean)), std_(std::move(stddev)) {
  KILN_CHECK(!mean_.empty() && !std_.empty(), ValueError, "Normalize: mean and std must not be empty");
  if (mean_.size() == 1 && std_.size() > 1) mean_.resize(std_.size(), mean_[0]);
  if (std_.size() == 1 && mean_.size() > 1) std_.resize(mean_.size(), std_[0]);
  KILN_CHECK(mean_.size() == std_.size(), ValueError, "Normalize: ", mean_.size(), " means but ", std_.size(),
             " standard deviations");
  for (double s : std_) KILN_CHECK(s > 0, ValueError, "Normalize: std must be positive, got ", s);
}

Tensor Normalize::operator()(const Tensor& x) const {
  KILN_CHECK(is_floating(x.dtype()), DTypeError, "Normalize: expects a floating-point tensor, got ",
             dtype_name(x.dtype()), " (convert images to float first)");
  KILN_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, "Normalize: expects [C, H, W] or [B, C, H, W], got ",
             shape_str(x.shape()));
  int64_t c = x.size(-3);
  int64_t n = static_cast<int64_t>(mean_.size());
  KILN_CHECK(n == 1 || n == c, ShapeError, "Normalize: input ", shape_str(x.shape()), " has ", c,
             " channels but ", n, " mean/std values were given");
  std::vector<double> m = mean_, s = std_;
  if (n == 1) {
    m.assign(static_cast<size_t>(c), mean_[0]);
    s.assign(static_cast<size_t>(c), std_[0]);
  }
  Tensor mt = Tensor::from_vector(m, {c, 1, 1}, x.device()).to(x.dtype());
  Tensor st = Tensor::from_vector(s, {c, 1, 1}, x.device()).to(x.dtype());
  return div(sub(x, mt), st);
}

std::array<float, 256> Normalize::u8_table(int64_t channel) const {
  KILN_CHECK(channel >= 0 && (channel < static_cast<int64_t>(mean_.size()) || mean_.size() == 1), IndexError,
             "Normalize: channel ", channel, " is out of range [0, ", mean_.size(), ")");
  size_t c = mean_.size() == 1 ? 0 : static_cast<size_t>(channel);
  std::array<float, 256> t{};
  for (int v = 0; v < 256; ++v) t[static_cast<size_t>(v)] = static_cast<float>((v / 255.0 - mean_[c]) / std_[c]);
  return t;
}

}  // namespace kiln::data
