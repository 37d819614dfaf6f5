#include "engine/onnx/graph_import_sequence.h"

#include <algorithm>
#include <cmath>

#include "engine/core/ops.h"

namespace kiln::onnx::detail {

namespace {

using graph::OnnxNodeView;
using graph::SymShape;
using graph::TensorType;
using Ints = std::vector<int64_t>;

bool recurrent(const Node& n) {
  return n.domain.empty() && (n.op_type == "LSTM" || n.op_type == "GRU" || n.op_type == "RNN");
}

// Ops that only compute values (no state, no randomness): removed when nothing reads them any more.
bool pure(const Node& n) {
  static const std::set<std::string> ops{"Transpose", "Reshape", "Squeeze", "Unsqueeze",       "Equal",  "Not",
                                         "Cast",      "ReduceSum", "Shape", "Gather",          "Concat", "Slice",
                                         "Expand",    "ConstantOfShape", "Max", "Min", "Sub", "Pad", "Mul", "Div"};
  return n.domain.empty() && ops.count(n.op_type);
}

class Planner {
 public:
  explicit Planner(const SequencePlanInput& in) : in_(in), g_(in.ctx.g) {
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      for (const std::string& o : g_.nodes[k].outputs)
        if (!o.empty()) made_by_[o] = k;
  }

  SequencePlan run() {
    plan_recurrent();
    for (size_t k = 0; k < g_.nodes.size(); ++k) plan_pool(k);
    remove_dead();
    return std::move(plan_);
  }

 private:
  // ---- small queries over the ONNX graph ----
  const Node* producer(const std::string& value) const {
    auto it = made_by_.find(in_.resolve(value));
    return it == made_by_.end() ? nullptr : &g_.nodes[it->second];
  }
  const std::vector<ValueUse>& readers(const std::string& value) const {
    static const std::vector<ValueUse> none;
    auto it = in_.uses.find(in_.resolve(value));
    return it == in_.uses.end() ? none : it->second;
  }
  bool read_once(const std::string& value) const {
    return readers(value).size() == 1 && !in_.graph_outputs.count(value);
  }
  const Tensor* constant(const std::string& value) const {
    auto it = in_.ctx.constants.find(in_.resolve(value));
    return it == in_.ctx.constants.end() ? nullptr : &it->second;
  }
  static bool is(const Node* n, const char* op, size_t inputs) {
    return n && n->domain.empty() && n->op_type == op && n->inputs.size() >= inputs && !n->outputs.empty();
  }
  static const Attribute* attr(const Node& n, const char* name) {
    auto it = n.attributes.find(name);
    return it == n.attributes.end() ? nullptr : &it->second;
  }
  static int64_t int_attr(const Node& n, const char* name, int64_t def) {
    const Attribute* a = attr(n, name);
    return a && a->type == Attribute::Type::Int ? a->i : def;
  }
  // An INTS attribute, or (opset 13 on) the constant input that replaced it.
  std::optional<Ints> ints_of(const Node& n, const char* name, size_t input) const {
    if (const Attribute* a = attr(n, name); a && a->type == Attribute::Type::Ints) return a->ints;
    if (input < n.inputs.size() && !n.inputs[input].empty())
      if (const Tensor* t = constant(n.inputs[input])) return t->to_vector<int64_t>();
    return std::nullopt;
  }
  bool perm_is(const Node* n, const Ints& perm) const {
    if (!is(n, "Transpose", 1)) return false;
    const Attribute* a = attr(*n, "perm");
    return a && a->type == Attribute::Type::Ints && a->ints == perm;
  }
  // A reduction over axis 1 (ReduceSum, ReduceMax) with the given keepdims.
  bool reduces_axis1(const Node* n, const char* op, bool keep) const {
    return is(n, op, 1) && ints_of(*n, "axes", 1) == Ints{1} && int_attr(*n, "keepdims", 1) == (keep ? 1 : 0);
  }
  bool scalar_is(const std::string& value, double want) const {
    const Tensor* t = constant(value);
    return t && t->numel() == 1 && t->to(DType::f64).to_vector<double>()[0] == want;
  }

