// Recurrent layers: torch.nn.RNN (Elman, tanh or relu), torch.nn.LSTM (Hochreiter &
// Schmidhuber 1997, with the forget gate of Gers et al. 2000) and torch.nn.GRU (Cho et al.
// 2014), with PyTorch's equations, gate order, parameter names, shapes and initializer, so a
// PyTorch state_dict loads unchanged (proj_size is not supported).
//
// Shapes (N batch, T steps, I input_size, H hidden_size, D = 2 if bidirectional else 1,
// L num_layers):
//   input   [T, N, I], or [N, T, I] with batch_first, or unbatched [T, I]
//   h0, c0  [D*L, N, H] ([D*L, H] for an unbatched input); zeros when undefined. Row
//           layer * D + direction, as torch. batch_first does not apply to them.
//   output  [T, N, D*H] ([N, T, D*H] with batch_first): the last layer's hidden state at
//           each step, the forward direction first along the last dim
//   h_n, c_n  [D*L, N, H]: each layer's and direction's final state
// Parameters (per layer k and direction, suffix "" or "_reverse"), all drawn from
// U(-1/sqrt(H), 1/sqrt(H)) (torch.nn.RNNBase.reset_parameters) in registration order:
//   weight_ih_l{k}{suffix} [G*H, I_k]  (I_0 = I, I_k = D*H after the first layer)
//   weight_hh_l{k}{suffix} [G*H, H]
//   bias_ih_l{k}{suffix}, bias_hh_l{k}{suffix} [G*H]  (when bias)
// with G = 1 (RNN), 4 (LSTM: rows i, f, g, o) or 3 (GRU: rows r, z, n).
// Step equations (x_t the layer's input, h the previous state, W·h + b meaning
// linear(h, W_hh, b_hh) sliced to the gate's rows):
//   RNN   h' = act(W_ih x_t + b_ih + W_hh h + b_hh), act = tanh or relu
//   LSTM  i = σ(..), f = σ(..), g = tanh(..), o = σ(..); c' = f*c + i*g; h' = o * tanh(c')
//   GRU   r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(same with z),
//         n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h
// Dropout with probability `dropout` is applied to each layer's output but the last, in
// training mode only (F::dropout on the default generator).
//
// Padding: an optional bool padding_mask [N, T] (true = padded step, the convention of
// MultiheadAttention's key_padding_mask; it does not follow batch_first) stops padded steps
// from touching the state: at a padded step both directions carry h (and c) over unchanged and
// the output is 0. For padding at the end of each sequence (lengths_to_padding_mask) this is
// exactly torch's pack_padded_sequence(enforce_sorted=False) -> layer -> pad_packed_sequence(
// total_length=T): h_n is the state after each sequence's last valid step and the reverse
// direction starts from h0 at that step. A fully padded sequence gives h_n = h0.
//
// Every step is composed of differentiable ops (engine/core/ops.h), so autograd and every
// backend work; the input projection of all steps is one linear() per layer and direction.
#pragma once
#include <string>

#include "engine/nn/module.h"

namespace kiln::nn {

struct RNNOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  std::string nonlinearity = "tanh";  // RNN only: "tanh" or "relu"
  bool bias = true;
  bool batch_first = false;
  double dropout = 0.0;  // between layers, training only; 0 <= dropout <= 1
  bool bidirectional = false;
};

// What forward_with_state returns; c_n is undefined except for LSTM.
struct RNNResult {
  Tensor output;
  Tensor h_n;
  Tensor c_n;
};

// bool [N, T], true at steps t >= lengths[n]. lengths: integer [N], each in [0, T]
// (IndexError naming the sequence otherwise); the mask is on lengths' device.
Tensor lengths_to_padding_mask(const Tensor& lengths, int64_t max_length);

// The shared implementation (torch.nn.RNNBase); construct RNN, LSTM or GRU.
class RNNBase : public Module {
 public:
  enum class Mode { rnn_tanh, rnn_relu, lstm, gru };

  // h0 / c0 undefined = zeros; c0 must be undefined except for LSTM (ValueError).
  // ShapeError naming the layer and shapes for a wrong input, h0, c0 or padding_mask;
  // DTypeError for a non-bool mask or an input whose dtype differs from the parameters'.
  RNNResult forward_with_state(const Tensor& input, const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor(),
                               const Tensor& padding_mask = Tensor());
  // The output sequence only (h0 = zeros, no padding).
  Tensor forward(const Tensor& input) override { return forward_with_state(input).output; }
  std::string extra_repr() const override;
  // Redraws every parameter from U(-1/sqrt(H), 1/sqrt(H)).
  void reset_parameters();

  const Mode mode;
  const RNNOptions options;
  int64_t num_directions() const { return options.bidirectional ? 2 : 1; }

 protected:
  RNNBase(Mode mode, RNNOptions options);

 private:
  struct Weights {
    Tensor w_ih, w_hh, b_ih, b_hh;
  };
  // One layer in one direction over x [T, N, I_k]: outputs [T, N, H], final h (and c).
  Tensor run_direction(const Tensor& x, const Weights& w, bool reverse, Tensor& h, Tensor& c,
                       const Tensor& keep) const;
  std::vector<Weights> weights_;  // layer * D + direction
};

// Elman RNN (torch.nn.RNN).
class RNN : public RNNBase {
 public:
  explicit RNN(RNNOptions options);
  RNN(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : RNN(RNNOptions{.input_size = input_size, .hidden_size = hidden_size, .num_layers = num_layers}) {}
  std::string type_name() const override { return "RNN"; }
};

// Long short-term memory (torch.nn.LSTM); options.nonlinearity is ignored.
class LSTM : public RNNBase {
 public:
  explicit LSTM(RNNOptions options);
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : LSTM(RNNOptions{.input_size = input_size, .hidden_size = hidden_size, .num_layers = num_layers}) {}
  std::string type_name() const override { return "LSTM"; }
};

// Gated recurrent unit (torch.nn.GRU); options.nonlinearity is ignored.
class GRU : public RNNBase {
 public:
  explicit GRU(RNNOptions options);
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : GRU(RNNOptions{.input_size = input_size, .hidden_size = hidden_size, .num_layers = num_layers}) {}
  std::string type_name() const override { return "GRU"; }
};

}  // namespace kiln::nn
