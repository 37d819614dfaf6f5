#include "engine/onnx/run_export.h"

#include <onnx/onnx_pb.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

#include "engine/core/error.h"

namespace kiln::onnx {

namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

constexpr const char* kPrefix = kPreprocessPrefix;

// Builds the nodes and constants of the preprocessing, names prefixed kPrefix.
struct Builder {
  GraphProto& graph;
  std::deque<NodeProto> nodes;  // a deque: node() hands out references that stay valid
  int counter = 0;

  std::string name(const std::string& what) { return std::string(kPrefix) + what; }
  std::string floats(const std::string& what, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    TensorProto* t = graph.add_initializer();
    t->set_name(name(what));
    t->set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return t->name();
  }
  std::string ints(const std::string& what, const std::vector<int64_t>& v) {
    TensorProto* t = graph.add_initializer();
    t->set_name(name(what));
    t->set_data_type(TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return t->name();
  }
  // A node of op `op` reading `in`, its one output named `out` (or "preprocess/<op>_<k>").
  NodeProto& node(const std::string& op, const std::vector<std::string>& in, std::string out = "",
                  const std::string& domain = "") {
    NodeProto& n = nodes.emplace_back();
    n.set_op_type(op);
    n.set_domain(domain);
    n.set_name(name(op + "_" + std::to_string(counter++)));
    for (const std::string& s : in) n.add_input(s);
    n.add_output(out.empty() ? n.name() : out);
    return n;
  }
  std::string add(const std::string& op, const std::vector<std::string>& in) { return node(op, in).output(0); }
};

AttributeProto& attr(NodeProto& n, const std::string& name, AttributeProto::AttributeType type) {
  AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return *a;
}
void set_int(NodeProto& n, const std::string& name, int64_t v) { attr(n, name, AttributeProto::INT).set_i(v); }
void set_ints(NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  AttributeProto& a = attr(n, name, AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}

void add_input(GraphProto& g, const std::string& name, int32_t type, const std::vector<std::string>& dims,
               const std::vector<int64_t>& sizes) {
  ::onnx::ValueInfoProto* v = g.add_input();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].empty()) t->mutable_shape()->add_dim()->set_dim_value(sizes[i]);
    else t->mutable_shape()->add_dim()->set_dim_param(dims[i]);
  }
}

void set_opset(::onnx::ModelProto& m, const std::string& domain, int64_t version) {
  for (auto& o : *m.mutable_opset_import())
    if (o.domain() == domain || (domain.empty() && o.domain() == "ai.onnx")) {
      o.set_version(std::max<int64_t>(o.version(), version));
      return;
    }
  auto* o = m.add_opset_import();
  o->set_domain(domain);
  o->set_version(version);
}

std::string cast(Builder& b, const std::string& x, int32_t to) {
  NodeProto& n = b.node("Cast", {x});
  set_int(n, "to", to);
  return n.output(0);
}
std::string doubles(Builder& b, const std::string& what, const std::vector<double>& v) {  // 1-d, or a scalar for one value
  TensorProto* t = b.graph.add_initializer();
  t->set_name(b.name(what));
  t->set_data_type(TensorProto::DOUBLE);
  if (v.size() != 1) t->add_dims(static_cast<int64_t>(v.size()));
  for (double x : v) t->add_double_data(x);
  return t->name();
}