  // ---- the padding mask, as Kiln's export computes it from the ids ----
  // Not(Equal(ids, 0)) (bool [N, T], true at tokens).
  bool is_valid(const std::string& value) const {
    const Node* no = producer(value);
    if (!is(no, "Not", 1) || !in_.mask_ids) return false;
    const Node* eq = producer(no->inputs[0]);
    if (!is(eq, "Equal", 2)) return false;
    const std::string& ids = *in_.mask_ids;
    return (eq->inputs[0] == ids && scalar_is(eq->inputs[1], 0)) || (eq->inputs[1] == ids && scalar_is(eq->inputs[0], 0));
  }
  // Cast(valid, to) with `to` one of the given ONNX element types.
  bool is_valid_cast(const std::string& value, std::initializer_list<int64_t> to) const {
    const Node* c = producer(value);
    return is(c, "Cast", 1) && std::count(to.begin(), to.end(), int_attr(*c, "to", 0)) && is_valid(c->inputs[0]);
  }
  bool is_mask(const std::string& value) const { return is_valid_cast(value, {1}); }  // FLOAT [N, T]
  // ReduceSum(Cast(valid, INT32 or INT64), axis 1): the tokens per sequence [N].
  bool is_lengths(const std::string& value) const {
    const Node* r = producer(value);
    return reduces_axis1(r, "ReduceSum", false) && is_valid_cast(r->inputs[0], {6, 7});
  }
  // ConstantOfShape(...) with value 0 (absent: 0), or a Slice / Gather / reshaping of one:
// torch.onnx's default initial state (per layer a Slice of the [L*D, N, H] zeros).
  bool is_zeros(const std::string& value) const {
    const Node* c = producer(value);
    static const std::set<std::string> picks{"Slice", "Gather", "Squeeze", "Unsqueeze", "Reshape", "Expand"};
    while (c && c->domain.empty() && picks.count(c->op_type) && !c->inputs.empty())  // a part of zeros
      c = producer(c->inputs[0]);
    if (!is(c, "ConstantOfShape", 1)) return false;
    const Attribute* v = attr(*c, "value");
    if (!v) return true;
    if (v->type != Attribute::Type::Tensor || !v->t.defined()) return false;
    for (double x : v->t.to(DType::f64).to_vector<double>())
      if (x != 0) return false;
    return true;
  }

  // ---- recurrent nodes ----
  struct Candidate {
    std::string input;           // the batch-first value the native node reads (or a fusion's key)
    long from = -1;              // the candidate whose time-major output is X; -1: a Transpose of `input`
    std::vector<size_t> glue;    // Transpose / Reshape / Squeeze nodes after Y
    std::vector<std::string> bf; // values equal to the native output
    std::vector<std::string> tm; // time-major [T, N, D*H] values of it
    std::vector<std::string> last; // [N, H] values of Y_h
    std::vector<size_t> linked;    // recurrent nodes whose Y_h a Concat joins with this one's
    OnnxNodeView view;
    std::vector<std::string> inputs;
  };
  // Y_h of node k read by Concat(axis 0) `u.node` (torch.onnx's h_n [L, N, H] of a stacked
  // layer), whose every input is a recurrent node's Y_h and whose every reader is a Gather(axis 0)
  // of a constant index: the Gathers of k's position are k's last step. Empty when so, else why not.
  std::string check_state_concat(size_t k, const ValueUse& u, Candidate& c) const {
    const Node& cat = g_.nodes[u.node];
    const std::string what = "its Y_h is joined by node '" + cat.name + "' (Concat)";
    if (in_.graph_outputs.count(cat.outputs[0])) return what + ", a graph output in ONNX's [L*D, N, H] layout";
    for (size_t i = 0; i < cat.inputs.size(); ++i) {
      auto it = made_by_.find(in_.resolve(cat.inputs[i]));
      const Node* p = it == made_by_.end() ? nullptr : &g_.nodes[it->second];
      if (!p || !recurrent(*p) || p->outputs.size() < 2 || p->outputs[1] != in_.resolve(cat.inputs[i]))
        return what + ", whose input " + std::to_string(i) + " is not a recurrent node's Y_h";
      if (it->second != k) c.linked.push_back(it->second);
    }
    const int64_t count = static_cast<int64_t>(cat.inputs.size());
    for (const ValueUse& g : readers(cat.outputs[0])) {
      const Node& r = g_.nodes[g.node];
      const Tensor* index = is(&r, "Gather", 2) && int_attr(r, "axis", 0) == 0 && g.input == 0 ? constant(r.inputs[1]) : nullptr;
      int64_t i = index && index->dim() == 0 ? index->to_vector<int64_t>()[0] : count;
      if (i < 0) i += count;
      if (i < 0 || i >= count)
        return what + ", whose output is read by node '" + r.name + "' (" + r.op_type +
               "), not by a Gather of one layer's state";
      if (i == static_cast<int64_t>(u.input)) c.last.push_back(r.outputs[0]);
      c.glue.push_back(g.node);
    }
    c.glue.push_back(u.node);
    return "";
  }

