// SequencePool (engine/graph/sequence_pool.h) against hand-computed values, its gradients by
// gradcheck, and the padding mask GraphModule derives from token ids (graph_module.h): equal to
// TextDataset's Batch::mask, and padding never changes a pooled text's output.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/data/text/text_dataset.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/sequence_pool.h"
#include "tests/engine/test_util.h"

namespace kiln::test {
namespace {

using graph::sequence_pool;

// x [2, 3, 2]: row 0 has 2 valid steps, row 1 none (an empty text).
Tensor example_x() { return Tensor::from_vector<float>({1, -2, 3, 4, 100, 100, 5, 6, 7, 8, 9, 10}, {2, 3, 2}); }
Tensor example_mask() { return Tensor::from_vector<float>({1, 1, 0, 0, 0, 0}, {2, 3}); }

TEST(SequencePool, ModesOverTheValidStepsOnly) {
  expect_values(sequence_pool(example_x(), example_mask(), "mean"), {2, 1, 0, 0});
  expect_values(sequence_pool(example_x(), example_mask(), "max"), {3, 4, 0, 0});
  expect_values(sequence_pool(example_x(), example_mask(), "last"), {3, 4, 0, 0});
  expect_values(sequence_pool(example_x(), example_mask(), "first"), {1, -2, 0, 0});
  // no mask: every step counts
  expect_values(sequence_pool(example_x(), Tensor{}, "mean"), {104.0 / 3, 102.0 / 3, 7, 8});
  expect_values(sequence_pool(example_x(), Tensor{}, "last"), {100, 100, 9, 10});
  expect_values(sequence_pool(example_x(), Tensor{}, "max"), {100, 100, 9, 10});
}

TEST(SequencePool, BadShapesAndModes) {
  EXPECT_THROW(sequence_pool(Tensor::zeros({2, 3}), Tensor{}, "mean"), ShapeError);
  EXPECT_THROW(sequence_pool(example_x(), Tensor::ones({2, 4}), "mean"), ShapeError);
  EXPECT_THROW(sequence_pool(example_x(), example_mask(), "median"), ValueError);
}

TEST(SequencePool, Gradcheck) {
  const Tensor mask = Tensor::from_vector<double>({1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0}, {3, 4});
  for (const char* mode : {"mean", "max", "last", "first"}) {
    SCOPED_TRACE(mode);
    expect_gradcheck([&](const std::vector<Tensor>& in) { return sequence_pool(in[0], mask, mode); },
                     {randn64({3, 4, 5}, 11)});
  }
}

graph::Graph bow_graph(int64_t t) {
  graph::Graph g;
  auto in = g.add_node("Input", "ids", {{"shape", std::vector<int64_t>{t}}, {"dtype", std::string("i64")}});
  auto e = g.add_node("Embedding", "emb", {{"num_embeddings", int64_t{20}}, {"embedding_dim", int64_t{3}}});
  auto p = g.add_node("SequencePool", "pool", {{"mode", std::string("mean")}});
  auto o = g.add_node("Output", "out");
  g.connect({in, 0}, {e, 0});
  g.connect({e, 0}, {p, 0});
  g.connect({p, 0}, {o, 0});
  return g;
}

TEST(SequencePool, GraphModuleMasksPaddingFromTheIds) {
  EXPECT_EQ(graph::padding_mask_input(bow_graph(4)), std::optional<size_t>(0));
  manual_seed(1);
  graph::GraphModule m4(bow_graph(4));
  graph::GraphModule m7(bow_graph(7));
  m7.load_state_dict(m4.state_dict());
  // the same texts padded to 4 and to 7 steps pool to the same vectors
  const Tensor a = m4.forward(Tensor::from_vector<int64_t>({5, 6, 0, 0, 7, 8, 9, 3}, {2, 4}));
  const Tensor b = m7.forward(Tensor::from_vector<int64_t>({5, 6, 0, 0, 0, 0, 0, 7, 8, 9, 3, 0, 0, 0}, {2, 7}));
  expect_values(b, a.to(DType::f64).to_vector<double>());
}

TEST(SequencePool, TextDatasetMaskIsTheIdsMask) {
  auto ix = std::make_shared<data::TextIndex>();
  ix->classes = {"a", "b"};
  ix->samples = {{"one two three four five", 0, "s0"}, {"two", 1, "s1"}, {"six seven", 1, "s2"}};
  const data::TextSplit s = data::split_and_fit(ix, 0, 0, data::TokenizerOptions{});
  const data::TextDataset ds(ix, {0, 1, 2}, s.tokenizer, 4);
  const data::Batch batch = ds.get_batch({0, 1, 2});
  expect_values(ne(batch.input, scalar_like(0, batch.input)).to(DType::f32), batch.mask.to(DType::f64).to_vector<double>(), 0);
}

}  // namespace
}  // namespace kiln::test