// The [m, n] f32 matrix of OpenCV's cv::resize along one axis from n to m pixels (n, m: f64
// scalars; `shrink`: bool scalar): INTER_AREA when shrinking, each output the area-weighted mean
// of the source pixels its box [o s, (o + 1) s) covers, s = n / m (imgproc/resize.cpp
// computeResizeAreaTab); INTER_LINEAR otherwise, the source coordinate (o + 0.5) s - 0.5
// clamped to [0, n - 1] and a triangle of width 1 around it.
std::string resize_matrix(Builder& b, const std::string& n, const std::string& m, const std::string& shrink,
                          const std::string& axis) {
  const std::string one = doubles(b, axis + "_one", {1.0}), z = doubles(b, axis + "_zero", {0.0});
  const std::string half = doubles(b, axis + "_half", {0.5});
  NodeProto& uo = b.node("Unsqueeze", {b.add("Range", {z, m, one}), b.ints(axis + "_axis1", {1})});
  const std::string o = uo.output(0);          // [m, 1]
  const std::string i = b.add("Range", {z, n, one});  // [n]
  const std::string scale = b.add("Div", {n, m});
  // INTER_AREA: max(0, min((o + 1) s, i + 1) - max(o s, i)) / s.
  const std::string lo = b.add("Max", {b.add("Mul", {o, scale}), i});
  const std::string hi = b.add("Min", {b.add("Mul", {b.add("Add", {o, one}), scale}), b.add("Add", {i, one})});
  const std::string area = b.add("Div", {b.add("Max", {b.add("Sub", {hi, lo}), z}), scale});
  // INTER_LINEAR: max(0, 1 - |clamp((o + 0.5) s - 0.5, 0, n - 1) - i|).
  const std::string src = b.add("Sub", {b.add("Mul", {b.add("Add", {o, half}), scale}), half});
  const std::string clamped = b.add("Min", {b.add("Max", {src, z}), b.add("Sub", {n, one})});
  const std::string linear = b.add("Max", {b.add("Sub", {one, b.add("Abs", {b.add("Sub", {clamped, i})})}), z});
  return cast(b, b.add("Where", {shrink, area, linear}), TensorProto::FLOAT);
}