  static std::string key(size_t k) { return "\x1f" + std::to_string(k) + " [N, T, D*H]"; }  // no ONNX name

  // Empty when node k's layout changes are the recognized ones (filling c), else why not.
  std::string check_recurrent(size_t k, Candidate& c, const std::map<std::string, size_t>& tm_owner) {
    const Node& n = g_.nodes[k];
    const char* out_names[] = {"Y", "Y_h", "Y_c"};
    auto out_read = [&](size_t i) {
      return i < n.outputs.size() && !n.outputs[i].empty() &&
             (!readers(n.outputs[i]).empty() || in_.graph_outputs.count(n.outputs[i]));
    };
    for (size_t i = 2; i < n.outputs.size(); ++i)
      if (out_read(i))
        return std::string("its output ") + out_names[std::min<size_t>(i, 2)] + " is read; the native " + n.op_type +
               " gives only Y (the hidden state at every step)";
    const std::string y = n.outputs.empty() ? "" : n.outputs[0];
    const std::string& shaped = !y.empty() ? y : out_read(1) ? n.outputs[1] : y;
    if (shaped.empty()) return "it has no output Y";
    // layout 1 (batch-major): X [N, T, C], Y [N, T, D, H], Y_h [N, D, H]; the native layer's own form.
    const bool bm = int_attr(n, "layout", 0) == 1;
    const std::string y_form = bm ? "[N, T, D, H]" : "[T, D, N, H]";
    if (in_.graph_outputs.count(y)) return "its Y is a graph output in ONNX's " + y_form + " layout";
    const TensorType& yt = in_.ctx.types.at(shaped);  // Y [T, D, N, H] or Y_h [D, N, H] (layout 1: as above)
    if (yt.shape.size() != (y.empty() ? 3u : 4u)) return "its Y is not " + y_form;
    const int64_t dirs = yt.shape[y.empty() ? (bm ? 1 : 0) : (bm ? 2 : 1)], hidden = yt.shape.back();
    const int64_t h_dir_axis = bm ? 1 : 0;  // Y_h's direction axis
    if (out_read(1)) {  // Y_h [1, N, H] = Y's last valid step, read as [N, H] (PyTorch's h_n[-1])
      const std::string& h = n.outputs[1];
      if (dirs != 1) return "its output Y_h is read; for two directions the native " + n.op_type + " has no Y_h";
      if (in_.graph_outputs.count(h))
        return std::string("its Y_h is a graph output in ONNX's ") + (bm ? "[N, D, H]" : "[D, N, H]") + " layout";
      for (const ValueUse& u : readers(h)) {
        const Node& r = g_.nodes[u.node];
        if (!bm && is(&r, "Concat", 1) && int_attr(r, "axis", 0) == 0) {  // torch's h_n of several layers
          if (std::string why = check_state_concat(k, u, c); !why.empty()) return why;
          continue;
        }
        const Tensor* index =
            is(&r, "Gather", 2) && int_attr(r, "axis", 0) == h_dir_axis ? constant(r.inputs[1]) : nullptr;
        const bool picks = index && index->dim() == 0 && (index->to_vector<int64_t>()[0] == 0 || index->to_vector<int64_t>()[0] == -1);
        if (!picks && !(is(&r, "Squeeze", 1) && ints_of(r, "axes", 1) == Ints{h_dir_axis}))
          return "its Y_h is read by node '" + r.name + "' (" + r.op_type + "), not by a Gather or Squeeze of its one direction";
        c.last.push_back(r.outputs[0]);
        c.glue.push_back(u.node);
      }
    }
    auto merged = [&](const Node* reshape) {  // Reshape to [0, 0, D*H] (or -1 last)
      if (!is(reshape, "Reshape", 2) || int_attr(*reshape, "allowzero", 0) != 0) return false;
      const Tensor* s = constant(reshape->inputs[1]);
      const Ints shape = s ? s->to_vector<int64_t>() : Ints{};
      return shape.size() == 3 && shape[0] == 0 && shape[1] == 0 && (shape[2] == -1 || shape[2] == dirs * hidden);
    };
    for (const ValueUse& u : y.empty() || !bm ? std::vector<ValueUse>{} : readers(y)) {  // [N, T, D, H]
      const Node& r = g_.nodes[u.node];
      if (!merged(&r) && !(dirs == 1 && is(&r, "Squeeze", 1) && ints_of(r, "axes", 1) == Ints{2}))
        return "its Y (layout 1) is read by node '" + r.name + "' (" + r.op_type +
               "), not by a Reshape [0, 0, D*H] (or Squeeze of axis 2) that gives [N, T, D*H]";
      c.bf.push_back(r.outputs[0]);
      c.glue.push_back(u.node);
    }
    for (const ValueUse& u : y.empty() || bm ? std::vector<ValueUse>{} : readers(y)) {
      const Node& r = g_.nodes[u.node];
      const std::string what = "its Y is read by node '" + r.name + "' (" + r.op_type + ")";
      if (perm_is(&r, {2, 0, 1, 3}) || perm_is(&r, {0, 2, 1, 3})) {
        if (!read_once(r.outputs[0])) return what + ", whose output is read more than once";
        const size_t m = readers(r.outputs[0])[0].node;
        if (!merged(&g_.nodes[m])) return what + ", which no Reshape [0, 0, D*H] follows";
        (perm_is(&r, {2, 0, 1, 3}) ? c.bf : c.tm).push_back(g_.nodes[m].outputs[0]);
        c.glue.insert(c.glue.end(), {u.node, m});
      } else if (dirs == 1 && is(&r, "Squeeze", 1) && ints_of(r, "axes", 1) == Ints{1}) {
        c.tm.push_back(r.outputs[0]);
        c.glue.push_back(u.node);
      } else {
        return what + ", not by the Transpose and Reshape (or Squeeze) that give [N, T, D*H] or [T, N, D*H]";
      }
    }
    for (size_t i = 0; i < c.tm.size(); ++i) {
      const std::string t = c.tm[i];
      if (in_.graph_outputs.count(t)) return "its output '" + t + "' [T, N, D*H] is a graph output";
      for (const ValueUse& u : readers(t)) {
        const Node& r = g_.nodes[u.node];
        if (perm_is(&r, {1, 0, 2})) {
          c.bf.push_back(r.outputs[0]);
          c.glue.push_back(u.node);
        } else if (!recurrent(r) || u.input != 0) {
          return "its output '" + t + "' [T, N, D*H] is read by node '" + r.name + "' (" + r.op_type +
                 "), not by a recurrent node or a Transpose [1, 0, 2]";
        }
      }
    }
    const std::string& x = n.inputs.at(0);
    TensorType xt = in_.ctx.types.at(x);
    if (bm) {
      if (constant(x)) return "its X is a constant";
      c.input = x;
    } else if (auto it = tm_owner.find(x); it != tm_owner.end()) {
      c.from = static_cast<long>(it->second);
      c.input = key(it->second);
    } else if (const Node* p = producer(x); perm_is(p, {1, 0, 2}) && !constant(p->inputs[0])) {
      c.input = p->inputs[0];
    } else {
      return "its X is not a Transpose [1, 0, 2] of an [N, T, C] value nor another recurrent node's output (the native " +
             n.op_type + " is batch first)";
    }
    if (xt.shape.size() != 3) return bm ? "its X is not [N, T, C]" : "its X is not [T, N, C]";
    c.inputs = n.inputs;
    c.inputs[0] = c.input;
    c.view = in_.view(n, n.op_type, n.inputs);
    c.view.attributes.erase("layout");  // the view is the native node's: batch first
    if (!bm) std::swap(xt.shape[0], xt.shape[1]);
    c.view.inputs[0].type = xt;
    c.view.outputs.at(0) = TensorType{yt.dtype, {xt.shape[0], xt.shape[1], dirs * hidden}};
    c.view.graph_padding_mask = in_.mask_ids.has_value();
    if (n.inputs.size() > 4 && !n.inputs[4].empty() && is_lengths(n.inputs[4])) {
      c.view.inputs[4].present = false;
      c.view.graph_padding_mask = false;
    }
    for (size_t i : {size_t{5}, size_t{6}})
      if (i < n.inputs.size() && !n.inputs[i].empty() && is_zeros(n.inputs[i])) c.view.inputs[i].present = false;
    return "";
  }

