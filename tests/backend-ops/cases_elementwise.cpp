// Cases: copy, fill, unary, binary, where, adam_step.
#include <cmath>
#include <limits>

#include "engine/core/splitmix.h"
#include "tests/backend-ops/harness.h"

namespace kiln::backend_ops {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
const std::vector<Shape> kShapes = {{}, {1}, {0}, {7}, {3, 0, 2}, {5, 1, 3}, {33, 17}, {2, 3, 65}};
const Layout kLayouts[] = {Layout::transposed, Layout::stepped, Layout::expanded};
const DType kFloat[] = {DType::f32, DType::f16, DType::bf16};
const DType kAll[] = {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8, DType::i8, DType::bool_,
                      DType::i16, DType::u16, DType::u32, DType::u64};

Rng rng_for(const std::string& name) { return Rng(std::hash<std::string>{}(name)); }

// (shape, layout) pairs: every shape contiguous, the 2-d and 3-d ones in every layout.
std::vector<std::pair<Shape, Layout>> shape_layouts(bool all_shapes) {
  std::vector<std::pair<Shape, Layout>> v;
  for (const Shape& s : kShapes)
    if (all_shapes || s.size() >= 2) v.push_back({s, Layout::contiguous});
  for (Layout l : kLayouts) {
    v.push_back({{33, 17}, l});
    if (all_shapes) v.push_back({{2, 3, 65}, l});
  }
  return v;
}

Fill signed_away_from_zero(double lo, double hi) {
  return [=](Rng& r) {
    double v = std::uniform_real_distribution<double>(lo, hi)(r);
    return (r() & 1) ? v : -v;
  };
}

Fill unary_domain(UnaryOp op) {
  switch (op) {
    case UnaryOp::log: case UnaryOp::sqrt: case UnaryOp::rsqrt: case UnaryOp::pow_scalar: return uniform(0.1, 4);
    case UnaryOp::log1p: return uniform(-0.9, 3);
    case UnaryOp::reciprocal: return signed_away_from_zero(0.2, 3);
    case UnaryOp::round: return choice({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7, 3.49, -3.51});
    default: return uniform(-3, 3);
  }
}

Fill values_for(DType dt) {
  switch (dt) {
    case DType::bool_: return integers(0, 1);
    case DType::u8: case DType::u16: case DType::u32: case DType::u64: return integers(0, 40);
    case DType::i8: case DType::i16: case DType::i32: case DType::i64: return integers(-20, 20);
    default: return uniform(-3, 3);
  }
}

void add_unary(std::vector<Case>& out) {
  for (int o = 0; o < static_cast<int>(UnaryOp::count); ++o) {
    const UnaryOp op = static_cast<UnaryOp>(o);
    std::vector<std::pair<double, double>> params{{0, 0}};
    if (op == UnaryOp::leaky_relu) params = {{0.1, 0}};
    if (op == UnaryOp::clamp) params = {{-0.5, 0.7}, {-kInf, 1.0}};
    if (op == UnaryOp::pow_scalar) params = {{2.5, 0}, {3, 0}, {-1.5, 0}, {0.5, 0}, {2, 0}};
    for (DType dt : kFloat)
      for (auto [p0, p1] : params)
        for (auto& [shape, layout] : shape_layouts(dt == DType::f32)) {
          Case c;
          std::string extra = layout_name(layout);
          if (params.size() > 1 || p0 != 0) extra += "/p=" + std::to_string(p0) + "," + std::to_string(p1);
          c.name = case_name(std::string("unary.") + unary_op_name(op), dt, shape, extra);
          c.op = OpId::unary;
          c.sub_op = static_cast<int>(op);
          c.dtype = dt;
          Rng rng = rng_for(c.name);
          c.bufs.push_back(output(rng, op == UnaryOp::logical_not ? DType::bool_ : dt, shape));
          c.bufs.push_back(input(rng, dt, shape, layout, unary_domain(op)));
          c.run = [op, p0 = p0, p1 = p1](Backend& b, std::vector<TensorArg>& a) { b.unary(op, a[0], a[1], p0, p1); };
          c.max_nmse = nmse_for(dt, op == UnaryOp::pow_scalar ? 1e-6 : 1e-7);
          out.push_back(std::move(c));
        }
    if (op == UnaryOp::logical_not)  // of integers and bool too (a backend may run no other unary op of them)
      for (DType dt : kAll)
        for (auto& [shape, layout] : shape_layouts(false)) {
          if (is_floating(dt)) continue;
          Case c;
          c.name = case_name("unary.logical_not", dt, shape, layout_name(layout));
          c.op = OpId::unary;
          c.sub_op = static_cast<int>(op);
          c.dtype = dt;
          Rng rng = rng_for(c.name);
          c.bufs.push_back(output(rng, DType::bool_, shape));
          c.bufs.push_back(input(rng, dt, shape, layout, integers(0, dt == DType::bool_ ? 1 : 2)));
          c.run = [](Backend& b, std::vector<TensorArg>& a) { b.unary(UnaryOp::logical_not, a[0], a[1], 0, 0); };
          out.push_back(std::move(c));
        }
    if (op == UnaryOp::pow_scalar) continue;
    Case c;  // NaN, infinities and signed zeros
    c.name = case_name(std::string("unary.") + unary_op_name(op), DType::f32, {4, 8}, "special");
    c.op = OpId::unary;
    c.sub_op = static_cast<int>(op);
    Rng rng = rng_for(c.name);
    c.bufs.push_back(output(rng, op == UnaryOp::logical_not ? DType::bool_ : DType::f32, {4, 8}));
    c.bufs.push_back(input(rng, DType::f32, {4, 8}, Layout::contiguous,
                           choice({kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 40.0, -40.0, 100.0})));
    double p0 = op == UnaryOp::leaky_relu ? 0.1 : op == UnaryOp::clamp ? -0.5 : 0;
    double p1 = op == UnaryOp::clamp ? 0.7 : 0;
    c.run = [op, p0, p1](Backend& b, std::vector<TensorArg>& a) { b.unary(op, a[0], a[1], p0, p1); };
    c.max_nmse = 1e-7;
    out.push_back(std::move(c));
  }
}

void add_binary(std::vector<Case>& out) {
  for (int o = 0; o < static_cast<int>(BinaryOp::count); ++o) {
    const BinaryOp op = static_cast<BinaryOp>(o);
    for (DType dt : kAll) {
      const bool fp = is_floating(dt);
      Fill fa = values_for(dt), fb = values_for(dt);
      if (op == BinaryOp::div && !fp)
        fb = dt == DType::bool_ ? integers(1, 1) : is_signed(dt) ? choice({-7, -3, -1, 1, 2, 5, 9}) : choice({1, 2, 5, 9});
      if (op == BinaryOp::div && fp) fb = signed_away_from_zero(0.3, 3);
      if (op == BinaryOp::pow) {
        fa = fp ? uniform(0.1, 3) : (!is_signed(dt) ? integers(0, 3) : integers(-3, 3));
        fb = fp ? uniform(-2, 2) : (!is_signed(dt) ? integers(0, 4) : integers(-2, 4));
      }
      for (auto& [shape, layout] : shape_layouts(dt == DType::f32 || dt == DType::i32)) {
        for (Layout lb : {Layout::contiguous, Layout::expanded}) {
          if (lb == Layout::expanded && layout != Layout::contiguous) continue;
          Case c;
          c.name = case_name(std::string("binary.") + binary_op_name(op), dt, shape,
                             std::string(layout_name(layout)) + "," + layout_name(lb));
          c.op = OpId::binary;
          c.sub_op = static_cast<int>(op);
          c.dtype = dt;
          Rng rng = rng_for(c.name);
          c.bufs.push_back(output(rng, is_comparison(op) ? DType::bool_ : dt, shape));
          c.bufs.push_back(input(rng, dt, shape, layout, fa));
          c.bufs.push_back(input(rng, dt, shape, lb, fb));
          c.run = [op](Backend& b, std::vector<TensorArg>& a) { b.binary(op, a[0], a[1], a[2]); };
          c.max_nmse = nmse_for(dt, op == BinaryOp::pow ? 1e-6 : 1e-7);
          out.push_back(std::move(c));
        }
      }
    }
    Case c;
    c.name = case_name(std::string("binary.") + binary_op_name(op), DType::f32, {6, 12}, "special");
    c.op = OpId::binary;
    c.sub_op = static_cast<int>(op);
    Rng rng = rng_for(c.name);
    Fill special = choice({kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 2.5, -3.0});
    c.bufs.push_back(output(rng, is_comparison(op) ? DType::bool_ : DType::f32, {6, 12}));
    c.bufs.push_back(input(rng, DType::f32, {6, 12}, Layout::contiguous, special));
    c.bufs.push_back(input(rng, DType::f32, {6, 12}, Layout::contiguous, special));
    c.run = [op](Backend& b, std::vector<TensorArg>& a) { b.binary(op, a[0], a[1], a[2]); };
    c.max_nmse = 1e-6;
    out.push_back(std::move(c));
  }
}

const DType kCopy[] = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32, DType::u8,
                       DType::i8,  DType::bool_, DType::i16, DType::u16, DType::u32, DType::u64};
