// Imbalanced classes: per-class loss weights (`kiln train --class-weights`) and the per-sample
// weights of a weighted sampler (`--sampler weighted`, DataLoader::Options::sample_weights).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace kiln::data {

// The class of every sample of `dataset` (i64 targets [N] or [N, 1]): an image dataset's from its
// index (nothing decoded; through Subsets too), any other's read from its targets in batches.
// ShapeError for targets that are not one class index per sample (a regression table's f32).
std::vector<int64_t> sample_labels(const Dataset& dataset);

// Samples per class (labels outside [0, classes) are not counted).
std::vector<int64_t> class_counts(const std::vector<int64_t>& labels, int64_t classes);

// scikit-learn's compute_class_weight("balanced"): weight_c = n_samples / (n_classes * count_c),
// so that every class weighs as much as in a balanced dataset. ValueError naming the class (by
// index) that has no sample, whose weight would be infinite.
std::vector<double> balanced_class_weights(const std::vector<int64_t>& counts);

// The per-class loss weights `spec` asks for: "none" (empty: no weights), "balanced"
// (balanced_class_weights of counts) or "W0,W1,..." (one finite positive number per class: a batch
// of only zero-weight targets would make PyTorch's weighted mean 0/0). ValueError naming `what`
// (e.g. "--class-weights") for a wrong count, a zero, negative, NaN or infinite weight, or a word
// that is none of these.
std::vector<double> class_weights(const std::string& spec, const std::vector<int64_t>& counts,
                                  const std::string& what);

// Sample weights of a sampler that draws every class equally often on average: 1 / count of the
// sample's class (the usual torch.utils.data.WeightedRandomSampler set-up). labels in [0, classes).
std::vector<double> inverse_frequency_sample_weights(const std::vector<int64_t>& labels, int64_t classes);

// `count` indices drawn with replacement, index i with probability weights[i] / sum(weights)
// (torch.multinomial(weights, count, replacement=True), as WeightedRandomSampler draws), from a
// generator seeded by (seed, stream) only (stream = the epoch), so that a resumed run draws the same.
// ValueError for an empty list, a negative or non-finite weight, a zero sum or count < 0.
std::vector<int64_t> weighted_sample(const std::vector<double>& weights, int64_t count, uint64_t seed,
                                     uint64_t stream);

}  // namespace kiln::data
