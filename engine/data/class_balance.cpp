#include "engine/data/class_balance.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>

#include "engine/core/error.h"
#include "engine/core/splitmix.h"
#include "engine/data/image_source.h"

namespace kiln::data {

namespace {

// The labels a dataset knows without decoding a sample (an image index, through Subsets); empty
// when it knows none that way.
std::vector<int64_t> indexed_labels(const Dataset& dataset) {
  if (const auto* subset = dynamic_cast<const Subset*>(&dataset)) {
    const std::vector<int64_t> inner = indexed_labels(subset->dataset());
    if (inner.empty()) return {};
    std::vector<int64_t> labels;
    labels.reserve(subset->indices().size());
    for (int64_t i : subset->indices()) labels.push_back(inner.at(static_cast<size_t>(i)));
    return labels;
  }
  return image_labels(dataset);
}

}  // namespace

std::vector<int64_t> sample_labels(const Dataset& dataset) {
  if (std::vector<int64_t> labels = indexed_labels(dataset); !labels.empty()) return labels;
  const int64_t n = dataset.size(), batch = 512;
  std::vector<int64_t> labels;
  labels.reserve(static_cast<size_t>(n));
  for (int64_t start = 0; start < n; start += batch) {
    std::vector<int64_t> idx(static_cast<size_t>(std::min(batch, n - start)));
    std::iota(idx.begin(), idx.end(), start);
    const Tensor t = dataset.get_batch(idx).target.contiguous();
    KILN_CHECK(t.dtype() == DType::i64 && t.numel() == static_cast<int64_t>(idx.size()), ShapeError,
               "class labels: the dataset's targets are ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
               " for a batch of ", idx.size(), ", not one class index (i64) per sample");
    const int64_t* y = t.data_ptr<const int64_t>();
    labels.insert(labels.end(), y, y + t.numel());
  }
  return labels;
}

std::vector<int64_t> class_counts(const std::vector<int64_t>& labels, int64_t classes) {
  std::vector<int64_t> counts(static_cast<size_t>(std::max<int64_t>(classes, 0)), 0);
  for (int64_t y : labels)
    if (y >= 0 && y < classes) ++counts[static_cast<size_t>(y)];
  return counts;
}

std::vector<double> balanced_class_weights(const std::vector<int64_t>& counts) {
  const int64_t n = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  std::vector<double> w;
  for (size_t c = 0; c < counts.size(); ++c) {
    KILN_CHECK(counts[c] > 0, ValueError, "balanced class weights: class ", c,
               " has no training sample (its weight n_samples / (n_classes * count) would be infinite)");
    w.push_back(static_cast<double>(n) / (static_cast<double>(counts.size()) * static_cast<double>(counts[c])));
  }
  return w;
}

std::vector<double> class_weights(const std::string& spec, const std::vector<int64_t>& counts,
                                  const std::string& what) {
  if (spec == "none") return {};
  if (spec == "balanced") {
    try {
      return balanced_class_weights(counts);
    } catch (const ValueError& e) {
      throw ValueError(what + " balanced: " + e.what());
    }
  }
  std::vector<double> w;
  size_t start = 0;
  for (;;) {
    const size_t comma = spec.find(',', start);
    const std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    const double v = item.empty() ? NAN : std::strtod(item.c_str(), &end);
    KILN_CHECK(!item.empty() && end == item.c_str() + item.size(), ValueError, what,
               " expects none, balanced or one weight per class (W0,W1,...), e.g. 1,4.5; '", item,
               "' is not a number");
    KILN_CHECK(std::isfinite(v) && v > 0, ValueError, what, ": weight ", w.size(), " is ", item,
               "; class weights must be finite and positive");
    w.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  KILN_CHECK(w.size() == counts.size(), ValueError, what, " gives ", w.size(), " weight", w.size() == 1 ? "" : "s",
             " for ", counts.size(), " classes; give one per class, in the order of the classes");
  return w;
}

std::vector<double> inverse_frequency_sample_weights(const std::vector<int64_t>& labels, int64_t classes) {
  const std::vector<int64_t> counts = class_counts(labels, classes);
  std::vector<double> w;
  w.reserve(labels.size());
  for (int64_t y : labels) {
    KILN_CHECK(y >= 0 && y < classes, IndexError, "weighted sampler: label ", y, " is outside [0, ", classes, ")");
    w.push_back(1.0 / static_cast<double>(counts[static_cast<size_t>(y)]));
  }
  return w;
}

std::vector<int64_t> weighted_sample(const std::vector<double>& weights, int64_t count, uint64_t seed,
                                     uint64_t stream) {
  KILN_CHECK(!weights.empty(), ValueError, "weighted sampler: no weights");
  KILN_CHECK(count >= 0, ValueError, "weighted sampler: the number of draws must be non-negative, got ", count);
  std::vector<double> cumulative(weights.size());
  double total = 0;
  size_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    KILN_CHECK(std::isfinite(weights[i]) && weights[i] >= 0, ValueError, "weighted sampler: weight ", i, " is ",
               weights[i], "; weights must be finite and non-negative");
    total += weights[i];
    cumulative[i] = total;
    if (weights[i] > 0) last_positive = i;
  }
  KILN_CHECK(total > 0 && std::isfinite(total), ValueError, "weighted sampler: the weights sum to ", total,
             "; at least one sample needs a positive weight");
  // A stream apart from seeded_permutation's, with our own uniform draw: the same on every libstdc++.
  std::mt19937_64 engine(mix64(seed ^ mix64(stream ^ 0x5a3b1e7d00000000ull)));
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t& o : out) {
    const double u = static_cast<double>(engine() >> 11) * 0x1.0p-53 * total;  // [0, total)
    // The first i with cumulative[i] > u: a zero weight (cumulative unchanged) is never drawn.
    const size_t i = static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
    o = static_cast<int64_t>(std::min(i, last_positive));
  }
  return out;
}

}  // namespace kiln::data
