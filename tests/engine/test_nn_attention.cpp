// nn::MultiheadAttention, TransformerEncoderLayer, positional embeddings and sequence pooling
// against PyTorch (tests/fixtures/seq, made by make_seq_fixtures.py, dropout 0): outputs and
// the gradients of every input and parameter to 1e-6 in f64; gradcheck on tiny sizes; errors.
#include <gtest/gtest.h>

#include <memory>

#include "tests/engine/seq_fixture.h"
#include "tests/engine/test_util.h"
#include "engine/core/error.h"
#include "engine/io/state_dict.h"
#include "engine/nn/attention.h"
#include "engine/nn/sequence.h"

using namespace kiln;
using namespace kiln::test;

namespace {

Tensor get(const std::map<std::string, Tensor>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? Tensor() : it->second;
}

Tensor leaf(const Tensor& t) { return t.defined() ? t.clone().requires_grad_(true) : t; }

void load_torch_state(nn::Module& m, const std::string& name) {
  io::load_state_dict(m, seq_fixture_path(name + ".safetensors"));  // strict: every torch key maps to a Kiln one
}

void expect_param_grads(const nn::Module& m, const std::map<std::string, Tensor>& io) {
  for (auto& [name, p] : m.named_parameters()) {
    Tensor want = get(io, "grad." + name);
    ASSERT_TRUE(want.defined()) << "the fixture has no gradient for " << name;
    expect_close(p.grad(), want, "grad of " + name);
  }
}

class AttentionPyTorch : public testing::TestWithParam<SeqCase> {};

TEST_P(AttentionPyTorch, OutputsAndGradientsMatch) {
  const SeqCase& c = GetParam();
  ASSERT_FALSE(c.layer.empty()) << "cannot read " << seq_fixture_path("cases.json");
  const auto& j = c.config;
  const auto io = load_named(c.name + ".io.safetensors");
  Tensor attn_mask = get(io, "attn_mask"), kpm = get(io, "key_padding_mask");
  if (c.layer == "MultiheadAttention") {
    nn::MultiheadAttention m(j.at("embed_dim"), j.at("num_heads"), 0.0, j.at("bias"), j.at("batch_first"));
    m.to(DType::f64);
    load_torch_state(m, c.name);
    Tensor q = leaf(get(io, "query")), k = j.at("self_attention") ? q : leaf(get(io, "key"));
    Tensor v = j.at("self_attention") ? q : leaf(get(io, "value"));
    nn::AttentionResult r =
        m.forward_attention(q, k, v, kpm, j.at("need_weights"), attn_mask, j.at("average_attn_weights"), j.at("causal"));
    expect_close(r.output, get(io, "output"), "output");
    Tensor loss = sum(r.output * get(io, "grad_output"));
    if (j.at("need_weights")) {
      expect_close(r.weights, get(io, "weights"), "weights");
      loss = loss + sum(r.weights * get(io, "grad_weights"));
    } else {
      EXPECT_FALSE(r.weights.defined());
    }
    loss.backward();
    expect_close(q.grad(), get(io, "grad.query"), "grad of query");
    if (!j.at("self_attention")) {
      expect_close(k.grad(), get(io, "grad.key"), "grad of key");
      expect_close(v.grad(), get(io, "grad.value"), "grad of value");
    }
    expect_param_grads(m, io);
  } else if (c.layer == "TransformerEncoderLayer") {
    nn::TransformerEncoderLayer m(nn::TransformerEncoderLayerOptions{
        .d_model = j.at("d_model"), .nhead = j.at("nhead"), .dim_feedforward = j.at("dim_feedforward"), .dropout = 0.0,
        .activation = j.at("activation"), .layer_norm_eps = j.at("layer_norm_eps"), .batch_first = j.at("batch_first"),
        .norm_first = j.at("norm_first")});
    m.to(DType::f64);
    load_torch_state(m, c.name);
    Tensor src = leaf(get(io, "src"));
    Tensor out = m.forward_masked(src, Tensor(), kpm, j.at("causal"));
    expect_close(out, get(io, "output"), "output");
    sum(out * get(io, "grad_output")).backward();
    expect_close(src.grad(), get(io, "grad.src"), "grad of src");
    expect_param_grads(m, io);
  } else {
    Tensor x = leaf(get(io, "input")), out;
    std::shared_ptr<nn::Module> m;
    if (c.layer == "LearnedPositionalEmbedding") {
      m = std::make_shared<nn::LearnedPositionalEmbedding>(j.at("num_positions"), j.at("embedding_dim"), j.at("batch_first"));
      m->to(DType::f64);
      load_torch_state(*m, c.name);
      out = (*m)(x);
    } else if (c.layer == "PositionalEncoding") {
      auto pe = std::make_shared<nn::SinusoidalPositionalEncoding>(j.at("d_model"), 0.0, j.at("max_len"), j.at("batch_first"));
      expect_close(pe->pe, get(io, "pe"), "the pe buffer", 1e-7);  // stored in f32
      pe->to(DType::f64);
      out = (*pe)(x);
      m = pe;
    } else {
      const std::string pool = j.at("pool");
      const Tensor mask = get(io, "padding_mask");
      out = pool == "mean" ? nn::masked_mean_pool(x, mask)
            : pool == "max" ? nn::masked_max_pool(x, mask)
            : pool == "last" ? nn::last_step_pool(x, mask)
                             : nn::first_step_pool(x);
    }
    // pe is stored in f32 (as the tutorial's), so that case matches to f32's precision.
    const double tol = c.layer == "PositionalEncoding" ? 1e-7 : 1e-6;
    expect_close(out, get(io, "output"), "output", tol);
    sum(out * get(io, "grad_output")).backward();
    expect_close(x.grad(), get(io, "grad.input"), "grad of input");
    if (m && c.layer == "LearnedPositionalEmbedding") expect_param_grads(*m, io);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, AttentionPyTorch,
                         testing::ValuesIn(seq_cases({"MultiheadAttention", "TransformerEncoderLayer",
                                                      "LearnedPositionalEmbedding", "PositionalEncoding", "Pool"})),
                         case_name);

TEST(Attention, GradcheckMultiheadAttentionWithMasks) {
  manual_seed(3);
  nn::MultiheadAttention m(4, 2, 0.0, true, true);
  m.to(DType::f64);
  Tensor q = randn64({2, 3, 4}, 1), kv = randn64({2, 3, 4}, 2);
  Tensor kpm = Tensor::from_vector<uint8_t>({0, 0, 1, 0, 0, 0}, {2, 3}).to(DType::bool_);
  autograd::GradcheckOptions one;
  one.projections = 1;
  const autograd::GradcheckResult res = autograd::gradcheck(
      [&](const std::vector<Tensor>& in) {
        nn::AttentionResult r = m.forward_attention(in[0], in[1], in[1], kpm, true, Tensor(), true, true);
        return cat({r.output.flatten(), r.weights.flatten()}, 0);
      },
      {q, kv}, one);
  EXPECT_TRUE(res.ok) << res.message;
}

TEST(Attention, GradcheckEncoderLayerAndPooling) {
  manual_seed(4);
  nn::TransformerEncoderLayer m(nn::TransformerEncoderLayerOptions{
      .d_model = 4, .nhead = 2, .dim_feedforward = 3, .dropout = 0.0, .activation = "gelu", .batch_first = true,
      .norm_first = true});
  m.to(DType::f64);
  Tensor x = randn64({2, 3, 4}, 5);
  Tensor mask = Tensor::from_vector<uint8_t>({0, 0, 1, 0, 0, 0}, {2, 3}).to(DType::bool_);
  expect_gradcheck(
      [&](const std::vector<Tensor>& in) {
        Tensor y = m.forward_masked(in[0], Tensor(), mask);
        return cat({nn::masked_mean_pool(y, mask), nn::masked_max_pool(y, mask), nn::last_step_pool(y, mask),
                    nn::first_step_pool(y)},
                   1);
      },
      {x});
}

TEST(Attention, ParameterNamesAndInitializers) {
  manual_seed(0);
  nn::TransformerEncoderLayer layer(8, 2, 16, 0.1);
  std::vector<std::string> names;
  for (auto& [k, p] : layer.named_parameters()) names.push_back(k);
  const std::vector<std::string> want = {"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                                         "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                                         "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(layer.self_attn->in_proj_weight.shape(), (Shape{24, 8}));
  expect_values(layer.self_attn->in_proj_bias, std::vector<double>(24, 0.0), 0);
  expect_values(layer.self_attn->out_proj->bias, std::vector<double>(8, 0.0), 0);
  const double bound = std::sqrt(6.0 / (8 + 24));  // xavier_uniform_ of [24, 8]
  for (double v : layer.self_attn->in_proj_weight.to(DType::f64).to_vector<double>()) EXPECT_LE(std::abs(v), bound);
  EXPECT_EQ(nn::MultiheadAttention(4, 2, 0.0, false).named_parameters().size(), 2u);
  nn::SinusoidalPositionalEncoding pe(6);
  EXPECT_EQ(pe.named_buffers().at(0).first, "pe");
  EXPECT_EQ(pe.pe.shape(), (Shape{5000, 1, 6}));
}

TEST(Attention, DropoutOnlyInTrainingAndUnbatchedInput) {
  manual_seed(5);
  nn::MultiheadAttention m(4, 2, 0.5);
  Tensor x = randn64({3, 4}, 6, false).to(DType::f32);
  m.eval();
  nn::AttentionResult a = m.forward_attention(x, x, x), b = m.forward_attention(x.unsqueeze(1), x.unsqueeze(1), x.unsqueeze(1));
  EXPECT_EQ(a.output.shape(), (Shape{3, 4}));
  EXPECT_EQ(a.weights.shape(), (Shape{3, 3}));
  expect_close(a.output, b.output.squeeze(1), "unbatched vs batch of one");
  // Each row of the averaged weights sums to 1 without dropout.
  expect_close(sum(a.weights, {1}), Tensor::ones({3}), "weight rows", 1e-6);
  m.train();
  EXPECT_FALSE(m.forward_attention(x, x, x).weights.to_vector<float>() == a.weights.to_vector<float>());
}

TEST(Attention, EmptySequencesPoolToZero) {
  Tensor x = randn64({2, 3, 2}, 7, false);
  Tensor mask = Tensor::from_vector<uint8_t>({1, 1, 1, 0, 0, 1}, {2, 3}).to(DType::bool_);
  for (const Tensor& p : {nn::masked_mean_pool(x, mask), nn::masked_max_pool(x, mask), nn::last_step_pool(x, mask)}) {
    expect_close(p.select(0, 0), Tensor::zeros({2}, DType::f64), "fully padded sequence", 0);
  }
  expect_close(nn::last_step_pool(x, mask).select(0, 1), x.select(0, 1).select(0, 1), "last valid step", 0);
  expect_close(nn::masked_mean_pool(x), mean(x, {1}), "no mask", 0);
}

TEST(Attention, BadInputsGiveClearErrors) {
  EXPECT_THROW(nn::MultiheadAttention(5, 2), ValueError);
  EXPECT_THROW(nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions{.d_model = 4, .nhead = 2, .activation = "tanh"}),
               ValueError);
  nn::MultiheadAttention m(4, 2);
  Tensor x = Tensor::zeros({3, 2, 4});
  EXPECT_THROW(m.forward_attention(x, x, Tensor::zeros({3, 2, 5})), ShapeError);
  EXPECT_THROW(m.forward_attention(x, x, x, Tensor::zeros({3, 2}, DType::bool_)), ShapeError);
  EXPECT_THROW(m.forward_attention(x, x, x, Tensor::zeros({2, 3}, DType::i64)), DTypeError);
  EXPECT_THROW(m.forward_attention(x, x, x, {}, true, Tensor::zeros({2, 2}, DType::bool_)), ShapeError);
  EXPECT_THROW(m.forward_attention(x, x, x.to(DType::f64)), DTypeError);
  EXPECT_THROW(nn::LearnedPositionalEmbedding(3, 4)(Tensor::zeros({2, 5, 4})), ShapeError);
  EXPECT_THROW(nn::masked_mean_pool(Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 3})), DTypeError);
  EXPECT_THROW(nn::masked_max_pool(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 2}, DType::bool_)), ShapeError);
  try {
    m.forward_attention(x, x, x, Tensor::zeros({3, 2}, DType::bool_));
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("MultiheadAttention: key_padding_mask must be [N, S] = [2, 3], got [3, 2]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
