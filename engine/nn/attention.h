// Attention layers: torch.nn.MultiheadAttention (Vaswani et al. 2017, "Attention Is All You
// Need", section 3.2) and torch.nn.TransformerEncoderLayer, with PyTorch's parameter names,
// initializers and equations, so their state_dicts load from PyTorch. Composed of
// differentiable ops (engine/core/ops.h), so autograd and every backend work.
//
// Shapes: N batch, L target (query) length, S source (key/value) length, E embed_dim.
#pragma once
#include <string>

#include "engine/nn/dropout.h"
#include "engine/nn/linear.h"
#include "engine/nn/module.h"
#include "engine/nn/normalization.h"

namespace kiln::nn {

// What MultiheadAttention::forward_attention returns. weights is undefined unless
// need_weights: [N, L, S] averaged over heads, or [N, num_heads, L, S] (batch dim dropped
// for unbatched inputs), after dropout as torch's.
struct AttentionResult {
  Tensor output;
  Tensor weights;
};

// torch.nn.MultiheadAttention with kdim = vdim = embed_dim (add_bias_kv, add_zero_attn and
// separate key/value sizes are not supported).
// Parameters: in_proj_weight [3E, E] (rows q, k, v; xavier_uniform_), in_proj_bias [3E]
// (zeros), out_proj.weight [E, E] (Linear's initializer), out_proj.bias [E] (zeros); no
// biases when bias = false. ValueError unless embed_dim > 0 and num_heads divides it, and
// 0 <= dropout <= 1.
// Per head h with d = E / num_heads: softmax(Q_h K_h^T / sqrt(d) + mask) V_h, heads concatenated
// and projected by out_proj; dropout (training only) is applied to the attention weights.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool batch_first = false);

  // query [L, N, E], key and value [S, N, E] ([N, L, E] / [N, S, E] with batch_first;
  // [L, E] / [S, E] unbatched). output has query's layout.
  //  key_padding_mask [N, S] ([S] unbatched): bool, true = this key is ignored; or floating,
  //    added to the scores.
  //  attn_mask [L, S] or [N * num_heads, L, S]: bool, true = not allowed to attend; or
  //    floating, added to the scores.
  //  is_causal: also masks key j > query i (torch.nn.functional.scaled_dot_product_attention's
  //    is_causal; torch 2.x's MultiheadAttention takes it only as a hint about attn_mask).
  // A query whose keys are all masked gets NaN weights, as in PyTorch.
  // ShapeError / DTypeError naming the argument for a wrong shape or dtype.
  AttentionResult forward_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = Tensor(), bool need_weights = true,
                                    const Tensor& attn_mask = Tensor(), bool average_attn_weights = true,
                                    bool is_causal = false);
  // Self-attention of x without masks: forward_attention(x, x, x, {}, false).output.
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MultiheadAttention"; }
  void reset_parameters();

  const int64_t embed_dim, num_heads;
  const double dropout;
  const bool batch_first;
  Tensor in_proj_weight, in_proj_bias;  // in_proj_bias undefined without bias
  std::shared_ptr<Linear> out_proj;
};

struct TransformerEncoderLayerOptions {
  int64_t d_model = 0;
  int64_t nhead = 1;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // "relu" or "gelu" (exact)
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
};

// torch.nn.TransformerEncoderLayer (children self_attn, linear1, dropout, linear2, norm1,
// norm2, dropout1, dropout2, as torch names them):
//   sa(x) = dropout1(self_attn(x, x, x)),  ff(x) = dropout2(linear2(dropout(act(linear1(x)))))
//   norm_first:  x = x + sa(norm1(x)); x = x + ff(norm2(x))   (Xiong et al. 2020)
//   otherwise:   x = norm1(x + sa(x)); x = norm2(x + ff(x))
// ValueError for an unknown activation or invalid sizes (as MultiheadAttention).
class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(TransformerEncoderLayerOptions options);
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1)
      : TransformerEncoderLayer(TransformerEncoderLayerOptions{
            .d_model = d_model, .nhead = nhead, .dim_feedforward = dim_feedforward, .dropout = dropout}) {}

  // src [S, N, E] ([N, S, E] with batch_first); masks as MultiheadAttention's attn_mask
  // (src_mask), key_padding_mask (src_key_padding_mask) and is_causal. Output: src's shape.
  // Padded positions are computed like the others (torch's non-fast path); pool with the mask.
  Tensor forward_masked(const Tensor& src, const Tensor& src_mask = Tensor(),
                        const Tensor& src_key_padding_mask = Tensor(), bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward_masked(src); }
  std::string type_name() const override { return "TransformerEncoderLayer"; }

  const TransformerEncoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;
};

}  // namespace kiln::nn