  void plan_recurrent() {
    std::map<size_t, Candidate> cands;
    std::map<std::string, size_t> tm_owner;  // time-major value -> the candidate it comes from
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& n = g_.nodes[k];
      if (!recurrent(n)) continue;
      Candidate c;
      const std::string why = check_recurrent(k, c, tm_owner);
      if (!why.empty()) {
        in_.warn(n, why);
        continue;
      }
      if (!in_.fits(n, c.view)) continue;
      for (const std::string& t : c.tm) tm_owner[t] = k;
      cands[k] = std::move(c);
    }
    for (bool changed = true; changed;) {  // a chain maps whole or not at all
      changed = false;
      for (auto it = cands.begin(); it != cands.end();) {
        const Node& n = g_.nodes[it->first];
        std::string why;
        if (it->second.from >= 0 && !cands.count(static_cast<size_t>(it->second.from)))
          why = "its X comes from node '" + g_.nodes[static_cast<size_t>(it->second.from)].name + "', which stays onnx.";
        for (const std::string& t : it->second.tm)
          for (const ValueUse& u : readers(t))
            if (recurrent(g_.nodes[u.node]) && !cands.count(u.node))
              why = "its output feeds node '" + g_.nodes[u.node].name + "', which stays onnx.";
        for (size_t l : it->second.linked)
          if (!cands.count(l)) why = "its Y_h is joined with node '" + g_.nodes[l].name + "''s, which stays onnx.";
        if (why.empty()) {
          ++it;
          continue;
        }
        in_.warn(n, why + " in ONNX's time-major layout");
        it = cands.erase(it);
        changed = true;
      }
    }
    std::map<size_t, size_t> upper;  // a candidate -> the one stacked on it (Note [Stacked layers])
    for (const auto& [k, c] : cands)
      if (c.from >= 0 && stacks(cands.at(static_cast<size_t>(c.from)), c, g_.nodes[static_cast<size_t>(c.from)], g_.nodes[k]))
        upper[static_cast<size_t>(c.from)] = k;
    std::set<size_t> uppers;
    for (const auto& [lower, up] : upper) uppers.insert(up);
    for (auto& [k, c] : cands) {
      if (uppers.count(k)) continue;  // with the layer below it
      if (c.from < 0) live_.insert(c.input);
      SequenceFusion f{c.view, c.inputs, key(k), {}, {}, {k}, {c.view}};
      size_t top = k;
      plan_.removed.insert(c.glue.begin(), c.glue.end());
      for (auto it = upper.find(top); it != upper.end(); it = upper.find(top)) {
        plan_.removed.insert(top);
        top = it->second;
        const Candidate& u = cands.at(top);
        plan_.removed.insert(u.glue.begin(), u.glue.end());
        f.layers.push_back(top);
        f.layer_views.push_back(u.view);
      }
      const Candidate& t = cands.at(top);
      f.output = key(top);
      f.aliases = t.bf;
      f.last_step = t.last;
      plan_.fusions[top] = std::move(f);
    }
  }

