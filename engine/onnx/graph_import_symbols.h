// Internal to engine/onnx's graph import: the symbolic dimensions of a model's inputs and
// the sizes they take in the two example runs that name every value's dims.
//
// Note [Symbols at import]
// The model runs twice with each symbolic dimension of its inputs at a size of its own: the
// batch N at 1 then 2, the k-th other name at a pair of sizes no other symbol uses (5 -> 8,
// 6 -> 11, ...; chosen so none is a small shift or double of another). A value's dim that
// keeps its size is that size; one that moves exactly as a symbol's sizes is that symbol
// (graph::sym_dim: "sequence"); any other is "?" (Conv over a symbolic height, a Reshape that
// merges the sequence with the features ...), never a wrong number (short of a dim that
// depends on a symbol yet equals at both sizes, e.g. ceil(s / 32)). When the model cannot
// run with its named symbols apart (two names that must be equal), both runs give every
// named symbol the same sizes; a dim that moves with them is then the symbol only when the
// model has a single named one, else "?".
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/graph/types.h"
#include "engine/onnx/model.h"

namespace kiln::onnx::detail {

// ---- the types recorded at import (onnx_types: "f32[N, sequence];i64[2] -> f32[N, ?]") ----
std::string types_str(const std::vector<graph::TensorType>& types);  // "f32[N, 3];i64[2]"
// The inverse of types_str; ValueError when malformed or a dim name graph::sym_dim refuses.
std::vector<graph::TensorType> parse_types(const std::string& types);
// Both sides of "<inputs> -> <outputs>"; ValueError without the arrow.
void split_types(const std::string& s, std::vector<graph::TensorType>& in, std::vector<graph::TensorType>& out);
// Whether `got` may take the place of the recorded `want`: same dtype and rank, and each dim
// equal or symbolic on either side (the model ran with it at two sizes).
bool fits(const graph::TensorType& want, const graph::TensorType& got);
// The recorded outputs `out` with each recorded input symbol replaced by what `in` has in its
// place (an Input whose "sequence" became 128 gives 128 downstream); a symbol the inputs give
// two different dims for becomes "?"; symbols no input holds (and "?") stay as recorded.
std::vector<graph::TensorType> substitute(const std::vector<graph::TensorType>& want,
                                          const std::vector<graph::TensorType>& in, std::vector<graph::TensorType> out);

class InputSymbols {
 public:
  // The symbols of `inputs`: a symbolic first dim is the batch N (its dim_param, wherever it
  // appears, is N too); every other dim_param is a named symbol. ValueError naming the input
  // and dim for a dim with neither a dim_value >= 0 nor a dim_param, and for a dim_param
  // graph::sym_dim refuses (", ; [ ]" in it, only digits) or "?".
  explicit InputSymbols(const std::vector<ValueInfo>& inputs);
  // The dims of input `v` as a SymShape (sizes, kBatch, named codes).
  graph::SymShape shape_of(const ValueInfo& v) const;
  // dim_param names of the symbolic entries of `v` after the first ("sequence", "N"), in order.
  std::vector<std::string> dim_params_of(const ValueInfo& v) const;
  // The size symbol `code` takes in run `run` (0 or 1); `shared`: every named one alike.
  int64_t size_in_run(int64_t code, int run, bool shared) const;
  // The dim a value had: `first` in run 0 and `second` in run 1.
  int64_t classify(int64_t first, int64_t second, bool shared) const;
  bool has_named() const { return !named_.empty(); }

 private:
  std::map<std::string, int64_t> code_;  // dim_param -> kBatch or graph::sym_dim(name)
  std::vector<int64_t> named_;           // the named codes, in order of appearance
};

}  // namespace kiln::onnx::detail
