// nn::RNN / LSTM / GRU against PyTorch (tests/fixtures/seq, made by make_seq_fixtures.py):
// each case loads torch's state_dict from safetensors, runs forward_with_state and compares
// the output, h_n, c_n and the gradients of every input and parameter to 1e-6 in f64; then
// finite-difference checks on tiny layers, and the bad-input errors.
#include <gtest/gtest.h>

#include <memory>

#include "tests/engine/seq_fixture.h"
#include "tests/engine/test_util.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/io/state_dict.h"
#include "engine/nn/rnn.h"

using namespace kiln;
using namespace kiln::test;
using kiln::nn::RNNOptions;

namespace {

std::shared_ptr<nn::RNNBase> make_layer(const SeqCase& c) {
  const auto& j = c.config;
  RNNOptions o;
  o.input_size = j.at("input_size");
  o.hidden_size = j.at("hidden_size");
  o.num_layers = j.at("num_layers");
  o.bias = j.at("bias");
  o.batch_first = j.at("batch_first");
  o.bidirectional = j.at("bidirectional");
  o.nonlinearity = j.at("nonlinearity");
  if (c.layer == "LSTM") return std::make_shared<nn::LSTM>(o);
  if (c.layer == "GRU") return std::make_shared<nn::GRU>(o);
  return std::make_shared<nn::RNN>(o);
}

Tensor get(const std::map<std::string, Tensor>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? Tensor() : it->second;
}

class RnnPyTorch : public testing::TestWithParam<SeqCase> {};

TEST_P(RnnPyTorch, OutputsAndGradientsMatch) {
  const SeqCase& c = GetParam();
  ASSERT_FALSE(c.layer.empty()) << "cannot read " << seq_fixture_path("cases.json");
  auto layer = make_layer(c);
  layer->to(DType::f64);
  const nn::LoadStateDictResult skipped = io::load_state_dict(*layer, seq_fixture_path(c.name + ".safetensors"));
  EXPECT_TRUE(skipped.missing_keys.empty() && skipped.unexpected_keys.empty());
  const auto io = load_named(c.name + ".io.safetensors");

  Tensor x = get(io, "input").clone().requires_grad_(true);
  Tensor h0 = get(io, "h0"), c0 = get(io, "c0"), mask;
  if (h0.defined()) h0 = h0.clone().requires_grad_(true);
  if (c0.defined()) c0 = c0.clone().requires_grad_(true);
  if (get(io, "lengths").defined()) mask = nn::lengths_to_padding_mask(get(io, "lengths"), x.size(c.config.at("batch_first") ? 1 : 0));
  nn::RNNResult r = layer->forward_with_state(x, h0, c0, mask);
  expect_close(r.output, get(io, "output"), "output");
  expect_close(r.h_n, get(io, "h_n"), "h_n");
  Tensor loss = sum(r.output * get(io, "grad_output")) + sum(r.h_n * get(io, "grad_h_n"));
  if (c.layer == "LSTM") {
    expect_close(r.c_n, get(io, "c_n"), "c_n");
    loss = loss + sum(r.c_n * get(io, "grad_c_n"));
  } else {
    EXPECT_FALSE(r.c_n.defined());
  }
  loss.backward();
  expect_close(x.grad(), get(io, "grad.input"), "grad of input");
  if (h0.defined()) expect_close(h0.grad(), get(io, "grad.h0"), "grad of h0");
  if (c0.defined()) expect_close(c0.grad(), get(io, "grad.c0"), "grad of c0");
  int checked = 0;
  for (auto& [name, p] : layer->named_parameters()) {
    Tensor want = get(io, "grad." + name);
    ASSERT_TRUE(want.defined()) << "the fixture has no gradient for " << name;
    expect_close(p.grad(), want, "grad of " + name);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(layer->named_parameters().size()));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RnnPyTorch, testing::ValuesIn(seq_cases({"RNN", "LSTM", "GRU"})), case_name);

// For each parameter p and a random direction v: the central difference of loss() along v
// against <grad p, v> from backward() (a directional form of gradcheck: two evaluations per
// parameter tensor instead of two per element, which keeps the test fast).
void check_parameter_grads(nn::Module& m, const std::function<Tensor()>& loss) {
  for (auto& [name, p] : m.named_parameters()) p.zero_grad();
  loss().backward();
  NoGradGuard no_grad;
  Generator gen(9);
  for (auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    const Tensor v = normal(p.shape(), 0, 1, DType::f64, Device(), &gen);
    const double analytic = sum(p.grad() * v).item<double>(), eps = 1e-6;
    const Tensor orig = p.clone();
    p.copy_(orig + v * eps);
    const double fp = loss().item<double>();
    p.copy_(orig - v * eps);
    const double fm = loss().item<double>();
    p.copy_(orig);
    const double numeric = (fp - fm) / (2 * eps);
    EXPECT_NEAR(analytic, numeric, 1e-6 + 1e-4 * std::abs(numeric)) << name;
  }
}

struct GradcheckCase {
  const char* layer;
  bool bidirectional, batch_first, with_mask;
};

class RnnGradcheck : public testing::TestWithParam<GradcheckCase> {};

TEST_P(RnnGradcheck, InputsStatesAndParameters) {
  const GradcheckCase g = GetParam();
  manual_seed(7);
  RNNOptions o{.input_size = 2, .hidden_size = 2, .num_layers = 2, .batch_first = g.batch_first,
               .bidirectional = g.bidirectional};
  std::shared_ptr<nn::RNNBase> m;
  if (std::string(g.layer) == "LSTM") m = std::make_shared<nn::LSTM>(o);
  else if (std::string(g.layer) == "GRU") m = std::make_shared<nn::GRU>(o);
  else m = std::make_shared<nn::RNN>(o);
  m->to(DType::f64);
  const int64_t d = g.bidirectional ? 2 : 1, n = 2, t = 3;
  Tensor x = randn64(g.batch_first ? Shape{n, t, 2} : Shape{t, n, 2}, 1);
  Tensor h0 = randn64({2 * d, n, 2}, 2), c0 = randn64({2 * d, n, 2}, 3);
  const bool lstm = m->mode == nn::RNNBase::Mode::lstm;
  Tensor mask = g.with_mask ? nn::lengths_to_padding_mask(Tensor::from_vector<int64_t>({3, 1}, {2}), t) : Tensor();
  auto fn = [&](const std::vector<Tensor>& in) {
    nn::RNNResult r = m->forward_with_state(in[0], in[1], lstm ? in[2] : Tensor(), mask);
    Tensor out = cat({r.output.flatten(), r.h_n.flatten()}, 0);
    return lstm ? cat({out, r.c_n.flatten()}, 0) : out;
  };
  autograd::GradcheckOptions one;
  one.projections = 1;
  const autograd::GradcheckResult r = autograd::gradcheck(fn, {x, h0, c0.detach().requires_grad_(lstm)}, one);
  EXPECT_TRUE(r.ok) << r.message;
  Tensor w = randn64({1}, 4, false);
  check_parameter_grads(*m, [&] { return sum(fn({x, h0, c0}) * w.select(0, 0)); });
}

INSTANTIATE_TEST_SUITE_P(Tiny, RnnGradcheck,
                         testing::Values(GradcheckCase{"RNN", true, false, true}, GradcheckCase{"LSTM", true, true, true},
                                         GradcheckCase{"LSTM", false, false, false},
                                         GradcheckCase{"GRU", true, false, true}, GradcheckCase{"GRU", false, true, false}),
                         [](const testing::TestParamInfo<GradcheckCase>& i) {
                           return std::string(i.param.layer) + (i.param.bidirectional ? "_bidir" : "") +
                                  (i.param.batch_first ? "_batch_first" : "") + (i.param.with_mask ? "_mask" : "");
                         });

TEST(Rnn, ParameterNamesShapesAndInitializer) {
  manual_seed(0);
  nn::LSTM lstm(RNNOptions{.input_size = 3, .hidden_size = 4, .num_layers = 2, .bidirectional = true});
  std::vector<std::string> names;
  for (auto& [k, p] : lstm.named_parameters()) {
    names.push_back(k);
    for (double v : p.to(DType::f64).to_vector<double>()) {
      EXPECT_LE(std::abs(v), 0.5) << k;  // U(-1/sqrt(4), 1/sqrt(4))
    }
  }
  const std::vector<std::string> want = {
      "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
      "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
      "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(lstm.state_dict()[0].second.shape(), (Shape{16, 3}));
  EXPECT_EQ(lstm.state_dict()[8].second.shape(), (Shape{16, 8}));
  EXPECT_EQ(nn::GRU(3, 5).state_dict()[1].second.shape(), (Shape{15, 5}));
  EXPECT_EQ(lstm.repr(), "LSTM(3, 4, num_layers=2, bidirectional=True)");
  nn::RNN plain(RNNOptions{.input_size = 2, .hidden_size = 3, .bias = false});
  EXPECT_EQ(plain.named_parameters().size(), 2u);
}

TEST(Rnn, UnbatchedInputAndDropoutOnlyInTraining) {
  manual_seed(1);
  nn::GRU gru(RNNOptions{.input_size = 2, .hidden_size = 3, .num_layers = 2, .dropout = 0.5});
  Tensor x = randn64({4, 2}, 5, false).to(DType::f32);
  nn::RNNResult one = gru.forward_with_state(x);
  EXPECT_EQ(one.output.shape(), (Shape{4, 3}));
  EXPECT_EQ(one.h_n.shape(), (Shape{2, 3}));
  gru.eval();
  nn::RNNResult a = gru.forward_with_state(x), b = gru.forward_with_state(x.unsqueeze(1));
  expect_close(a.output, b.output.squeeze(1), "unbatched vs batch of one");
  Tensor again = gru.forward_with_state(x).output;
  expect_close(again, a.output, "eval is deterministic", 0);
  gru.train();
  EXPECT_FALSE(gru.forward_with_state(x).output.to_vector<float>() == a.output.to_vector<float>());
}

TEST(Rnn, PaddedStepsDoNotChangeTheState) {
  manual_seed(2);
  nn::LSTM lstm(RNNOptions{.input_size = 2, .hidden_size = 3, .batch_first = true, .bidirectional = true});
  Tensor x = randn64({1, 5, 2}, 6, false).to(DType::f32);
  // A sequence of 3 valid steps padded to 5 gives the same states as the 3 steps alone.
  nn::RNNResult padded = lstm.forward_with_state(x, {}, {}, nn::lengths_to_padding_mask(Tensor::from_vector<int64_t>({3}, {1}), 5));
  nn::RNNResult alone = lstm.forward_with_state(x.narrow(1, 0, 3));
  expect_close(padded.h_n, alone.h_n, "h_n", 1e-6);
  expect_close(padded.c_n, alone.c_n, "c_n", 1e-6);
  expect_close(padded.output.narrow(1, 0, 3), alone.output, "valid outputs", 1e-6);
  expect_close(padded.output.narrow(1, 3, 2), Tensor::zeros({1, 2, 6}), "padded outputs", 0);
}

TEST(Rnn, StateDictFileRoundTripAndErrorsNameTheFile) {
  TempDir dir("kiln-rnn");
  manual_seed(3);
  nn::GRU a(RNNOptions{.input_size = 2, .hidden_size = 3, .bidirectional = true});
  manual_seed(4);
  nn::GRU b(RNNOptions{.input_size = 2, .hidden_size = 3, .bidirectional = true});
  io::save_state_dict(a, dir / "gru.safetensors");
  io::load_state_dict(b, dir / "gru.safetensors");
  for (size_t i = 0; i < a.state_dict().size(); ++i)
    expect_close(b.state_dict()[i].second, a.state_dict()[i].second, a.state_dict()[i].first, 0);
  // An LSTM's weights in a GRU: every size differs, and the message names the file.
  nn::LSTM other(RNNOptions{.input_size = 2, .hidden_size = 3, .bidirectional = true});
  io::save_state_dict(other, dir / "lstm.safetensors");
  try {
    io::load_state_dict(b, dir / "lstm.safetensors");
    ADD_FAILURE() << "an LSTM state_dict loaded into a GRU";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "lstm.safetensors"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("size mismatch for weight_ih_l0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(io::load_state_dict(b, dir / "missing.safetensors"), IoError);
}

TEST(Rnn, BadInputsGiveClearErrors) {
  nn::LSTM lstm(3, 4);
  EXPECT_THROW(lstm.forward(Tensor::zeros({5, 2, 2})), ShapeError);
  EXPECT_THROW(lstm.forward(Tensor::zeros({2})), ShapeError);
  EXPECT_THROW(lstm.forward(Tensor::zeros({5, 2, 3}, DType::f64)), DTypeError);
  EXPECT_THROW(lstm.forward_with_state(Tensor::zeros({5, 2, 3}), Tensor::zeros({1, 3, 4})), ShapeError);
  EXPECT_THROW(lstm.forward_with_state(Tensor::zeros({5, 2, 3}), {}, {}, Tensor::zeros({2, 5})), DTypeError);
  EXPECT_THROW(lstm.forward_with_state(Tensor::zeros({5, 2, 3}), {}, {}, Tensor::zeros({5, 2}, DType::bool_)),
               ShapeError);
  EXPECT_THROW(nn::GRU(3, 4).forward_with_state(Tensor::zeros({5, 2, 3}), {}, Tensor::zeros({1, 2, 4})), ValueError);
  EXPECT_THROW(nn::RNN(RNNOptions{.input_size = 3, .hidden_size = 4, .nonlinearity = "sigmoid"}), ValueError);
  EXPECT_THROW(nn::LSTM(3, 0), ValueError);
  EXPECT_THROW(nn::LSTM(RNNOptions{.input_size = 3, .hidden_size = 4, .dropout = 1.5}), ValueError);
  EXPECT_THROW(nn::lengths_to_padding_mask(Tensor::from_vector<int64_t>({6}, {1}), 5), IndexError);
  try {
    lstm.forward(Tensor::zeros({5, 2, 2}));
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("LSTM: input of shape [5, 2, 2] does not end with input_size=3"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
