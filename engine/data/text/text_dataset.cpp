#include "engine/data/text/text_dataset.h"

#include <algorithm>
#include <cstring>

#include "engine/core/error.h"
#include "engine/data/tabular.h"

namespace kiln::data {

TextDataset::TextDataset(std::shared_ptr<const TextIndex> index, std::vector<int64_t> positions,
                         std::shared_ptr<const Tokenizer> tokenizer, int64_t max_length)
    : index_(std::move(index)), positions_(std::move(positions)), tokenizer_(std::move(tokenizer)),
      max_length_(max_length) {
  KILN_CHECK(index_ != nullptr && tokenizer_ != nullptr, ValueError, "TextDataset: null index or tokenizer");
  KILN_CHECK(max_length_ >= 1, ValueError, "TextDataset: max length ", max_length_, " is below 1");
  const int64_t n = static_cast<int64_t>(index_->samples.size());
  ids_.reserve(positions_.size());
  for (int64_t p : positions_) {
    KILN_CHECK(p >= 0 && p < n, IndexError, "TextDataset: position ", p, " is out of range [0, ", n, ")");
    const TextSample& s = index_->samples[static_cast<size_t>(p)];
    std::vector<int64_t> ids;
    try {
      ids = tokenizer_->encode(s.text);
    } catch (const IoError& e) {
      throw IoError(s.origin + ": " + e.what());
    }
    lengths_.push_back(static_cast<int64_t>(ids.size()));
    if (static_cast<int64_t>(ids.size()) > max_length_) {
      ids.resize(static_cast<size_t>(max_length_));
      ++truncated_;
    }
    tokens_ += static_cast<int64_t>(ids.size());
    unknown_ += std::count(ids.begin(), ids.end(), tokenizer_->unk_id());
    ids_.push_back(std::move(ids));
  }
}

Batch TextDataset::get_batch(const std::vector<int64_t>& indices) const {
  const int64_t b = static_cast<int64_t>(indices.size()), t = max_length_;
  Batch batch;
  batch.input = Tensor::zeros({b, t}, DType::i64);
  batch.target = Tensor::empty({b}, DType::i64);
  batch.mask = Tensor::zeros({b, t}, DType::f32);
  int64_t* in = batch.input.data_ptr<int64_t>();
  int64_t* tg = batch.target.data_ptr<int64_t>();
  float* m = batch.mask.data_ptr<float>();
  for (int64_t k = 0; k < b; ++k) {
    const int64_t i = indices[static_cast<size_t>(k)];
    KILN_CHECK(i >= 0 && i < size(), IndexError, "TextDataset: index ", i, " is out of range [0, ", size(), ")");
    const std::vector<int64_t>& ids = ids_[static_cast<size_t>(i)];
    if (tokenizer_->pad_id() != 0) std::fill(in + k * t, in + (k + 1) * t, tokenizer_->pad_id());
    std::copy(ids.begin(), ids.end(), in + k * t);
    std::fill(m + k * t, m + k * t + static_cast<int64_t>(ids.size()), 1.0f);
    tg[k] = index_->samples[static_cast<size_t>(positions_[static_cast<size_t>(i)])].label;
  }
  return batch;
}

TextSplit split_and_fit(std::shared_ptr<const TextIndex> index, double test_fraction, uint64_t seed,
                        const TokenizerOptions& options) {
  KILN_CHECK(index != nullptr, ValueError, "split_and_fit: null index");
  TextSplit s;
  std::tie(s.train, s.test) = stratified_split(index->labels(), test_fraction, seed);
  std::vector<std::string_view> texts;
  texts.reserve(s.train.size());
  for (int64_t p : s.train) texts.push_back(index->samples[static_cast<size_t>(p)].text);
  s.tokenizer = train_tokenizer(texts, options);
  s.index = std::move(index);
  return s;
}

}  // namespace kiln::data