// i16 and the unsigned types past u8 came last (issue 6); a copy into one is that type's case,
// so a backend without them skips it.
bool newer_int(DType t) { return t == DType::i16 || t == DType::u16 || t == DType::u32 || t == DType::u64; }

void add_copy_fill_where(std::vector<Case>& out) {
  for (DType from : kCopy)
    for (DType to : kCopy)
      for (Layout l : {Layout::contiguous, Layout::transposed}) {
        if (l == Layout::transposed && from != to && from != DType::f32) continue;
        Case c;
        c.name = case_name("copy", from, {33, 17}, std::string("to ") + dtype_name(to) + "," + layout_name(l));
        c.op = OpId::copy;
        c.dtype = newer_int(to) ? to : from;
        Rng rng = rng_for(c.name);
        Fill f = is_floating(from) && is_floating(to) ? uniform(-3, 3)
                 : from == DType::bool_ || to == DType::bool_ ? integers(0, 1) : is_floating(from) ? uniform(0, 100)
                                                                                                   : integers(0, 100);
        c.bufs.push_back(output(rng, to, {33, 17}));
        c.bufs.push_back(input(rng, from, {33, 17}, l, f));
        c.run = [](Backend& b, std::vector<TensorArg>& a) { b.copy(a[0], a[1]); };
        c.max_nmse = nmse_for(is_floating(to) && dtype_size(to) == 2 ? to : from);
        out.push_back(std::move(c));
      }
  for (DType dt : kCopy)
    for (double v : {0.0, 2.5, !is_signed(dt) ? 7.0 : -3.0})
      for (const Shape& s : std::vector<Shape>{{}, {0}, {1000, 3}}) {
        Case c;
        c.name = case_name("fill", dt, s, "value=" + std::to_string(v));
        c.op = OpId::fill;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, s));
        c.run = [v](Backend& b, std::vector<TensorArg>& a) { b.fill(a[0], v); };
        out.push_back(std::move(c));
      }
  for (DType dt : kAll)
    for (auto& [shape, layout] : shape_layouts(dt == DType::f32)) {
      Case c;
      c.name = case_name("where", dt, shape, layout_name(layout));
      c.op = OpId::where;
      c.dtype = dt;
      Rng rng = rng_for(c.name);
      c.bufs.push_back(output(rng, dt, shape));
      c.bufs.push_back(input(rng, DType::bool_, shape, layout, integers(0, 1)));
      c.bufs.push_back(input(rng, dt, shape, Layout::contiguous, values_for(dt)));
      c.bufs.push_back(input(rng, dt, shape, Layout::expanded, values_for(dt)));
      c.run = [](Backend& b, std::vector<TensorArg>& a) { b.where(a[0], a[1], a[2], a[3]); };
      out.push_back(std::move(c));
    }
}

