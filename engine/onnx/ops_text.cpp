// TfIdfVectorizer (ONNX ai.onnx, opset 9) on the host (a clearly named fallback): counts
// the n-grams of integer token rows that appear in the pool, with skips, and weights them.
#include <map>

#include "engine/onnx/op_context.h"

namespace kiln::onnx {

namespace {

std::vector<Tensor> tfidf_op(OpContext& c) {
  const Tensor& x = c.input(0);
  if (!is_integral(x.dtype())) c.fail("Kiln's TfIdfVectorizer takes integer tokens (pool_int64s), got " + std::string(dtype_name(x.dtype())));
  if (x.dim() != 1 && x.dim() != 2) c.fail("input must be [C] or [N, C], got " + shape_str(x.shape()));
  int64_t min_n = c.attr_int("min_gram_length"), max_n = c.attr_int("max_gram_length"), max_skip = c.attr_int("max_skip_count");
  std::string mode = c.attr_string("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") c.fail("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  std::vector<int64_t> counts = c.attr_ints("ngram_counts"), indexes = c.attr_ints("ngram_indexes");
  std::vector<int64_t> pool = c.attr_ints("pool_int64s");
  std::vector<double> weights = c.attr_floats("weights");
  if (min_n < 1 || max_n < min_n || max_skip < 0) c.fail("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  // pool n-grams of length k lie in [counts[k-1], counts[k]) (the last up to the pool's end)
  std::map<std::vector<int64_t>, int64_t> grams;
  size_t j = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    int64_t end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(pool.size());
    int64_t len = static_cast<int64_t>(k) + 1;
    for (int64_t p = counts[k]; p + len <= end; p += len, ++j) {
      if (j >= indexes.size()) c.fail("ngram_indexes has fewer entries than the pool's n-grams");
      grams[std::vector<int64_t>(pool.begin() + p, pool.begin() + p + len)] = indexes[j];
    }
  }
  int64_t width = 0;
  for (int64_t i : indexes) width = std::max(width, i + 1);
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < width) c.fail("weights has fewer entries than the output");
  int64_t rows = x.dim() == 2 ? x.size(0) : 1, cols = x.size(-1);
  std::vector<int64_t> tok = x.to_vector<int64_t>();
  std::vector<double> out(static_cast<size_t>(rows * width), 0.0);
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* row = tok.data() + r * cols;
    double* o = out.data() + r * width;
    for (int64_t n = min_n; n <= max_n; ++n)
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip)
        for (int64_t start = 0; start + (n - 1) * (skip + 1) < cols; ++start) {
          gram.clear();
          for (int64_t k = 0; k < n; ++k) gram.push_back(row[start + k * (skip + 1)]);
          auto it = grams.find(gram);
          if (it != grams.end()) o[it->second] += 1;
        }
    for (int64_t i = 0; i < width; ++i) {
      double w = weights.empty() ? 1.0 : weights[size_t(i)];
      if (mode == "IDF") o[i] = o[i] > 0 ? w : 0.0;
      else if (mode == "TFIDF") o[i] *= w;
    }
  }
  Shape shape = x.dim() == 2 ? Shape{rows, width} : Shape{width};
  return {from_doubles(out, shape, DType::f32, c.device())};
}

}  // namespace

void register_text_ops(OpTable& t) { t["TfIdfVectorizer"] = tfidf_op; }

}  // namespace kiln::onnx