// Note [Exported image resize]: Kiln's test-time resize (image_cache.cpp shrink_to_short_side,
// then image_transforms.cpp resize_to_cover + center_crop, all on 8-bit pixels) as graph ops,
// each cv::resize a MatMul with a resize_matrix along H and another along W, rounded to 8-bit
// levels (Round, half to even as cv::saturate_cast). ONNX Resize has no box filter (INTER_AREA).
// Stage 1, an image whose short side exceeds S = ceil(1.14 max(height, width)): to short side S
// (sides max(1, lround(side * f1)), f1 = S / short side): INTER_AREA for f1 <= 0.5, else
// INTER_LINEAR to twice that size and INTER_AREA's 2 x 2 mean; as one path: M1 to `mid` (the size,
// or twice it) then an area matrix from mid to the size (the identity when they are equal).
// Stage 2: cover height x width, f = max(height / h, width / w), sides max(target, trunc(side f)),
// INTER_AREA when the area shrinks, else INTER_LINEAR; then the center crop.
// The matrices are dense: a photo of h x w costs about h1 h w multiply-adds per channel.
std::string image_resize(Builder& b, const data::ImageRun& run, const std::string& nchw) {
  const int64_t S = static_cast<int64_t>(std::ceil(1.14 * static_cast<double>(std::max(run.height, run.width))));
  const std::string hw_start = b.ints("hw_start", {2}), hw_end = b.ints("hw_end", {4});
  auto hw_of = [&](const std::string& t) { return cast(b, b.add("Slice", {b.add("Shape", {t}), hw_start, hw_end}), TensorProto::DOUBLE); };
  auto at = [&](const std::string& v, int64_t k) {
    NodeProto& g = b.node("Gather", {v, b.ints("index_" + std::to_string(b.counter), {k})});
    set_int(g, "axis", 0);
    return b.add("Squeeze", {g.output(0)});
  };
  // Applies per-axis matrices to x [N, C, h, w] and rounds.
  auto apply = [&](const std::string& x, const std::string& mh, const std::string& mw) {
    NodeProto& mwt = b.node("Transpose", {mw});
    set_ints(mwt, "perm", {1, 0});
    return b.add("Round", {b.add("MatMul", {b.add("MatMul", {mh, x}), mwt.output(0)})});
  };
  // Stage 1.
  const std::string one = doubles(b, "one", {1.0}), two = doubles(b, "two_f64", {2.0});
  const std::string hw = hw_of(nchw);  // f64 [2]
  NodeProto& short_side = b.node("ReduceMin", {hw});
  set_int(short_side, "keepdims", 1);
  const std::string f1 = b.add("Min", {one, b.add("Div", {doubles(b, "short_side", {static_cast<double>(S)}), short_side.output(0)})});
  const std::string hw1 = b.add("Max", {one, b.add("Floor", {b.add("Add", {b.add("Mul", {hw, f1}), doubles(b, "half", {0.5})})})});
  const std::string twice = b.add("And", {b.add("Greater", {f1, doubles(b, "half_ratio", {0.5})}), b.add("Less", {f1, one})});
  const std::string mid = b.add("Mul", {hw1, b.add("Where", {twice, two, one})});  // f64 [2]
  const std::string area_first = b.add("Not", {at(twice, 0)}), always_area = b.add("Not", {b.add("Less", {one, one})});  // true
  const std::string m1h = resize_matrix(b, at(hw, 0), at(mid, 0), area_first, "h1");
  const std::string m1w = resize_matrix(b, at(hw, 1), at(mid, 1), area_first, "w1");
  const std::string m2h = resize_matrix(b, at(mid, 0), at(hw1, 0), always_area, "h2");
  const std::string m2w = resize_matrix(b, at(mid, 1), at(hw1, 1), always_area, "w2");
  const std::string x1 = apply(apply(nchw, m1h, m1w), m2h, m2w);
  // Stage 2.
  const std::string target = doubles(b, "target", {static_cast<double>(run.height), static_cast<double>(run.width)});
  const std::string hw2 = hw_of(x1);
  NodeProto& fmax = b.node("ReduceMax", {b.add("Div", {target, hw2})});
  set_int(fmax, "keepdims", 1);
  const std::string out = b.add("Max", {target, b.add("Floor", {b.add("Mul", {hw2, fmax.output(0)})})});  // f64 [2]
  NodeProto& prod_in = b.node("ReduceProd", {hw2});
  NodeProto& prod_out = b.node("ReduceProd", {out});
  set_int(prod_in, "keepdims", 0), set_int(prod_out, "keepdims", 0);
  const std::string shrink = b.add("Less", {prod_out.output(0), prod_in.output(0)});
  const std::string pixels = apply(x1, resize_matrix(b, at(hw2, 0), at(out, 0), shrink, "h"),
                                   resize_matrix(b, at(hw2, 1), at(out, 1), shrink, "w"));
  // Center crop: start = round((size - target) / 2) (Round is half to even, as std::nearbyint).
  const std::string size = b.ints("size", {run.height, run.width});
  const std::string extra = cast(b, b.add("Sub", {cast(b, out, TensorProto::INT64), size}), TensorProto::FLOAT);
  const std::string start = cast(b, b.add("Round", {b.add("Div", {extra, b.floats("two", {}, {2.f})})}), TensorProto::INT64);
  const std::string end = b.add("Add", {start, size});
  return b.add("Slice", {pixels, start, end, b.ints("crop_axes", {2, 3})});
}

// The image preprocessing of run_export.h; writes `x` (the network's input). Returns the inputs' description.
nlohmann::ordered_json image_nodes(Builder& b, const data::ImageRun& run, const std::string& x) {
  KILN_CHECK(run.channels == 1 || run.channels == 3, ValueError, "the run's images have ", run.channels,
             " channels; an export takes 1 or 3");
  KILN_CHECK(run.height > 0 && run.width > 0, ValueError, "the run's image size is not set (", run.height, " x ",
             run.width, ")");
  add_input(b.graph, "image", TensorProto::UINT8, {"N", "H", "W", ""}, {0, 0, 0, run.channels});
  NodeProto& nchw = b.node("Transpose", {cast(b, "image", TensorProto::FLOAT)});
  set_ints(nchw, "perm", {0, 3, 1, 2});
  const std::string crop = image_resize(b, run, nchw.output(0));
  const std::string unit = b.add("Mul", {crop, b.floats("inv_255", {}, {1.f / 255.f})});
  if (run.mean.empty()) {
    b.node("Identity", {unit}, x);
  } else {
    std::vector<float> mean, inv;
    for (int c = 0; c < run.channels; ++c) {
      const size_t k = run.mean.size() == 1 ? 0 : static_cast<size_t>(c);
      mean.push_back(static_cast<float>(run.mean.at(k)));
      inv.push_back(static_cast<float>(1.0 / run.stddev.at(k)));  // as ImageTransform::apply
    }
    const std::string centred = b.add("Sub", {unit, b.floats("mean", {1, run.channels, 1, 1}, mean)});
    b.node("Mul", {centred, b.floats("inv_std", {1, run.channels, 1, 1}, inv)}, x);
  }
  return nlohmann::ordered_json::array(
      {{{"name", "image"},
        {"type", "uint8[N, H, W, " + std::to_string(run.channels) + "]"},
        {"meaning", std::string(run.channels == 1 ? "grey" : "R, G, B") + " pixels, any size; resized to cover " +
                        std::to_string(run.height) + " x " + std::to_string(run.width) + ", center-cropped, normalized"}}});
}

