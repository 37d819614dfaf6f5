// Text samples as a Dataset: each sample of a TextIndex (text_index.h) tokenized once, at
// construction, by a Tokenizer (tokenizer.h) fitted on the training split, truncated to max_length
// tokens (the first ones are kept) and padded with pad_id() to max_length. A batch is
//   input  i64 [B, T]  token ids, T = max_length, padding 0
//   target i64 [B]     class indices
//   mask   f32 [B, T]  1 for a token, 0 for padding (a text with no token has an all-zero row)
// so that a model can pool over the valid steps: sum(emb * mask[..., None], 1) / sum(mask, 1).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/text/text_index.h"
#include "engine/data/text/tokenizer.h"

namespace kiln::data {

class TextDataset : public Dataset {
 public:
  // The samples of `index` at `positions`. IndexError for a position outside the index,
  // ValueError for max_length < 1 or a null index/tokenizer.
  TextDataset(std::shared_ptr<const TextIndex> index, std::vector<int64_t> positions,
              std::shared_ptr<const Tokenizer> tokenizer, int64_t max_length);

  int64_t size() const override { return static_cast<int64_t>(positions_.size()); }
  // IndexError for an index outside [0, size()).
  Batch get_batch(const std::vector<int64_t>& indices) const override;

  int64_t max_length() const { return max_length_; }
  // Token count of sample i before truncation.
  int64_t length(int64_t i) const { return lengths_.at(static_cast<size_t>(i)); }
  // The kept ids of sample i (at most max_length).
  const std::vector<int64_t>& ids(int64_t i) const { return ids_.at(static_cast<size_t>(i)); }
  int64_t truncated() const { return truncated_; }  // samples longer than max_length
  int64_t tokens() const { return tokens_; }        // kept tokens over all samples
  int64_t unknown() const { return unknown_; }      // of those, unk_id()
  const TextIndex& index() const { return *index_; }
  const std::vector<int64_t>& positions() const { return positions_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  std::shared_ptr<const TextIndex> index_;
  std::vector<int64_t> positions_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  int64_t max_length_;
  std::vector<std::vector<int64_t>> ids_;
  std::vector<int64_t> lengths_;
  int64_t truncated_ = 0, tokens_ = 0, unknown_ = 0;
};

// A text dataset ready to train on: the index, a stratified split (tabular.h's stratified_split,
// by seed) and the tokenizer fitted on the training split only.
struct TextSplit {
  std::shared_ptr<const TextIndex> index;
  std::vector<int64_t> train, test;  // positions in index->samples, ascending
  std::shared_ptr<const Tokenizer> tokenizer;
};
// ValueError for a test_fraction outside [0, 1), then train_tokenizer's errors.
TextSplit split_and_fit(std::shared_ptr<const TextIndex> index, double test_fraction, uint64_t seed,
                        const TokenizerOptions& tokenizer);

}  // namespace kiln::data
