#include "engine/onnx/graph_import_symbols.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "engine/core/error.h"

namespace kiln::onnx::detail {

using graph::TensorType;

namespace {

// Run sizes of the named symbols (Note [Symbols at import]): each pair moves by its own
// amount (3, 5, 6, 7, 9, 8, 10, 11; the batch moves by 1), so no pair is another shifted
// (x + c), and none is another doubled; past the table the sizes grow apart (k-th: 20 + 3k
// -> 40 + 7k).
constexpr int64_t kRunSizes[][2] = {{5, 8}, {6, 11}, {7, 13}, {9, 16}, {10, 19}, {12, 20}, {14, 24}, {15, 26}};
constexpr size_t kTable = sizeof(kRunSizes) / sizeof(kRunSizes[0]);

}  // namespace

InputSymbols::InputSymbols(const std::vector<ValueInfo>& inputs) {
  auto where = [](const ValueInfo& v, size_t i) {
    return "graph input '" + v.name + "' dimension " + std::to_string(i);
  };
  std::set<std::string> batch;
  for (const ValueInfo& v : inputs) {
    for (size_t i = 0; i < v.shape.size(); ++i) {
      const Dim& d = v.shape[i];
      if (d.known()) continue;
      KILN_CHECK(!d.param.empty(), ValueError, where(v, i), " has neither a dim_value >= 0 nor a dim_param name",
                 d.value < -1 ? " (dim_value " + std::to_string(d.value) + ")" : std::string(),
                 "; the graph IR needs a size or a named symbolic dimension");
      KILN_CHECK(d.param != "?", ValueError, where(v, i), ": dim_param '?' is no name");
      try {
        (void)graph::sym_dim(d.param);  // refuses names that would not read back
      } catch (const ValueError& e) {
        throw ValueError(where(v, i) + ": " + e.what());
      }
      if (i == 0) batch.insert(d.param);
    }
  }
  for (const std::string& name : batch) code_[name] = graph::kBatch;
  for (const ValueInfo& v : inputs)
    for (const Dim& d : v.shape)
      if (!d.known() && !code_.count(d.param)) {
        const int64_t code = graph::sym_dim(d.param);
        code_[d.param] = code;
        if (code != graph::kBatch) named_.push_back(code);  // a name "N" is the batch anyway
      }
}

graph::SymShape InputSymbols::shape_of(const ValueInfo& v) const {
  graph::SymShape s;
  for (const Dim& d : v.shape) s.push_back(d.known() ? d.value : code_.at(d.param));
  return s;
}

std::vector<std::string> InputSymbols::dim_params_of(const ValueInfo& v) const {
  std::vector<std::string> names;
  for (size_t i = 1; i < v.shape.size(); ++i)
    if (!v.shape[i].known()) names.push_back(graph::dim_str(code_.at(v.shape[i].param)));
  return names;
}

int64_t InputSymbols::size_in_run(int64_t code, int run, bool shared) const {
  if (code == graph::kBatch) return run == 0 ? 1 : 2;
  size_t k = 0;
  if (!shared) k = static_cast<size_t>(std::find(named_.begin(), named_.end(), code) - named_.begin());
  if (k < kTable) return kRunSizes[k][run];
  const auto j = static_cast<int64_t>(k);
  return run == 0 ? 20 + 3 * j : 40 + 7 * j;
}

std::string types_str(const std::vector<TensorType>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ';';
    s += v[i].str();
  }
  return s;
}
std::vector<TensorType> parse_types(const std::string& s) {
  std::vector<TensorType> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ';')) {
    auto lb = item.find('[');
    KILN_CHECK(lb != std::string::npos && item.back() == ']', ValueError, "onnx_types: malformed type '", item, "'");
    TensorType t;
    t.dtype = dtype_from_name(item.substr(0, lb));
    std::string dims = item.substr(lb + 1, item.size() - lb - 2);
    std::stringstream ds(dims);
    std::string d;
    while (std::getline(ds, d, ',')) {
      d.erase(0, d.find_first_not_of(' '));
      d.erase(d.find_last_not_of(' ') + 1);
      const bool number = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
      t.shape.push_back(number ? std::stoll(d) : graph::sym_dim(d));  // "N", "?", "sequence"
    }
    out.push_back(t);
  }
  return out;
}
void split_types(const std::string& s, std::vector<TensorType>& in, std::vector<TensorType>& out) {
  auto arrow = s.find(" -> ");
  KILN_CHECK(arrow != std::string::npos, ValueError, "onnx_types: missing ' -> ' in '", s, "'");
  in = parse_types(s.substr(0, arrow));
  out = parse_types(s.substr(arrow + 4));
}
bool fits(const TensorType& want, const TensorType& got) {
  if (want.dtype != got.dtype || want.shape.size() != got.shape.size()) return false;
  for (size_t i = 0; i < want.shape.size(); ++i)
    if (!graph::is_symbolic(want.shape[i]) && !graph::is_symbolic(got.shape[i]) && want.shape[i] != got.shape[i])
      return false;
  return true;
}

std::vector<TensorType> substitute(const std::vector<TensorType>& want, const std::vector<TensorType>& in,
                                   std::vector<TensorType> out) {
  std::map<int64_t, int64_t> now;
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t d = 0; d < want[i].shape.size(); ++d) {
      const int64_t w = want[i].shape[d];
      if (!graph::is_symbolic(w) || w == graph::kUnknownDim) continue;
      auto [it, fresh] = now.emplace(w, in[i].shape[d]);
      if (!fresh && it->second != in[i].shape[d]) it->second = graph::kUnknownDim;
    }
  for (TensorType& t : out)
    for (int64_t& d : t.shape)
      if (auto it = now.find(d); it != now.end()) d = it->second;
  return out;
}

int64_t InputSymbols::classify(int64_t first, int64_t second, bool shared) const {
  if (first == second) return first;
  if (first == size_in_run(graph::kBatch, 0, shared) && second == size_in_run(graph::kBatch, 1, shared))
    return graph::kBatch;
  if (shared) {
    if (named_.size() == 1 && first == size_in_run(named_[0], 0, true) && second == size_in_run(named_[0], 1, true))
      return named_[0];
    return graph::kUnknownDim;
  }
  for (int64_t code : named_)
    if (first == size_in_run(code, 0, false) && second == size_in_run(code, 1, false)) return code;
  return graph::kUnknownDim;
}

}  // namespace kiln::onnx::detail