nlohmann::ordered_json table_nodes(Builder& b, const data::TabularSchema& s, const std::string& x) {
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  std::vector<std::string> parts;
  std::set<std::string> names;
  for (const data::ColumnInfo& col : s.columns) {
    if (col.type != data::ColumnType::numeric && col.type != data::ColumnType::categorical) continue;
    KILN_CHECK(names.insert(col.name).second && col.name.rfind(kPrefix, 0) != 0, ValueError, "column name '",
               col.name, "' cannot name an ONNX input (it repeats or starts with ", kPrefix, ")");
    const std::string id = std::to_string(parts.size());
    if (col.type == data::ColumnType::numeric) {
      add_input(b.graph, col.name, TensorProto::FLOAT, {"N", ""}, {0, 1});
      const std::string mean = b.floats("mean_" + id, {}, {static_cast<float>(col.mean)});
      const std::string filled = b.add("Where", {b.add("IsNaN", {col.name}), mean, col.name});
      parts.push_back(b.add("Div", {b.add("Sub", {filled, mean}), b.floats("scale_" + id, {}, {static_cast<float>(col.scale)})}));
      inputs.push_back({{"name", col.name}, {"type", "float[N, 1]"}, {"meaning", "number; NaN: missing (filled with "
                                                                               "the training mean)"}});
      continue;
    }
    add_input(b.graph, col.name, TensorProto::STRING, {"N", ""}, {0, 1});
    const auto k = static_cast<int64_t>(col.categories.size());
    NodeProto& enc = b.node("LabelEncoder", {col.name}, "", "ai.onnx.ml");
    AttributeProto& keys = attr(enc, "keys_strings", AttributeProto::STRINGS);
    AttributeProto& values = attr(enc, "values_int64s", AttributeProto::INTS);
    int64_t mode = k;
    for (int64_t i = 0; i < k; ++i) {
      keys.add_strings(col.categories[size_t(i)]);
      values.add_ints(i);
      if (col.categories[size_t(i)] == col.mode) mode = i;
    }
    for (const std::string& m : data::missing_markers())  // a missing value is the mode (tabular_prepare.cpp)
      if (!std::binary_search(col.categories.begin(), col.categories.end(), m)) keys.add_strings(m), values.add_ints(mode);
    set_int(enc, "default_int64", k);  // outside [-K, K): OneHot gives zeros
    NodeProto& onehot = b.node("OneHot", {enc.output(0), b.ints("depth_" + id, {k}), b.floats("off_on", {2}, {0.f, 1.f})});
    set_int(onehot, "axis", -1);
    NodeProto& flat = b.node("Flatten", {onehot.output(0)});
    set_int(flat, "axis", 1);
    parts.push_back(flat.output(0));
    inputs.push_back({{"name", col.name}, {"type", "string[N, 1]"},
                      {"meaning", "one of " + nlohmann::json(col.categories).dump() + " (one-hot; another value: zeros; "
                                  "empty or NA: the most frequent, " + nlohmann::json(col.mode).dump() + ")"}});
  }
  KILN_CHECK(!parts.empty(), ValueError, "the table has no numeric or categorical column to export");
  NodeProto& concat = b.node("Concat", parts, x);
  set_int(concat, "axis", 1);
  return inputs;
}

}  // namespace

