// Positional embeddings and sequence pooling for sequence models over [N, T, C] (batch first).
// The padding mask convention is MultiheadAttention's key_padding_mask: bool [N, T], true at
// padded steps (engine/nn/rnn.h's lengths_to_padding_mask makes one from lengths).
#pragma once
#include "engine/nn/module.h"

namespace kiln::nn {

// Learned absolute positions (as BERT / GPT-2): an Embedding over positions, weight
// [num_positions, embedding_dim] ~ N(0, 1) (torch.nn.Embedding's initializer).
// forward: x [N, T, embedding_dim] ([T, N, embedding_dim] unless batch_first) ->
// x + weight[t] at step t. ShapeError when T > num_positions or the last dim differs.
class LearnedPositionalEmbedding : public Module {
 public:
  LearnedPositionalEmbedding(int64_t num_positions, int64_t embedding_dim, bool batch_first = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LearnedPositionalEmbedding"; }
  std::string extra_repr() const override;

  const int64_t num_positions, embedding_dim;
  const bool batch_first;
  Tensor weight;
};

// Fixed sinusoidal positions (Vaswani et al. 2017, section 3.5, as the PyTorch tutorial's
// PositionalEncoding): pe[t, 2i] = sin(t / 10000^(2i/d)), pe[t, 2i+1] = cos(t / 10000^(2i/d)),
// computed in f64 and stored as the buffer "pe" [max_len, 1, d_model] (the tutorial's shape,
// so its state_dict loads). forward: dropout(x + pe[t]) with x as LearnedPositionalEmbedding's
// (dropout in training only). ValueError unless d_model > 0, max_len >= 0, 0 <= dropout <= 1.
class SinusoidalPositionalEncoding : public Module {
 public:
  SinusoidalPositionalEncoding(int64_t d_model, double dropout = 0.1, int64_t max_len = 5000,
                               bool batch_first = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "PositionalEncoding"; }
  std::string extra_repr() const override;

  const int64_t d_model, max_len;
  const double dropout;
  const bool batch_first;
  Tensor pe;
};

// Sequence pooling, x [N, T, C] -> [N, C]; padding_mask bool [N, T] (true = padded) or
// undefined (no padding). A sequence without valid steps pools to 0. ShapeError / DTypeError
// naming the function for wrong shapes or a non-bool mask.
// Mean over the valid steps.
Tensor masked_mean_pool(const Tensor& x, const Tensor& padding_mask = Tensor());
// Maximum over the valid steps (gradient split among ties, as amax).
Tensor masked_max_pool(const Tensor& x, const Tensor& padding_mask = Tensor());
// The last valid step (the highest t that is not padded).
Tensor last_step_pool(const Tensor& x, const Tensor& padding_mask = Tensor());
// The first step ([CLS] token pooling, as BERT); the mask is not needed.
Tensor first_step_pool(const Tensor& x);

}  // namespace kiln::nn
