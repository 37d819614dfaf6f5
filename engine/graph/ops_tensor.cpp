// Graph inputs and outputs and the tensor ops with no parameters: Input, Output, Add,
// Mul, Concat, Reshape, Flatten, Identity.
#include <algorithm>

#include "engine/core/ops.h"
#include "engine/graph/op_helpers.h"
#include "engine/nn/flatten.h"
#include "engine/nn/linear.h"

namespace kiln::graph::detail {

namespace {

// NumPy broadcasting of two symbolic shapes: N meets N or 1; a size meets itself or 1.
std::optional<SymShape> broadcast(const SymShape& a, const SymShape& b) {
  size_t n = std::max(a.size(), b.size());
  SymShape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x == y || y == 1) out[i] = x;
    else if (x == 1) out[i] = y;
    else return std::nullopt;
  }
  return out;
}

std::vector<TensorType> infer_elementwise(const std::string& op, const std::vector<TensorType>& in) {
  TensorType out = in.at(0);
  for (size_t i = 1; i < in.size(); ++i) {
    KILN_CHECK(in[i].dtype == out.dtype, DTypeError, op, " inputs differ in dtype: in0 ", in[0].str(), " vs in", i, " ",
               in[i].str());
    auto b = broadcast(out.shape, in[i].shape);
    KILN_CHECK(b.has_value(), ShapeError, op, " inputs do not broadcast: in0 ", shape_str(in[0].shape), " vs in", i, " ",
               shape_str(in[i].shape));
    out.shape = *b;
  }
  return {out};
}

AttrSpec num_inputs_attr() {
  return int_attr("num_inputs", 2, 2, 8, "", "Number of input ports (2 to 8).");
}

OpSchema elementwise(const std::string& name, const std::string& what, bool multiply) {
  OpSchema s;
  s.name = name;
  s.category = "Tensor";
  s.description = what + " of its inputs (NumPy broadcasting; a residual merge for Add).";
  s.inputs = {{"in", "a tensor; all inputs share the dtype and broadcast together"}};
  s.outputs = {{"out", "the broadcast shape"}};
  s.count_attribute = "num_inputs";
  s.attributes = {num_inputs_attr()};
  s.infer = [name](const std::vector<TensorType>& in, const Attributes&) { return infer_elementwise(name, in); };
  if (multiply)
    s.macs = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out, const Attributes&) {
      return sat_mul(sample_numel(out.at(0).shape), static_cast<int64_t>(in.size()) - 1);
    };
  s.forward = [multiply](nn::Module*, const std::vector<Tensor>& in, const Attributes&) {
    Tensor r = in.at(0);
    for (size_t i = 1; i < in.size(); ++i) r = multiply ? kiln::mul(r, in[i]) : kiln::add(r, in[i]);
    return std::vector<Tensor>{r};
  };
  return s;
}

std::vector<TensorType> infer_concat(const std::vector<TensorType>& in, const Attributes& a) {
  const TensorType& t0 = in.at(0);
  int64_t dim = wrap_dim("Concat", attr_int(a, "dim"), t0);
  KILN_CHECK(dim != 0, ShapeError, "Concat along dim 0 would join the batch dimension N of ", shape_str(t0.shape),
             "; use dim >= 1");
  TensorType out = t0;
  for (size_t i = 1; i < in.size(); ++i) {
    KILN_CHECK(in[i].dtype == t0.dtype, DTypeError, "Concat inputs differ in dtype: in0 ", t0.str(), " vs in", i, " ",
               in[i].str());
    bool fits = in[i].shape.size() == t0.shape.size();
    for (size_t d = 0; fits && d < t0.shape.size(); ++d)
      fits = static_cast<int64_t>(d) == dim || in[i].shape[d] == t0.shape[d];
    KILN_CHECK(fits, ShapeError, "Concat along dim ", dim, " needs equal sizes in every other dim: in0 ",
               shape_str(t0.shape), " vs in", i, " ", shape_str(in[i].shape));
    int64_t& joined = out.shape[static_cast<size_t>(dim)];
    const int64_t add = in[i].shape[static_cast<size_t>(dim)];
    joined = is_symbolic(joined) || is_symbolic(add) ? kUnknownDim : sat_add(joined, add);
  }
  return {out};
}

std::optional<std::string> check_reshape(const Attributes& a) {
  const auto& shape = attr_ints(a, "shape");
  int wild = 0;
  for (int64_t d : shape) {
    if (d == -1) ++wild;
    if (d == 0) return "shape " + attr_str(shape) + " may not contain 0";
  }
  if (wild > 1) return "shape " + attr_str(shape) + " may contain at most one -1";
  return std::nullopt;
}

