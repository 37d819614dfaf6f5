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

std::string int_scalar(Builder& b, const std::string& what, int64_t v) {  // a 0-d int64
  TensorProto* t = b.graph.add_initializer();
  t->set_name(b.name(what));
  t->set_data_type(TensorProto::INT64);
  t->add_int64_data(v);
  return t->name();
}

// x [N, C, h, w] f32 resized along `axis` (2: H, 3: W) from n to m pixels (f64 scalars) as
// OpenCV's cv::resize, before rounding: the outputs at the f64 coordinates `o` [k] (a window of
// [0, m), so that a crop computes only the pixels it keeps). `shrink` (bool scalar) picks
// INTER_AREA, else INTER_LINEAR; both read at most two source values per output:
// - INTER_LINEAR: the source coordinate (o + 0.5) s - 0.5, s = n / m, clamped to [0, n - 1]; the
//   pixels i0 = floor of it and min(i0 + 1, n - 1), weighted 1 - t and t by its fraction t;
// - INTER_AREA: the area-weighted mean of the source pixels the box [lo, hi) = [o s, (o + 1) s)
//   covers (imgproc/resize.cpp computeResizeAreaTab): with C the exclusive prefix sum of the
//   pixels p and k(u) = min(floor(u), n - 1), the sum is C[k(hi)] - C[k(lo)] + (hi - k(hi)) p[k(hi)]
//   - (lo - k(lo)) p[k(lo)], divided by s. `integers`: x holds whole numbers (8-bit levels), whose
//   f32 prefix sums and their differences are exact up to 2^24 / 255 = 65793 pixels; otherwise the
//   sums are f64, which f32 sums of a wide image would not be.
// Memory O(h w + k): Note [Exported image resize].
std::string resize_axis(Builder& b, const std::string& x, int64_t axis, const std::string& n, const std::string& m,
                        const std::string& o, const std::string& shrink, bool integers, const std::string& tag) {
  const std::string one = doubles(b, tag + "_one", {1.0}), z = doubles(b, tag + "_zero", {0.0});
  const std::string half = doubles(b, tag + "_half", {0.5}), last = b.add("Sub", {n, one});
  const std::string scale = b.add("Div", {n, m});
  // A per-output f64 [k] vector as a factor along `axis` ([k, 1] for H).
  auto along = [&](const std::string& v, int32_t type) {
    const std::string c = cast(b, v, type);
    return axis == 2 ? b.add("Unsqueeze", {c, b.ints(tag + "_axis1_" + std::to_string(b.counter), {1})}) : c;
  };
  auto gather = [&](const std::string& data, const std::string& index) {
    NodeProto& g = b.node("Gather", {data, cast(b, index, TensorProto::INT64)});
    set_int(g, "axis", axis);
    return g.output(0);
  };
  // INTER_LINEAR.
  const std::string src = b.add("Min", {b.add("Max", {b.add("Sub", {b.add("Mul", {b.add("Add", {o, half}), scale}), half}), z}), last});
  const std::string i0 = b.add("Floor", {src}), i1 = b.add("Min", {b.add("Add", {i0, one}), last});
  const std::string t = b.add("Sub", {src, i0});
  const std::string linear = b.add("Add", {b.add("Mul", {gather(x, i0), along(b.add("Sub", {one, t}), TensorProto::FLOAT)}),
                                           b.add("Mul", {gather(x, i1), along(t, TensorProto::FLOAT)})});
  // INTER_AREA.
  const int32_t type = integers ? TensorProto::FLOAT : TensorProto::DOUBLE;
  const std::string p = integers ? x : cast(b, x, type);
  NodeProto& cumsum = b.node("CumSum", {p, int_scalar(b, tag + "_cumsum_axis", axis)});
  set_int(cumsum, "exclusive", 1);  // C = [0, p0, p0 + p1, ...]
  const std::string lo = b.add("Mul", {o, scale}), hi = b.add("Mul", {b.add("Add", {o, one}), scale});
  const std::string klo = b.add("Min", {b.add("Floor", {lo}), last}), khi = b.add("Min", {b.add("Floor", {hi}), last});
  const std::string whole = b.add("Sub", {gather(cumsum.output(0), khi), gather(cumsum.output(0), klo)});
  const std::string part = b.add("Sub", {b.add("Mul", {gather(p, khi), along(b.add("Sub", {hi, khi}), type)}),
                                         b.add("Mul", {gather(p, klo), along(b.add("Sub", {lo, klo}), type)})});
  const std::string area = cast(b, b.add("Div", {b.add("Add", {whole, part}), cast(b, scale, type)}), TensorProto::FLOAT);
  return b.add("Where", {shrink, area, linear});
}