  // Note [Stacked layers]: torch.onnx writes a recurrent layer of L layers as L ONNX nodes, each
  // reading the one below through a Squeeze (or Transpose [0, 2, 1, 3] + Reshape for two
  // directions). Layer b stacks on a (one native node, num_layers + 1, b's parameters as
  // *_l<k>) when a's output goes only to b, a's Y_h is not read on its own (only the top layer's
  // last step is an output of the native node), and both have the same op and attributes.
  bool stacks(const Candidate& a, const Candidate& b, const Node& na, const Node& nb) const {
    if (na.op_type != nb.op_type || !a.bf.empty() || !a.last.empty() || a.tm.size() != 1) return false;
    if (readers(a.tm[0]).size() != 1 || in_.graph_outputs.count(a.tm[0])) return false;
    return a.view.attributes == b.view.attributes && a.view.string_lists == b.view.string_lists &&
           a.view.graph_padding_mask == b.view.graph_padding_mask && a.view.outputs.at(0).shape.back() == b.view.outputs.at(0).shape.back();
  }

  // ---- SequencePool's exported forms (export_sequence_pool) over the padding mask ----
  // mean: Div(ReduceSum(Mul(x, Unsqueeze(mask, 2)), 1), Max(ReduceSum(mask, 1, keep), 1)).
  // max:  Mul(ReduceMax(Where(Unsqueeze(valid, 2), x, lowest), 1), Min(ReduceSum(mask, 1, keep), 1)).
  // Without a padding mask: mean Div(ReduceSum(x, 1), T) (T folded to a constant), max ReduceMax(x, 1).
  void plan_pool(size_t k) {
    const Node& n = g_.nodes[k];
    if (!n.domain.empty() || n.outputs.size() != 1) return;
    if (!in_.mask_ids) {
      std::string x, mode;
      std::vector<size_t> nodes;
      if (reduces_axis1(&n, "ReduceMax", false)) {
        x = n.inputs[0], mode = "max";
      } else if (is(&n, "Div", 2) && read_once(n.inputs[0])) {
        const Node* sum = producer(n.inputs[0]);
        if (!reduces_axis1(sum, "ReduceSum", false)) return;
        const SymShape& shape = in_.ctx.types.at(sum->inputs[0]).shape;
        if (shape.size() != 3 || graph::is_symbolic(shape[1]) || !scalar_is(n.inputs[1], static_cast<double>(shape[1])))
          return;
        x = sum->inputs[0], mode = "mean";
        nodes.push_back(made_by_.at(in_.resolve(n.inputs[0])));
      }
      if (!x.empty()) add_pool(k, x, mode, nodes);
      return;
    }
    if (n.inputs.size() != 2) return;
    std::vector<size_t> nodes;  // the pattern's nodes but n
    auto take = [&](const std::string& value, const char* op, size_t inputs) -> const Node* {
      const Node* p = producer(value);
      if (!is(p, op, inputs) || !read_once(value)) return nullptr;
      nodes.push_back(made_by_.at(in_.resolve(value)));
      return p;
    };
    // Max/Min(ReduceSum(mask, 1, keep), 1): the token count, at least / at most 1.
    auto count_clamped = [&](const std::string& value, const char* op) {
      const Node* m = take(value, op, 2);
      if (!m) return false;
      const bool first = scalar_is(m->inputs[1], 1);
      if (!first && !scalar_is(m->inputs[0], 1)) return false;
      const Node* c = take(m->inputs[first ? 0 : 1], "ReduceSum", 1);
      return c && reduces_axis1(c, "ReduceSum", true) && is_mask(c->inputs[0]);
    };
    std::string x, mode;
    if (n.op_type == "Div") {
      const Node* sum = take(n.inputs[0], "ReduceSum", 1);
      const Node* mul = sum && reduces_axis1(sum, "ReduceSum", false) ? take(sum->inputs[0], "Mul", 2) : nullptr;
      if (!mul || !count_clamped(n.inputs[1], "Max")) return;
      for (size_t i = 0; i < 2 && x.empty(); ++i) {
        const Node* u = producer(mul->inputs[i]);
        if (is(u, "Unsqueeze", 1) && ints_of(*u, "axes", 1) == Ints{2} && is_mask(u->inputs[0]) &&
            read_once(mul->inputs[i])) {
          nodes.push_back(made_by_.at(in_.resolve(mul->inputs[i])));
          x = mul->inputs[1 - i];
        }
      }
      mode = "mean";
    } else if (n.op_type == "Mul") {
      for (size_t i = 0; i < 2 && mode.empty(); ++i) {
        nodes.clear();
        const Node* max = take(n.inputs[i], "ReduceMax", 1);
        if (!max || !reduces_axis1(max, "ReduceMax", false) || !count_clamped(n.inputs[1 - i], "Min")) continue;
        const Node* where = take(max->inputs[0], "Where", 3);
        const Node* u = where ? take(where->inputs[0], "Unsqueeze", 1) : nullptr;
        if (!u || ints_of(*u, "axes", 1) != Ints{2} || !is_valid(u->inputs[0])) continue;
        const Tensor* low = constant(where->inputs[2]);
        if (!low || low->numel() != 1 || low->to(DType::f64).to_vector<double>()[0] > -3.4e38) continue;
        x = where->inputs[1];
        mode = "max";
      }
    }
    if (!x.empty() && !mode.empty()) add_pool(k, x, mode, nodes);
  }

