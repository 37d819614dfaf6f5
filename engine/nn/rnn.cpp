#include "engine/nn/rnn.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/functional.h"
#include "engine/nn/init.h"

namespace kiln::nn {

namespace {

int64_t gate_count(RNNBase::Mode mode) {
  switch (mode) {
    case RNNBase::Mode::lstm: return 4;
    case RNNBase::Mode::gru: return 3;
    default: return 1;
  }
}

RNNBase::Mode rnn_mode(const std::string& nonlinearity) {
  if (nonlinearity == "tanh") return RNNBase::Mode::rnn_tanh;
  if (nonlinearity == "relu") return RNNBase::Mode::rnn_relu;
  throw ValueError("RNN: unknown nonlinearity '" + nonlinearity + "' (expected 'tanh' or 'relu')");
}

// h' where the step is valid, h where it is padded (pad [N, 1] bool, or undefined).
Tensor keep_state(const Tensor& pad, const Tensor& updated, const Tensor& previous) {
  return pad.defined() ? where(pad, previous, updated) : updated;
}

}  // namespace

Tensor lengths_to_padding_mask(const Tensor& lengths, int64_t max_length) {
  KILN_CHECK(lengths.defined() && lengths.dim() == 1, ShapeError,
             "lengths_to_padding_mask: lengths must be 1-d [N], got ",
             lengths.defined() ? shape_str(lengths.shape()) : std::string("an undefined tensor"));
  KILN_CHECK(!is_floating(lengths.dtype()) && lengths.dtype() != DType::bool_, DTypeError,
             "lengths_to_padding_mask: lengths must be integers, got ", dtype_name(lengths.dtype()));
  KILN_CHECK(max_length >= 0, ValueError, "lengths_to_padding_mask: max_length must be >= 0, got ", max_length);
  const std::vector<int64_t> len = lengths.to_vector<int64_t>();
  for (size_t n = 0; n < len.size(); ++n)
    KILN_CHECK(len[n] >= 0 && len[n] <= max_length, IndexError, "lengths_to_padding_mask: sequence ", n,
               " has length ", len[n], ", outside [0, ", max_length, "]");
  Tensor steps = Tensor::arange(max_length, lengths.device()).unsqueeze(0);  // [1, T]
  return ge(steps, lengths.to(DType::i64).unsqueeze(1));                      // [N, T]
}

RNNBase::RNNBase(Mode m, RNNOptions opt) : mode(m), options(std::move(opt)) {
  const char* name = m == Mode::lstm ? "LSTM" : m == Mode::gru ? "GRU" : "RNN";
  KILN_CHECK(options.input_size > 0 && options.hidden_size > 0, ValueError, name,
             ": input_size and hidden_size must be positive, got ", options.input_size, " and ",
             options.hidden_size);
  KILN_CHECK(options.num_layers >= 1, ValueError, name, ": num_layers must be >= 1, got ", options.num_layers);
  KILN_CHECK(options.dropout >= 0 && options.dropout <= 1, ValueError, name,
             ": dropout must be in [0, 1], got ", options.dropout);
  const int64_t gates = gate_count(m) * options.hidden_size, d = num_directions();
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    const int64_t in = layer == 0 ? options.input_size : d * options.hidden_size;
    for (int64_t dir = 0; dir < d; ++dir) {
      const std::string sfx = "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
      Weights w;
      w.w_ih = register_parameter("weight_ih" + sfx, Tensor::empty({gates, in}));
      w.w_hh = register_parameter("weight_hh" + sfx, Tensor::empty({gates, options.hidden_size}));
      if (options.bias) {
        w.b_ih = register_parameter("bias_ih" + sfx, Tensor::empty({gates}));
        w.b_hh = register_parameter("bias_hh" + sfx, Tensor::empty({gates}));
      }
      weights_.push_back(w);
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(options.hidden_size));
  for (auto& [name, p] : named_parameters()) init::uniform_(p, -bound, bound);
}

std::string RNNBase::extra_repr() const {
  std::string s = detail::str_cat(options.input_size, ", ", options.hidden_size);
  if (options.num_layers != 1) s += detail::str_cat(", num_layers=", options.num_layers);
  if (!options.bias) s += ", bias=False";
  if (options.batch_first) s += ", batch_first=True";
  if (options.dropout != 0) s += detail::str_cat(", dropout=", options.dropout);
  if (options.bidirectional) s += ", bidirectional=True";
  return s;
}

Tensor RNNBase::run_direction(const Tensor& x, const Weights& w, bool reverse, Tensor& h, Tensor& c,
                              const Tensor& pad) const {
  const int64_t steps = x.size(0), hs = options.hidden_size;
  const Tensor gi = linear(x, w.w_ih, w.b_ih);  // [T, N, G*H]: every step's input projection at once
  std::vector<Tensor> outs(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    const Tensor gx = gi.select(0, t);
    const Tensor gh = linear(h, w.w_hh, w.b_hh);  // [N, G*H]
    const Tensor pad_t = pad.defined() ? pad.select(0, t) : Tensor();  // [N, 1]
    Tensor hn;
    switch (mode) {
      case Mode::rnn_tanh: hn = tanh(gx + gh); break;
      case Mode::rnn_relu: hn = relu(gx + gh); break;
      case Mode::lstm: {
        const Tensor g = gx + gh;
        const Tensor i = sigmoid(g.narrow(1, 0, hs)), f = sigmoid(g.narrow(1, hs, hs));
        const Tensor cell = tanh(g.narrow(1, 2 * hs, hs)), o = sigmoid(g.narrow(1, 3 * hs, hs));
        const Tensor cn = f * c + i * cell;
        hn = o * tanh(cn);
        c = keep_state(pad_t, cn, c);
        break;
      }
      case Mode::gru: {
        const Tensor r = sigmoid(gx.narrow(1, 0, hs) + gh.narrow(1, 0, hs));
        const Tensor z = sigmoid(gx.narrow(1, hs, hs) + gh.narrow(1, hs, hs));
        const Tensor n = tanh(gx.narrow(1, 2 * hs, hs) + r * gh.narrow(1, 2 * hs, hs));
        hn = (1.0 - z) * n + z * h;
        break;
      }
    }
    outs[static_cast<size_t>(t)] = pad_t.defined() ? where(pad_t, scalar_like(0, hn), hn) : hn;
    h = keep_state(pad_t, hn, h);
  }
  return stack(outs, 0);
}

RNNResult RNNBase::forward_with_state(const Tensor& input, const Tensor& h0, const Tensor& c0,
                                      const Tensor& padding_mask) {
  const std::string name = type_name();
  KILN_CHECK(input.defined() && (input.dim() == 2 || input.dim() == 3), ShapeError, name,
             ": input must be [T, N, input_size] ([N, T, input_size] with batch_first) or unbatched "
             "[T, input_size], got ",
             input.defined() ? shape_str(input.shape()) : std::string("an undefined tensor"));
  KILN_CHECK(mode == Mode::lstm || !c0.defined(), ValueError, name, ": c0 is only for LSTM");
  const bool batched = input.dim() == 3;
  // Time-major [T, N, I] inside.
  Tensor x = !batched ? input.unsqueeze(1) : options.batch_first ? input.transpose(0, 1) : input;
  const int64_t steps = x.size(0), batch = x.size(1), hs = options.hidden_size, d = num_directions();
  KILN_CHECK(x.size(2) == options.input_size, ShapeError, name, ": input of shape ", shape_str(input.shape()),
             " does not end with input_size=", options.input_size);
  KILN_CHECK(steps >= 1, ShapeError, name, ": input of shape ", shape_str(input.shape()), " has no time steps");
  const DType dt = weights_[0].w_ih.dtype();
  KILN_CHECK(input.dtype() == dt, DTypeError, name, ": input is ", dtype_name(input.dtype()),
             " but the parameters are ", dtype_name(dt));

  const Shape state_shape = batched ? Shape{d * options.num_layers, batch, hs} : Shape{d * options.num_layers, hs};
  auto check_state = [&](const Tensor& s, const char* what) {
    if (!s.defined()) return Tensor::zeros({d * options.num_layers, batch, hs}, dt, input.device());
    KILN_CHECK(s.shape() == state_shape, ShapeError, name, ": ", what, " must be ", shape_str(state_shape),
               ", got ", shape_str(s.shape()));
    KILN_CHECK(s.dtype() == dt, DTypeError, name, ": ", what, " is ", dtype_name(s.dtype()),
               " but the parameters are ", dtype_name(dt));
    return batched ? s : s.unsqueeze(1);
  };
  const Tensor h_init = check_state(h0, "h0");
  const Tensor c_init = mode == Mode::lstm ? check_state(c0, "c0") : Tensor();

  Tensor pad;  // bool [T, N, 1], true at padded steps
  if (padding_mask.defined()) {
    const Shape want = batched ? Shape{batch, steps} : Shape{steps};
    KILN_CHECK(padding_mask.dtype() == DType::bool_, DTypeError, name, ": padding_mask must be bool, got ",
               dtype_name(padding_mask.dtype()));
    KILN_CHECK(padding_mask.shape() == want, ShapeError, name, ": padding_mask must be [N, T] = ", shape_str(want),
               " (true = padded step), got ", shape_str(padding_mask.shape()));
    pad = (batched ? padding_mask : padding_mask.unsqueeze(0)).transpose(0, 1).unsqueeze(2);
  }

  std::vector<Tensor> h_n, c_n;
  Tensor layer_in = x;
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    std::vector<Tensor> dir_out;
    for (int64_t dir = 0; dir < d; ++dir) {
      const int64_t idx = layer * d + dir;
      Tensor h = h_init.select(0, idx);
      Tensor c = c_init.defined() ? c_init.select(0, idx) : Tensor();
      dir_out.push_back(run_direction(layer_in, weights_[static_cast<size_t>(idx)], dir == 1, h, c, pad));
      h_n.push_back(h);
      if (c.defined()) c_n.push_back(c);
    }
    layer_in = d == 1 ? dir_out[0] : cat(dir_out, 2);
    if (layer + 1 < options.num_layers && training_ && options.dropout > 0)
      layer_in = functional::dropout(layer_in, options.dropout, true);
  }

  RNNResult r;
  r.output = !batched ? layer_in.squeeze(1) : options.batch_first ? layer_in.transpose(0, 1) : layer_in;
  r.h_n = stack(h_n, 0);
  if (!c_n.empty()) r.c_n = stack(c_n, 0);
  if (!batched) {
    r.h_n = r.h_n.squeeze(1);
    if (r.c_n.defined()) r.c_n = r.c_n.squeeze(1);
  }
  return r;
}

RNN::RNN(RNNOptions o) : RNNBase(rnn_mode(o.nonlinearity), o) {}
LSTM::LSTM(RNNOptions o) : RNNBase(Mode::lstm, std::move(o)) {}
GRU::GRU(RNNOptions o) : RNNBase(Mode::gru, std::move(o)) {}

}  // namespace kiln::nn