void add_adam(std::vector<Case>& out) {
  for (bool decoupled : {false, true})
    for (const Shape& s : std::vector<Shape>{{1}, {1000}, {33, 7}, {0}}) {
      Case c;
      c.name = case_name(decoupled ? "adam_step.adamw" : "adam_step.adam", DType::f32, s);
      c.op = OpId::adam_step;
      Rng rng = rng_for(c.name);
      Fill val = uniform(-1, 1), pos = uniform(0, 0.5);
      c.bufs.push_back(output(rng, DType::f32, s, &val));
      c.bufs.push_back(input(rng, DType::f32, s, Layout::contiguous, val));
      c.bufs.push_back(output(rng, DType::f32, s, &val));
      c.bufs.push_back(output(rng, DType::f32, s, &pos));
      AdamParams ap;
      ap.lr = 0.01;
      ap.weight_decay = 0.05;
      ap.decoupled = decoupled;
      ap.step = 3;
      c.run = [ap](Backend& b, std::vector<TensorArg>& a) { b.adam_step(a[0], a[1], a[2], a[3], ap); };
      c.max_nmse = 1e-10;
      out.push_back(std::move(c));
    }
}
// The fused ReLU backward (grad where out > 0) against the CPU's, which the engine tests
// check against the composed rule (tests/engine/test_cpu_fused.cpp).
void add_relu_backward(std::vector<Case>& out) {
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (Layout layout : {Layout::contiguous, Layout::transposed})
      for (const Shape& s : std::vector<Shape>{{7, 33}, {64, 300}}) {
        Case c;
        c.name = case_name("relu_backward", dt, s, layout_name(layout));
        c.op = OpId::relu_backward;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, s));
        c.bufs.push_back(input(rng, dt, s, layout, uniform(-2, 2)));
        c.bufs.push_back(input(rng, dt, s, Layout::contiguous, uniform(-1, 1)));
        c.run = [](Backend& b, std::vector<TensorArg>& a) { b.relu_backward(a[0], a[1], a[2]); };
        out.push_back(std::move(c));
      }
}
// The counter-based Bernoulli draw (dropout's scaled mask): the same elements as the CPU's, so
// exactly equal; p = 0.9 as dropout 0.1 keeps, p = 0 and 1 at the ends. The CPU has f32 and f64.
void add_bernoulli(std::vector<Case>& out) {
  for (DType dt : {DType::f32, DType::f64})
    for (double p : {0.0, 0.9, 1.0})
      for (const Shape& s : std::vector<Shape>{{7, 33}, {64, 300, 5}}) {
        Case c;
        c.name = case_name("bernoulli", dt, s, "p=" + std::to_string(p).substr(0, 3));
        c.op = OpId::bernoulli;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, s));
        const uint64_t key = rng();
        c.run = [key, p](Backend& b, std::vector<TensorArg>& a) { b.bernoulli(a[0], key, bernoulli_threshold(p), 1 / 0.9); };
        c.max_nmse = 0;
        out.push_back(std::move(c));
      }
}
}  // namespace

void add_elementwise_cases(std::vector<Case>& out) {
  add_unary(out);
  add_binary(out);
  add_copy_fill_where(out);
  add_adam(out);
  add_relu_backward(out);
  add_bernoulli(out);
}

}  // namespace kiln::backend_ops
