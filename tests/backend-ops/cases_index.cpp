// Cases: gather, scatter_add, index_select, index_add; and the bad-input cases whose
// device error is the expected result (out-of-range indices).
#include "tests/backend-ops/harness.h"

namespace kiln::backend_ops {

namespace {
Rng rng_for(const std::string& name) { return Rng(std::hash<std::string>{}(name)); }

Fill values_for(DType dt) {
  switch (dt) {
    case DType::bool_: return integers(0, 1);
    case DType::u8: case DType::u16: case DType::u32: case DType::u64: return integers(0, 200);
    case DType::i8: case DType::i16: case DType::i32: case DType::i64: return integers(-1000, 1000);
    default: return uniform(-3, 3);
  }
}
}  // namespace

void add_index_cases(std::vector<Case>& out) {
  const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8, DType::i8, DType::bool_,
                       DType::i16, DType::u16, DType::u32, DType::u64};
  struct G {
    Shape in, index;
    int64_t dim;
    Layout layout;
  };
  // gather / scatter_add: index has the output's (src's) shape, no larger than in (out) except along dim
  const std::vector<G> gs = {{{5, 7}, {3, 7}, 0, Layout::contiguous},   {{5, 7}, {5, 4}, 1, Layout::transposed},
                             {{4, 3, 6}, {4, 3, 9}, 2, Layout::stepped}, {{6}, {10}, 0, Layout::contiguous},
                             {{6}, {0}, 0, Layout::contiguous},          {{4, 3, 6}, {2, 3, 6}, 0, Layout::expanded},
                             {{1000, 10}, {1000, 1}, 1, Layout::contiguous}};
  for (DType dt : all)
    for (const G& g : gs) {
      const int64_t size = g.in[static_cast<size_t>(g.dim)];
      {
        Case c;
        c.name = case_name("gather", dt, g.in, "index=" + shape_str(g.index) + ",dim=" + std::to_string(g.dim) + "," +
                                                   layout_name(g.layout));
        c.op = OpId::gather;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, g.index));
        c.bufs.push_back(input(rng, dt, g.in, g.layout, values_for(dt)));
        c.bufs.push_back(input(rng, DType::i64, g.index, Layout::contiguous, integers(0, size - 1)));
        int64_t dim = g.dim;
        c.run = [dim](Backend& b, std::vector<TensorArg>& a) { b.gather(a[0], a[1], dim, a[2]); };
        c.max_nmse = 0;
        out.push_back(std::move(c));
      }
      {
        Case c;
        c.name = case_name("scatter_add", dt, g.in, "index=" + shape_str(g.index) + ",dim=" + std::to_string(g.dim));
        c.op = OpId::scatter_add;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        Fill init = values_for(dt);
        c.bufs.push_back(output(rng, dt, g.in, &init));
        c.bufs.push_back(input(rng, DType::i64, g.index, Layout::contiguous, integers(0, size - 1)));
        c.bufs.push_back(input(rng, dt, g.index, g.layout == Layout::expanded ? Layout::contiguous : g.layout,
                               values_for(dt)));
        int64_t dim = g.dim;
        c.run = [dim](Backend& b, std::vector<TensorArg>& a) { b.scatter_add(a[0], dim, a[1], a[2]); };
        c.max_nmse = 1e-12;
        out.push_back(std::move(c));
      }
    }
  struct S {
    Shape in;
    int64_t dim, n;
    Layout layout;
  };
  const std::vector<S> ss = {{{5, 7}, 0, 9, Layout::contiguous}, {{5, 7}, 1, 3, Layout::transposed},
                             {{4, 3, 6}, 2, 6, Layout::stepped}, {{8}, 0, 0, Layout::contiguous},
                             {{50, 64}, 0, 200, Layout::contiguous}};
  for (DType dt : all)
    for (const S& s : ss) {
      const int64_t size = s.in[static_cast<size_t>(s.dim)];
      Shape os = s.in;
      os[static_cast<size_t>(s.dim)] = s.n;
      {
        Case c;
        c.name = case_name("index_select", dt, s.in, "n=" + std::to_string(s.n) + ",dim=" + std::to_string(s.dim) +
                                                         "," + layout_name(s.layout));
        c.op = OpId::index_select;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, os));
        c.bufs.push_back(input(rng, dt, s.in, s.layout, values_for(dt)));
        c.bufs.push_back(input(rng, DType::i64, {s.n}, Layout::stepped, integers(0, size - 1)));
        int64_t dim = s.dim;
        c.run = [dim](Backend& b, std::vector<TensorArg>& a) { b.index_select(a[0], a[1], dim, a[2]); };
        c.max_nmse = 0;
        out.push_back(std::move(c));
      }
      {
        Case c;
        c.name = case_name("index_add", dt, s.in, "n=" + std::to_string(s.n) + ",dim=" + std::to_string(s.dim));
        c.op = OpId::index_add;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        Fill init = values_for(dt);
        c.bufs.push_back(output(rng, dt, s.in, &init));
        c.bufs.push_back(input(rng, DType::i64, {s.n}, Layout::contiguous, integers(0, size - 1)));
        c.bufs.push_back(input(rng, dt, os, s.layout, values_for(dt)));
        int64_t dim = s.dim;
        c.run = [dim](Backend& b, std::vector<TensorArg>& a) { b.index_add(a[0], dim, a[1], a[2]); };
        c.max_nmse = 1e-12;
        out.push_back(std::move(c));
      }
    }
  // bad input: an index out of range must raise an error on the device too (IndexError)
  for (int kind = 0; kind < 4; ++kind) {
    static const char* names[] = {"gather", "scatter_add", "index_select", "index_add"};
    static const OpId ids[] = {OpId::gather, OpId::scatter_add, OpId::index_select, OpId::index_add};
    Case c;
    c.name = case_name(names[kind], DType::f32, {5, 7}, "index out of range");
    c.op = ids[kind];
    c.expect_error = true;
    Rng rng = rng_for(c.name);
    Fill init = uniform(-1, 1);
    c.bufs.push_back(output(rng, DType::f32, {5, 7}, &init));
    c.bufs.push_back(input(rng, DType::f32, {5, 7}, Layout::contiguous, uniform(-1, 1)));
    c.bufs.push_back(input(rng, DType::i64, kind < 2 ? Shape{5, 7} : Shape{5}, Layout::contiguous, choice({0, 1, 9})));
    c.run = [kind](Backend& b, std::vector<TensorArg>& a) {
      if (kind == 0) b.gather(a[0], a[1], 0, a[2]);
      else if (kind == 1) b.scatter_add(a[0], 0, a[2], a[1]);
      else if (kind == 2) b.index_select(a[0], a[1], 0, a[2]);
      else b.index_add(a[0], 0, a[2], a[1]);
    };
    out.push_back(std::move(c));
  }
}

}  // namespace kiln::backend_ops