  void add_pool(size_t k, const std::string& x, const std::string& mode, const std::vector<size_t>& nodes) {
    const Node& n = g_.nodes[k];
    if (constant(x) || in_.ctx.types.at(x).shape.size() != 3) return;
    OnnxNodeView v = in_.view(n, "kiln.SequencePool", {x});
    v.attributes = {{"mode", mode}};
    v.graph_padding_mask = in_.mask_ids.has_value();
    if (!in_.fits(n, v)) return;
    live_.insert(x);
    plan_.removed.insert(nodes.begin(), nodes.end());
    plan_.fusions[k] = {std::move(v), {x}, n.outputs[0], {}, {}, {}, {}};
  }

  // Pure nodes whose every reader is gone (or a fused node that no longer reads the value)
  // go too: the padding-mask arithmetic, the input Transposes, torch's initial-state shapes.
  void remove_dead() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t k = g_.nodes.size(); k-- > 0;) {
        const Node& n = g_.nodes[k];
        if (plan_.removed.count(k) || plan_.fusions.count(k) || !pure(n)) continue;
        bool dead = true, read = false;
        for (const std::string& o : n.outputs) {
          if (o.empty()) continue;
          if (in_.graph_outputs.count(o) || live_.count(o)) dead = false;
          for (const ValueUse& u : readers(o)) {
            read = true;
            if (!plan_.removed.count(u.node) && !plan_.fusions.count(u.node)) dead = false;
          }
        }
        // Unread: only beside a fused pattern (an input feeds a removed node, as export_sequence_pool's
        // unused Unsqueeze of the mask for mode max).
        for (size_t i = 0; !read && dead && i < n.inputs.size(); ++i)
          for (const ValueUse& u : n.inputs[i].empty() ? std::vector<ValueUse>{} : readers(n.inputs[i]))
            read = read || (u.node != k && plan_.removed.count(u.node));
        if (dead && read) plan_.removed.insert(k), changed = true;
      }
    }
  }

  const SequencePlanInput& in_;
  const Graph& g_;
  std::map<std::string, size_t> made_by_;
  std::set<std::string> live_;  // values the native nodes read through their ports
  SequencePlan plan_;
};

}  // namespace

SequencePlan plan_sequences(const SequencePlanInput& in) { return Planner(in).run(); }

}  // namespace kiln::onnx::detail
