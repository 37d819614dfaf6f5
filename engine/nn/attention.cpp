#include "engine/nn/attention.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/functional.h"
#include "engine/nn/init.h"

namespace kiln::nn {

namespace {

std::string shape_of(const Tensor& t) { return t.defined() ? shape_str(t.shape()) : "undefined"; }

// scores [N, h, L, S] with `mask` applied: bool -> -inf where true; floating -> added. A bool
// mask becomes an additive one first (-inf / 0, on the mask's own broadcast shape, e.g. [N, 1, 1, S]),
// so the full-size pass is one vectorized broadcast add; finite scores give the same result as
// replacing them, and softmax sends the same zero gradient to the masked places.
Tensor apply_mask(const Tensor& scores, const Tensor& mask) {
  if (mask.dtype() == DType::bool_)
    return scores + where(mask, scalar_like(-INFINITY, scores), scalar_like(0.0, scores));
  return scores + mask.to(scores.dtype());
}

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t e, int64_t h, double p, bool bias, bool bf)
    : embed_dim(e), num_heads(h), dropout(p), batch_first(bf) {
  KILN_CHECK(e > 0 && h > 0 && e % h == 0, ValueError,
             "MultiheadAttention: embed_dim must be positive and divisible by num_heads, got embed_dim=", e,
             ", num_heads=", h);
  KILN_CHECK(p >= 0 && p <= 1, ValueError, "MultiheadAttention: dropout must be in [0, 1], got ", p);
  in_proj_weight = register_parameter("in_proj_weight", Tensor::empty({3 * e, e}));
  if (bias) in_proj_bias = register_parameter("in_proj_bias", Tensor::empty({3 * e}));
  out_proj = register_module("out_proj", std::make_shared<Linear>(e, e, bias));
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  // torch.nn.MultiheadAttention._reset_parameters
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  out_proj->reset_parameters();
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

Tensor MultiheadAttention::forward(const Tensor& x) { return forward_attention(x, x, x, {}, false).output; }

AttentionResult MultiheadAttention::forward_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const Tensor& key_padding_mask, bool need_weights,
                                                      const Tensor& attn_mask, bool average_attn_weights,
                                                      bool is_causal) {
  const char* me = "MultiheadAttention";
  KILN_CHECK(query.defined() && key.defined() && value.defined(), ValueError, me,
             ": query, key and value must be defined");
  const bool batched = query.dim() == 3;
  KILN_CHECK((query.dim() == 3 || query.dim() == 2) && key.dim() == query.dim() && value.dim() == query.dim(),
             ShapeError, me, ": query, key and value must all be 3-d (batched) or 2-d (unbatched), got ",
             shape_of(query), ", ", shape_of(key), ", ", shape_of(value));
  const DType dt = in_proj_weight.dtype();
  for (const Tensor* t : {&query, &key, &value})
    KILN_CHECK(t->dtype() == dt, DTypeError, me, ": inputs are ", dtype_name(t->dtype()), " but the parameters are ",
               dtype_name(dt));
  // Batch-first [N, L, E] inside.
  auto to_nle = [&](const Tensor& t) { return !batched ? t.unsqueeze(0) : batch_first ? t : t.transpose(0, 1); };
  const Tensor q_in = to_nle(query), k_in = to_nle(key), v_in = to_nle(value);
  const int64_t n = q_in.size(0), l = q_in.size(1), s = k_in.size(1), e = embed_dim, hd = e / num_heads;
  KILN_CHECK(q_in.size(2) == e && k_in.size(2) == e && v_in.size(2) == e, ShapeError, me,
             ": query, key and value must end with embed_dim=", e, ", got ", shape_of(query), ", ", shape_of(key),
             ", ", shape_of(value));
  KILN_CHECK(k_in.size(0) == n && v_in.size(0) == n && v_in.size(1) == s, ShapeError, me,
             ": key and value must have query's batch size and one length, got query ", shape_of(query), ", key ",
             shape_of(key), ", value ", shape_of(value));

  auto project = [&](const Tensor& x, int64_t part, int64_t len) {
    const Tensor w = in_proj_weight.narrow(0, part * e, e);
    const Tensor b = in_proj_bias.defined() ? in_proj_bias.narrow(0, part * e, e) : Tensor();
    return linear(x, w, b).reshape({n, len, num_heads, hd}).permute({0, 2, 1, 3});  // [N, h, len, hd]
  };
  // q scaled by 1/sqrt(hd) before q k^T, as PyTorch's scaled_dot_product_attention does: a pass over
  // [N, h, L, hd] instead of over the scores [N, h, L, S]
  const Tensor q = project(q_in, 0, l) * (1.0 / std::sqrt(static_cast<double>(hd)));
  const Tensor k = project(k_in, 1, s), v = project(v_in, 2, s);
  Tensor scores = matmul(q, k.transpose(-1, -2));  // [N, h, L, S]

  if (attn_mask.defined()) {
    KILN_CHECK(attn_mask.dtype() == DType::bool_ || is_floating(attn_mask.dtype()), DTypeError, me,
               ": attn_mask must be bool or floating, got ", dtype_name(attn_mask.dtype()));
    const Shape flat = {l, s}, per_head = {n * num_heads, l, s};
    const bool two_d = attn_mask.shape() == flat;
    KILN_CHECK(two_d || attn_mask.shape() == per_head, ShapeError, me, ": attn_mask must be [L, S] = ",
               shape_str(flat), " or [N * num_heads, L, S] = ", shape_str(per_head), ", got ", shape_of(attn_mask));
    scores = apply_mask(scores, two_d ? attn_mask : attn_mask.reshape({n, num_heads, l, s}));
  }
  if (is_causal) {
    const Tensor above = gt(Tensor::arange(s, query.device()).unsqueeze(0), Tensor::arange(l, query.device()).unsqueeze(1));
    scores = apply_mask(scores, above);  // key j > query i
  }
  if (key_padding_mask.defined()) {
    const Shape want = batched ? Shape{n, s} : Shape{s};
    KILN_CHECK(key_padding_mask.dtype() == DType::bool_ || is_floating(key_padding_mask.dtype()), DTypeError, me,
               ": key_padding_mask must be bool (true = ignore) or floating, got ", dtype_name(key_padding_mask.dtype()));
    KILN_CHECK(key_padding_mask.shape() == want, ShapeError, me, ": key_padding_mask must be [N, S] = ", shape_str(want),
               ", got ", shape_of(key_padding_mask));
    scores = apply_mask(scores, key_padding_mask.reshape({n, 1, 1, s}));
  }
  Tensor attn = softmax(scores, -1);
  if (training_ && dropout > 0) attn = functional::dropout(attn, dropout, true);
  const Tensor heads = matmul(attn, v).permute({0, 2, 1, 3}).reshape({n, l, e});  // [N, L, E]
  Tensor out = (*out_proj)(heads);

  AttentionResult r;
  r.output = !batched ? out.squeeze(0) : batch_first ? out : out.transpose(0, 1);
  if (need_weights) {
    r.weights = average_attn_weights ? mean(attn, {1}) : attn;
    if (!batched) r.weights = r.weights.squeeze(0);
  }
  return r;
}

TransformerEncoderLayer::TransformerEncoderLayer(TransformerEncoderLayerOptions o) : options(std::move(o)) {
  KILN_CHECK(options.activation == "relu" || options.activation == "gelu", ValueError,
             "TransformerEncoderLayer: activation should be relu or gelu, not '", options.activation, "'");
  KILN_CHECK(options.dim_feedforward > 0, ValueError, "TransformerEncoderLayer: dim_feedforward must be positive, got ",
             options.dim_feedforward);
  const int64_t d = options.d_model;
  self_attn = register_module("self_attn",
                              std::make_shared<MultiheadAttention>(d, options.nhead, options.dropout, true,
                                                                   options.batch_first));
  linear1 = register_module("linear1", std::make_shared<Linear>(d, options.dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(options.dim_feedforward, d));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(d, options.layer_norm_eps));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(d, options.layer_norm_eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(options.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(options.dropout));
}

Tensor TransformerEncoderLayer::forward_masked(const Tensor& src, const Tensor& src_mask,
                                               const Tensor& src_key_padding_mask, bool is_causal) {
  auto sa = [&](const Tensor& x) {
    return (*dropout1)(self_attn->forward_attention(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal).output);
  };
  auto ff = [&](const Tensor& x) {
    const Tensor hidden = (*linear1)(x);
    const Tensor act = options.activation == "gelu" ? gelu(hidden) : relu(hidden);
    return (*dropout2)((*linear2)((*dropout)(act)));
  };
  Tensor x = src;
  if (options.norm_first) {
    x = x + sa((*norm1)(x));
    x = x + ff((*norm2)(x));
  } else {
    x = (*norm1)(x + sa(x));
    x = (*norm2)(x + ff(x));
  }
  return x;
}

}  // namespace kiln::nn