std::vector<TensorType> infer_reshape(const std::vector<TensorType>& in, const Attributes& a) {
  const TensorType& t = in.at(0);
  expect_batched("Reshape", t);
  const auto& target = attr_ints(a, "shape");
  int64_t have = checked_numel("Reshape", t.shape);
  int64_t known = 1;
  for (int64_t d : target)
    if (d != -1) known = sat_mul(known, d);
  SymShape out{kBatch};
  for (int64_t d : target) out.push_back(d == -1 ? (known > 0 ? have / known : 0) : d);
  bool ok = std::count(target.begin(), target.end(), -1) ? (known > 0 && have % known == 0) : known == have;
  KILN_CHECK(ok, ShapeError, "Reshape cannot view ", shape_str(t.shape), " as [N", target.empty() ? "" : ", ",
             attr_str(target).substr(1), " (", have, " elements per sample)");
  return {TensorType{t.dtype, out}};
}

// Input's per-sample shape: "shape" with the k-th -1 replaced by the symbol of dim_params'
// k-th name (Note [Symbolic dimensions]); names beyond the -1 entries are unused, so the editor
// can change one attribute at a time ([-1] -> [128] keeps "sequence" until it is cleared).
// ValueError when a size is 0, when a -1 has no name, or for a name sym_dim refuses ("?" too:
// an Input names its dims).
SymShape input_sample_shape(const Attributes& a) {
  const auto& shape = attr_ints(a, "shape");
  const std::string& text = attr_string(a, "dim_params");
  std::vector<std::string> names;
  for (size_t start = 0; !text.empty() && start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    names.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  const auto symbolic = static_cast<size_t>(std::count(shape.begin(), shape.end(), int64_t{-1}));
  KILN_CHECK(names.size() >= symbolic, ValueError, "shape ", attr_str(shape), " has ", symbolic,
             " symbolic entries (-1) but dim_params names ", names.size(), " (\"", text, "\")");
  SymShape out;
  size_t next = 0;
  for (int64_t d : shape) {
    KILN_CHECK(d != 0, ValueError, "shape ", attr_str(shape), " may not contain 0");
    if (d != -1) {
      out.push_back(d);
      continue;
    }
    KILN_CHECK(names[next] != "?", ValueError, "dim_params: '?' is no name; name each symbolic dimension");
    try {
      out.push_back(sym_dim(names[next++]));
    } catch (const ValueError& e) {
      throw ValueError(std::string("dim_params: ") + e.what());
    }
  }
  return out;
}

std::vector<TensorType> infer_flatten(const std::vector<TensorType>& in, const Attributes& a) {
  const TensorType& t = in.at(0);
  expect_batched("Flatten", t);
  int64_t start = wrap_dim("Flatten", attr_int(a, "start_dim"), t);
  int64_t end = wrap_dim("Flatten", attr_int(a, "end_dim"), t);
  KILN_CHECK(start != 0, ShapeError, "Flatten with start_dim 0 would merge the batch dimension N of ",
             shape_str(t.shape), "; use start_dim >= 1");
  KILN_CHECK(start <= end, ShapeError, "Flatten: start_dim ", attr_int(a, "start_dim"), " comes after end_dim ",
             attr_int(a, "end_dim"), " for ", shape_str(t.shape));
  SymShape out(t.shape.begin(), t.shape.begin() + start);
  SymShape merged(t.shape.begin() + start, t.shape.begin() + end + 1);
  // A symbolic dim merged with others has no name: "?" (Note [Symbolic dimensions]).
  const bool symbolic = std::any_of(merged.begin(), merged.end(), is_symbolic);
  out.push_back(symbolic ? kUnknownDim : checked_numel("Flatten", merged));
  out.insert(out.end(), t.shape.begin() + end + 1, t.shape.end());
  return {TensorType{t.dtype, out}};
}

}  // namespace