// Note [Exported image resize]: Kiln's test-time resize (image_cache.cpp shrink_to_short_side,
// then image_transforms.cpp resize_to_cover + center_crop, all on 8-bit pixels) as graph ops,
// each cv::resize a resize_axis along H then one along W, rounded to 8-bit levels (Round, half to
// even as cv::saturate_cast). ONNX Resize has no box filter (INTER_AREA), hence the gathers.
// Stage 1, an image whose short side exceeds S = ceil(1.14 max(height, width)): to short side S
// (sides max(1, lround(side * f1)), f1 = S / short side): INTER_AREA for f1 <= 0.5, else
// INTER_LINEAR to twice that size and INTER_AREA's 2 x 2 mean; as one path: to `mid` (the size,
// or twice it) then INTER_AREA from mid to the size (the identity when they are equal).
// Stage 2: cover height x width, f = max(height / h, width / w), sides max(target, trunc(side f)),
// INTER_AREA when the area shrinks, else INTER_LINEAR; then the center crop, start =
// round((side - target) / 2): only the cropped rows and columns are computed, so a very wide
// image (1 x 3000, covered at 64 x 192000) costs what its crop does. Per channel, no value holds
// more than (h + k_h) w numbers, k_h the rows a pass keeps (mid, the short side's, or the target
// height); the dense [m, n] matrices of before needed m n (2.3 GB for that image).
std::string image_resize(Builder& b, const data::ImageRun& run, const std::string& nchw) {
  const int64_t S = static_cast<int64_t>(std::ceil(1.14 * static_cast<double>(std::max(run.height, run.width))));
  const std::string hw_start = b.ints("hw_start", {2}), hw_end = b.ints("hw_end", {4});
  auto hw_of = [&](const std::string& t) { return cast(b, b.add("Slice", {b.add("Shape", {t}), hw_start, hw_end}), TensorProto::DOUBLE); };
  auto at = [&](const std::string& v, int64_t k) {
    NodeProto& g = b.node("Gather", {v, b.ints("index_" + std::to_string(b.counter), {k})});
    set_int(g, "axis", 0);
    return b.add("Squeeze", {g.output(0)});
  };
  const std::string zero = doubles(b, "zero", {0.0}), one = doubles(b, "one", {1.0}), two = doubles(b, "two_f64", {2.0});
  auto range = [&](const std::string& from, const std::string& count) {  // f64 [count]: from, from + 1, ...
    return b.add("Add", {b.add("Range", {zero, count, one}), from});
  };
  // Resizes x [N, C, h, w] from hw to `to` (f64 [2]), the outputs at rows oh and columns ow.
  auto resize = [&](const std::string& x, const std::string& hw, const std::string& to, const std::string& oh,
                    const std::string& ow, const std::string& shrink_h, const std::string& shrink_w, const std::string& tag) {
    const std::string rows = resize_axis(b, x, 2, at(hw, 0), at(to, 0), oh, shrink_h, true, tag + "h");  // 8-bit levels
    return resize_axis(b, rows, 3, at(hw, 1), at(to, 1), ow, shrink_w, false, tag + "w");
  };
  // Stage 1.
  const std::string hw = hw_of(nchw);  // f64 [2]
  NodeProto& short_side = b.node("ReduceMin", {hw});
  set_int(short_side, "keepdims", 1);
  const std::string f1 = b.add("Min", {one, b.add("Div", {doubles(b, "short_side", {static_cast<double>(S)}), short_side.output(0)})});
  const std::string hw1 = b.add("Max", {one, b.add("Floor", {b.add("Add", {b.add("Mul", {hw, f1}), doubles(b, "half", {0.5})})})});
  const std::string twice = b.add("And", {b.add("Greater", {f1, doubles(b, "half_ratio", {0.5})}), b.add("Less", {f1, one})});
  const std::string mid = b.add("Mul", {hw1, b.add("Where", {twice, two, one})});  // f64 [2]
  const std::string area_first = b.add("Not", {at(twice, 0)}), always_area = b.add("Not", {b.add("Less", {one, one})});  // true
  const std::string x_mid = b.add("Round", {resize(nchw, hw, mid, range(zero, at(mid, 0)), range(zero, at(mid, 1)),
                                                   area_first, area_first, "s1_")});
  const std::string x1 = b.add("Round", {resize(x_mid, mid, hw1, range(zero, at(hw1, 0)), range(zero, at(hw1, 1)),
                                                always_area, always_area, "s2_")});
  // Stage 2: the rows and columns of the center crop of the cover.
  const std::string target = doubles(b, "target", {static_cast<double>(run.height), static_cast<double>(run.width)});
  const std::string hw2 = hw_of(x1);
  NodeProto& fmax = b.node("ReduceMax", {b.add("Div", {target, hw2})});
  set_int(fmax, "keepdims", 1);
  const std::string out = b.add("Max", {target, b.add("Floor", {b.add("Mul", {hw2, fmax.output(0)})})});  // f64 [2]
  NodeProto& prod_in = b.node("ReduceProd", {hw2});
  NodeProto& prod_out = b.node("ReduceProd", {out});
  set_int(prod_in, "keepdims", 0), set_int(prod_out, "keepdims", 0);
  const std::string shrink = b.add("Less", {prod_out.output(0), prod_in.output(0)});
  // Center crop: start = round((size - target) / 2) (Round is half to even, as std::nearbyint).
  const std::string start = b.add("Round", {b.add("Div", {b.add("Sub", {out, target}), two})});  // f64 [2]
  return b.add("Round", {resize(x1, hw2, out, range(at(start, 0), doubles(b, "target_h", {static_cast<double>(run.height)})),
                                range(at(start, 1), doubles(b, "target_w", {static_cast<double>(run.width)})), shrink, shrink,
                                "c_")});
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
