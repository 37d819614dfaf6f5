// ONNX recurrent layers RNN, GRU and LSTM (Operators.md; gate orders W = [z, r, h] for GRU
// and [i, o, f, c] for LSTM), unrolled over time with engine matmuls. layout 0: X
// [seq, batch, input], Y [seq, dirs, batch, hidden]; layout 1: X [batch, seq, input], Y
// [batch, seq, dirs, hidden]. Directions forward, reverse, bidirectional; sequence_lens as
// the spec says (steps past a sequence's length: zeros in Y, the state kept).
#include <cmath>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

enum class Cell { RNN, GRU, LSTM };

struct Act {
  std::string name;
  double alpha = 0, beta = 0;
};

Tensor apply(const OpContext& c, const Act& a, const Tensor& x) {
  Tensor al = Tensor::scalar(a.alpha, x.dtype(), x.device()), be = Tensor::scalar(a.beta, x.dtype(), x.device());
  if (a.name == "Sigmoid") return sigmoid(x);
  if (a.name == "Tanh") return tanh(x);
  if (a.name == "Relu") return relu(x);
  if (a.name == "LeakyRelu") return leaky_relu(x, a.alpha);
  if (a.name == "HardSigmoid") return clamp(add(mul(x, al), be), 0.0, 1.0);
  if (a.name == "Affine") return add(mul(x, al), be);
  if (a.name == "ScaledTanh") return mul(al, tanh(mul(x, be)));
  if (a.name == "Softsign") return div(x, add(abs(x), Tensor::scalar(1, x.dtype(), x.device())));
  if (a.name == "Softplus") return log1p(exp(x));
  if (a.name == "Elu") return where(gt(x, Tensor::scalar(0, x.dtype(), x.device())), x, mul(al, expm1(x)));
  if (a.name == "ThresholdedRelu") return where(gt(x, al), x, Tensor::scalar(0, x.dtype(), x.device()));
  c.fail("unknown activation '" + a.name + "'");
}