std::string with_preprocessing(const std::string& model_bytes, const RunPreprocessing& p) {
  KILN_CHECK(!(p.image && p.table), ValueError, "with_preprocessing: an image run or a table run, not both");
  ::onnx::ModelProto m;
  KILN_CHECK(m.ParseFromString(model_bytes), ValueError, "with_preprocessing: not a serialized ONNX model");
  GraphProto& g = *m.mutable_graph();
  KILN_CHECK(g.input_size() == 1 && g.output_size() >= 1, ValueError, "the model has ", g.input_size(), " inputs and ",
             g.output_size(), " outputs; a run's export takes one input (its features) and the logits first");
  const std::string x = g.input(0).name(), logits = g.output(0).name();
  nlohmann::ordered_json inputs;
  const bool include = p.include && (p.image || p.table);
  if (include) {
    // The preprocessing writes the network's input under a new name, so that the raw inputs may
    // take any name the network does not use (a Studio graph's input is often "image").
    std::vector<NodeProto> network(g.node().begin(), g.node().end());
    const std::string features = std::string(kPrefix) + "features";
    std::set<std::string> used;
    for (NodeProto& n : network) {
      for (std::string& in : *n.mutable_input())
        if (in == x) in = features;
      for (const std::string& out : n.output()) used.insert(out);
    }
    for (const TensorProto& t : g.initializer()) used.insert(t.name());
    for (auto& v : *g.mutable_value_info())
      if (v.name() == x) v.set_name(features);
    KILN_CHECK(std::none_of(g.output().begin(), g.output().end(), [&](const auto& o) { return o.name() == x; }),
               ValueError, "the network's input '", x, "' is also its output");
    g.clear_input();
    g.clear_node();
    Builder b{g, {}};
    inputs = p.image ? image_nodes(b, *p.image, features) : table_nodes(b, *p.table, features);
    for (const auto& in : g.input()) {
      KILN_CHECK(!used.count(in.name()), ValueError, "input '", in.name(), "' has the name of a value of the network; "
                 "rename the column or the network's node");
      KILN_CHECK(p.regression || in.name() != "probabilities", ValueError, "input '", in.name(),
                 "' has the name of the export's output 'probabilities'; rename the column");
    }
    for (NodeProto& n : b.nodes) *g.add_node() = std::move(n);
    for (NodeProto& n : network) *g.add_node() = std::move(n);
    if (p.table) set_opset(m, "ai.onnx.ml", 2);
  } else {
    inputs = nlohmann::ordered_json::array({{{"name", x}, {"meaning", "preprocessed features, as the network was trained"}}});
  }
  if (!p.regression) {
    NodeProto* soft = g.add_node();
    soft->set_op_type("Softmax");
    soft->set_name("probabilities");
    soft->add_input(logits);
    soft->add_output("probabilities");
    set_int(*soft, "axis", -1);
    ::onnx::ValueInfoProto* out = g.add_output();
    *out = g.output(0);
    out->set_name("probabilities");
  }
  auto meta = [&](const std::string& key, const std::string& value) {
    for (auto& kv : *m.mutable_metadata_props())
      if (kv.key() == key) return kv.set_value(value);
    auto* kv = m.add_metadata_props();
    kv->set_key(key);
    kv->set_value(value);
  };
  meta("kiln.task", p.regression ? "regression" : "classification");
  meta("kiln.classes", nlohmann::json(p.classes).dump());
  if (p.table) meta("kiln.label", p.table->label);
  meta("kiln.inputs", inputs.dump());
  meta("kiln.preprocessing", include ? "included" : "none");
  std::string doc = "Inputs: ";
  for (const auto& in : inputs) doc += in["name"].get<std::string>() + " (" + in.value("type", "as the network's") +
                                       "): " + in["meaning"].get<std::string>() + "; ";
  doc += p.regression ? "output: the predicted value." : "outputs: logits and probabilities over kiln.classes.";
  m.set_doc_string(doc);
  std::string out;
  KILN_CHECK(m.SerializeToString(&out), ValueError, "with_preprocessing: cannot serialize the model");
  return out;
}

}  // namespace kiln::onnx
