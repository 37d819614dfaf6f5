// Lookup table (torch.nn.Embedding).
#pragma once
#include "engine/nn/module.h"

namespace kiln::nn {

// indices i64 [*] -> [*, embedding_dim], rows of weight [num_embeddings, embedding_dim]
// (initialized N(0, 1), as torch). Other integer indices are converted to i64; DTypeError
// for floating or bool indices; IndexError for an index outside [0, num_embeddings).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) override;
  std::string type_name() const override { return "Embedding"; }
  std::string extra_repr() const override;

  const int64_t num_embeddings, embedding_dim;
  Tensor weight;
};

}  // namespace kiln::nn