template <Cell K>
std::vector<Tensor> rnn_op(OpContext& c) {
  constexpr int gates = K == Cell::RNN ? 1 : K == Cell::GRU ? 3 : 4;
  Tensor x = c.input(0);
  const Tensor& w = c.input(1);  // [dirs, gates*hidden, input]
  const Tensor& r = c.input(2);  // [dirs, gates*hidden, hidden]
  int64_t layout = c.attr_int("layout", 0);
  if (layout) x = x.transpose(0, 1);  // -> [seq, batch, input]
  int64_t seq = x.size(0), batch = x.size(1), hidden = r.size(2);
  if (c.has_attr("hidden_size") && c.attr_int("hidden_size") != hidden) c.fail("hidden_size does not match R");
  std::string direction = c.attr_string("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (w.size(0) != dirs) c.fail("W has " + std::to_string(w.size(0)) + " directions for '" + direction + "'");
  // sequence_lens [batch]: steps t >= len of a sequence leave its state unchanged and give 0 in
  // Y, so Y_h / Y_c hold its last valid step (the reverse direction starts at len - 1).
  Tensor lens;
  if (c.has_input(4)) {
    std::vector<int64_t> v = c.ints_input(4);
    if (static_cast<int64_t>(v.size()) != batch)
      c.fail("sequence_lens has " + std::to_string(v.size()) + " entries for a batch of " + std::to_string(batch));
    bool ragged = false;
    std::vector<double> as_double;
    for (int64_t len : v) {
      if (len < 0 || len > seq)
        c.fail("sequence_lens entry " + std::to_string(len) + " is outside [0, " + std::to_string(seq) + "]");
      ragged = ragged || len != seq;
      as_double.push_back(static_cast<double>(len));
    }
    if (ragged) lens = Tensor::from_vector<double>(as_double, {batch, 1}).to(x.dtype()).to(x.device());
  }
  double clip = c.attr_float("clip", 0.0);
  std::vector<std::string> names = c.has_attr("activations") ? c.attr_strings("activations") : std::vector<std::string>{};
  std::vector<double> alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  int per_dir = K == Cell::RNN ? 1 : K == Cell::GRU ? 2 : 3;
  std::vector<Act> acts;
  for (int64_t d = 0; d < dirs; ++d)
    for (int k = 0; k < per_dir; ++k) {
      size_t i = static_cast<size_t>(d * per_dir + k);
      Act a;
      a.name = i < names.size() ? names[i] : (K == Cell::RNN ? "Tanh" : k == 0 ? "Sigmoid" : "Tanh");
      // defaults of the parametric activations (Operators.md, RNN)
      a.alpha = i < alphas.size() ? alphas[i] : a.name == "LeakyRelu" ? 0.01 : a.name == "HardSigmoid" ? 0.2 : 1.0;
      a.beta = i < betas.size() ? betas[i] : a.name == "HardSigmoid" ? 0.5 : a.name == "Affine" ? 0.0 : 1.0;
      acts.push_back(a);
    }
  bool linear_before_reset = K == Cell::GRU && c.attr_int("linear_before_reset", 0) != 0;
  bool input_forget = K == Cell::LSTM && c.attr_int("input_forget", 0) != 0;
  DType dt = x.dtype();
  Tensor zeros_state = Tensor::zeros({batch, hidden}, dt, x.device());
  std::vector<Tensor> ys(static_cast<size_t>(dirs)), hs, cs;
  auto clipped = [&](const Tensor& t) { return clip > 0 ? clamp(t, -clip, clip) : t; };
  for (int64_t d = 0; d < dirs; ++d) {
    Tensor wd = w.select(0, d), rd = r.select(0, d);  // [G*H, I], [G*H, H]
    Tensor wb, rb;
    if (c.has_input(3)) {
      Tensor b = c.input(3).select(0, d);
      wb = b.slice(0, 0, gates * hidden);
      rb = b.slice(0, gates * hidden, 2 * gates * hidden);
    } else {
      wb = rb = Tensor::zeros({gates * hidden}, dt, x.device());
    }
    Tensor h = c.has_input(5) ? c.input(5).select(0, d) : zeros_state;
    if (layout && c.has_input(5)) h = c.input(5).select(1, d);
    Tensor cell = zeros_state, p;
    if (K == Cell::LSTM) {
      if (c.has_input(6)) cell = layout ? c.input(6).select(1, d) : c.input(6).select(0, d);
      if (c.has_input(7)) p = c.input(7).select(0, d);  // [3*H]: i, o, f
    }
    // X W^T + Wb for every step at once: [seq, batch, G*H]
    Tensor xw = add(matmul(x, wd.t()), wb);
    std::vector<Tensor> steps(static_cast<size_t>(seq));
    const Act* a = &acts[size_t(d * per_dir)];
    for (int64_t s = 0; s < seq; ++s) {
      int64_t t = (direction == "reverse" || d == 1) ? seq - 1 - s : s;
      Tensor xt = xw.select(0, t);
      const Tensor h_prev = h, cell_prev = cell;
      auto gate = [&](const Tensor& m, int k) { return m.slice(1, k * hidden, (k + 1) * hidden); };
      if (K == Cell::RNN) {
        h = apply(c, a[0], clipped(add(add(xt, matmul(h, rd.t())), rb)));
      } else if (K == Cell::GRU) {
        Tensor rw = rd.slice(0, 0, 2 * hidden), rh = rd.slice(0, 2 * hidden, 3 * hidden);
        Tensor hr = add(matmul(h, rw.t()), rb.slice(0, 0, 2 * hidden));
        Tensor z = apply(c, a[0], clipped(add(gate(xt, 0), gate(hr, 0))));
        Tensor rg = apply(c, a[0], clipped(add(gate(xt, 1), gate(hr, 1))));
        Tensor rbh = rb.slice(0, 2 * hidden, 3 * hidden);
        Tensor hh = linear_before_reset ? mul(rg, add(matmul(h, rh.t()), rbh)) : add(matmul(mul(rg, h), rh.t()), rbh);
        Tensor cand = apply(c, a[1], clipped(add(gate(xt, 2), hh)));
        Tensor one = Tensor::scalar(1, dt, x.device());
        h = add(mul(sub(one, z), cand), mul(z, h));
      } else {
        Tensor g = add(add(xt, matmul(h, rd.t())), rb);
        Tensor gi = gate(g, 0), go = gate(g, 1), gf = gate(g, 2), gc = gate(g, 3);
        if (p.defined()) {
          gi = add(gi, mul(p.slice(0, 0, hidden), cell));
          gf = add(gf, mul(p.slice(0, 2 * hidden, 3 * hidden), cell));
        }
        Tensor i = apply(c, a[0], clipped(gi));
        Tensor f = input_forget ? sub(Tensor::scalar(1, dt, x.device()), i) : apply(c, a[0], clipped(gf));
        Tensor cand = apply(c, a[1], clipped(gc));
        cell = add(mul(f, cell), mul(i, cand));
        if (p.defined()) go = add(go, mul(p.slice(0, hidden, 2 * hidden), cell));
        Tensor o = apply(c, a[0], clipped(go));
        h = mul(o, apply(c, a[2], cell));
      }
      if (lens.defined()) {
        Tensor valid = gt(lens, Tensor::scalar(static_cast<double>(t), dt, x.device()));  // [batch, 1]
        steps[size_t(t)] = where(valid, h, zeros_state);
        h = where(valid, h, h_prev);
        if (K == Cell::LSTM) cell = where(valid, cell, cell_prev);
      } else {
        steps[size_t(t)] = h;
      }
    }
    ys[size_t(d)] = stack(steps, 0);  // [seq, batch, H]
    hs.push_back(h);
    cs.push_back(cell);
  }
  Tensor y = stack(ys, 1);  // [seq, dirs, batch, H]
  Tensor yh = stack(hs, 0), yc = stack(cs, 0);  // [dirs, batch, H]
  if (layout) {
    y = y.permute({2, 0, 1, 3}).contiguous();  // [batch, seq, dirs, H]
    yh = yh.transpose(0, 1).contiguous();
    yc = yc.transpose(0, 1).contiguous();
  }
  if (K == Cell::LSTM) return {y, yh, yc};
  return {y, yh};
}

}  // namespace

void register_rnn_ops(OpTable& t) {
  t["RNN"] = rnn_op<Cell::RNN>;
  t["GRU"] = rnn_op<Cell::GRU>;
  t["LSTM"] = rnn_op<Cell::LSTM>;
}

}  // namespace kiln::onnx