void register_io_tensor_ops(OpRegistry& r) {
  {
    OpSchema s;
    s.name = "Input";
    s.category = "Input/Output";
    s.description = "A model input: a batch of samples of the given per-sample shape, N first.";
    s.outputs = {{"out", "[N, *shape]"}};
    AttrSpec dim_params;
    dim_params.name = "dim_params";
    dim_params.type = AttrType::String;
    dim_params.default_value = std::string();
    dim_params.description =
        "Names of the symbolic entries (-1) of shape, comma-separated in order (ONNX dim_param: \"sequence\", "
        "\"height,width\"; \"N\" is the batch); names beyond the -1 entries are unused.";
    s.attributes = {
        ints_attr("shape", {1, 28, 28}, 0, 8, -1, kMaxSize, "",
                  "Shape of one sample, without the batch dimension (Fashion-MNIST: [1, 28, 28]); -1 marks a "
                  "symbolic dimension named in dim_params (an imported model's [sequence, 768] is [-1, 768])."),
        choice_attr("dtype", "f32", {"f32", "i64"}, "Element type: f32 for images and features, i64 for token ids."),
        int_attr("batch", 0, 0, kMaxSize, "",
                 "Batch size an imported model fixes (its input is [1, 3, 224, 224]); 0: any batch size N, "
                 "which the Studio's layers expect."),
        dim_params};
    s.check = [](const Attributes& a) -> std::optional<std::string> {
      try {
        input_sample_shape(a);
      } catch (const ValueError& e) {
        return e.what();
      }
      return std::nullopt;
    };
    s.infer = [](const std::vector<TensorType>&, const Attributes& a) {
      const int64_t batch = attr_int(a, "batch");
      SymShape shape{batch == 0 ? kBatch : batch};
      for (int64_t d : input_sample_shape(a)) shape.push_back(d);
      return std::vector<TensorType>{{dtype_from_name(attr_string(a, "dtype")), shape}};
    };
    // GraphModule passes the model's input through this.
    s.forward = [](nn::Module*, const std::vector<Tensor>& in, const Attributes&) { return in; };
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "Output";
    s.category = "Input/Output";
    s.description = "A model output: the tensor it receives is what the model returns (logits for training).";
    s.inputs = {{"in", "the model's output"}};
    s.infer = [](const std::vector<TensorType>&, const Attributes&) { return std::vector<TensorType>{}; };
    s.forward = [](nn::Module*, const std::vector<Tensor>&, const Attributes&) { return std::vector<Tensor>{}; };
    r.add(std::move(s));
  }
  r.add(elementwise("Add", "Elementwise sum", false));
  r.add(elementwise("Mul", "Elementwise product", true));
  {
    OpSchema s;
    s.name = "Concat";
    s.category = "Tensor";
    s.description = "Joins its inputs along one dimension (torch.cat), e.g. channels of two branches.";
    s.inputs = {{"in", "tensors equal in every dim but `dim`"}};
    s.outputs = {{"out", "sizes along `dim` summed"}};
    s.count_attribute = "num_inputs";
    // torch.cat defaults to dim 0, which is the batch here; Kiln defaults to 1 (channels / features).
    s.attributes = {num_inputs_attr(),
                    int_attr("dim", 1, -8, 7, "", "Dimension to join along (negative counts from the end; not 0, the batch).")};
    s.infer = infer_concat;
    s.forward = [](nn::Module*, const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{kiln::cat(in, attr_int(a, "dim"))};
    };
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "Reshape";
    s.category = "Tensor";
    s.description = "Views each sample in a new shape with the same number of elements (torch.reshape, batch kept).";
    s.inputs = {{"in", "[N, *]"}};
    s.outputs = {{"out", "[N, *shape]"}};
    s.attributes = {ints_attr("shape", {-1}, 0, 8, -1, kMaxSize, "",
                              "Per-sample shape, without N; one entry may be -1 (inferred).")};
    s.check = check_reshape;
    s.infer = infer_reshape;
    s.forward = [](nn::Module*, const std::vector<Tensor>& in, const Attributes& a) {
      Shape shape{in.at(0).size(0)};
      for (int64_t d : attr_ints(a, "shape")) shape.push_back(d);
      return std::vector<Tensor>{in[0].reshape(shape)};
    };
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "Flatten";
    s.category = "Tensor";
    s.description = "Merges dims start_dim..end_dim into one (torch.nn.Flatten): [N, C, H, W] -> [N, C*H*W].";
    s.inputs = {{"in", "[N, *]"}};
    s.outputs = {{"out", "[N, *] with the dims merged"}};
    // Defaults of torch.nn.Flatten.
    s.attributes = {int_attr("start_dim", 1, -8, 7, "", "First dim to flatten (not 0, the batch)."),
                    int_attr("end_dim", -1, -8, 7, "", "Last dim to flatten (negative counts from the end).")};
    s.infer = infer_flatten;
    s.build = [](const std::vector<TensorType>&, const Attributes& a) {
      return std::make_shared<nn::Flatten>(attr_int(a, "start_dim"), attr_int(a, "end_dim"));
    };
    s.forward = module_forward;
    r.add(std::move(s));
  }
  {
    OpSchema s;
    s.name = "Identity";
    s.category = "Tensor";
    s.description = "Passes its input through unchanged (torch.nn.Identity).";
    s.inputs = {{"in", "any tensor"}};
    s.outputs = {{"out", "the same tensor"}};
    s.infer = [](const std::vector<TensorType>& in, const Attributes&) { return std::vector<TensorType>{in.at(0)}; };
    s.build = [](const std::vector<TensorType>&, const Attributes&) { return std::make_shared<nn::Identity>(); };
    s.forward = module_forward;
    r.add(std::move(s));
  }
}

}  // namespace kiln::graph::detail
