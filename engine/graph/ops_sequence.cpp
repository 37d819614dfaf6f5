// Sequence ops over [N, T, C] with the padding mask GraphModule hands them (graph_module.h):
// SequencePool. The recurrent and attention layers (ops_recurrent.cpp) set takes_padding_mask
// too, so that they see the same mask.
#include "engine/graph/op_helpers.h"
#include "engine/graph/sequence_pool.h"

namespace kiln::graph::detail {

void register_sequence_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "SequencePool";
  s.category = "Pooling";
  s.description =
      "Pools [N, T, C] to [N, C] over the valid (non-padded) steps of a token sequence: mean, max, last or "
      "first step (the [CLS] position).";
  s.inputs = {{"in", "[N, T, C]"}};
  s.outputs = {{"out", "[N, C]"}};
  s.attributes = {choice_attr("mode", "mean", sequence_pool_modes(),
                              "mean: average of the valid steps; max: elementwise maximum; last: the last valid "
                              "step; first: step 0. Padding comes from the token ids (id 0 is <pad>).")};
  s.takes_padding_mask = true;
  s.infer = [](const std::vector<TensorType>& in, const Attributes&) {
    const TensorType& t = in.at(0);
    expect_floating("SequencePool", t);
    expect_rank("SequencePool", t, 3, "[N, T, C]");
    expect_batched("SequencePool", t);
    return std::vector<TensorType>{TensorType{t.dtype, {t.shape[0], t.shape[2]}}};
  };
  s.macs = [](const std::vector<TensorType>& in, const std::vector<TensorType>&, const Attributes&) {
    return sample_numel(in.at(0).shape);  // one per element, as for the other poolings
  };
  s.forward = [](nn::Module*, const std::vector<Tensor>& in, const Attributes& a) {
    return std::vector<Tensor>{sequence_pool(in.at(0), in.size() > 1 ? in[1] : Tensor{}, attr_string(a, "mode"))};
  };
  r.add(std::move(s));
}

}  // namespace kiln::graph::detail
