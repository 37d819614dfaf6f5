#include "engine/nn/embedding.h"

#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/nn/init.h"

namespace kiln::nn {

Embedding::Embedding(int64_t n, int64_t dim) : num_embeddings(n), embedding_dim(dim) {
  KILN_CHECK(n >= 0 && dim >= 0, ValueError, "Embedding: sizes must be non-negative, got num_embeddings=", n,
             ", embedding_dim=", dim);
  weight = register_parameter("weight", Tensor::empty({n, dim}));
  init::normal_(weight);
}

Tensor Embedding::forward(const Tensor& indices) {
  KILN_CHECK(is_integral(indices.dtype()), DTypeError, "Embedding: indices must be integers (i64), got ",
             dtype_name(indices.dtype()));
  Shape out = indices.shape();
  out.push_back(embedding_dim);
  return index_select(weight, 0, indices.to(DType::i64).reshape({-1})).reshape(out);
}

std::string Embedding::extra_repr() const { return detail::str_cat(num_embeddings, ", ", embedding_dim); }

}  // namespace kiln::nn
