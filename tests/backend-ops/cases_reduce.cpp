// Cases: reduce (every ReduceOp), softmax and log_softmax forward / backward.
#include <cmath>
#include <limits>

#include "tests/backend-ops/harness.h"

namespace kiln::backend_ops {

namespace {
Rng rng_for(const std::string& name) { return Rng(std::hash<std::string>{}(name)); }

struct Config {
  Shape shape;
  std::vector<int64_t> dims;  // reduced
  Layout layout = Layout::contiguous;
  bool large = false;
};
const std::vector<Config> kConfigs = {
    {{}, {}},
    {{1}, {0}},
    {{7}, {0}},
    {{33, 17}, {1}},
    {{33, 17}, {0}},
    {{33, 17}, {0, 1}},
    {{33, 17}, {1}, Layout::transposed},
    {{33, 17}, {0}, Layout::stepped},
    {{4, 5, 6}, {0, 2}},
    {{4, 5, 6}, {1}, Layout::expanded},
    {{1000, 7}, {1}},
    {{0, 5}, {1}},
    {{3, 100003}, {1}, Layout::contiguous, true},
    {{(1 << 20) + 3}, {0}, Layout::contiguous, true},
};

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims) {
  Shape o = s;
  for (int64_t d : dims) o[static_cast<size_t>(d)] = 1;
  return o;
}
}  // namespace

void add_reduce_cases(std::vector<Case>& out) {
  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8, DType::i8,
                          DType::bool_, DType::i16, DType::u16, DType::u32, DType::u64};
  for (int o = 0; o < static_cast<int>(ReduceOp::count); ++o) {
    const ReduceOp op = static_cast<ReduceOp>(o);
    const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
    const bool extreme = op == ReduceOp::max || op == ReduceOp::min || arg;
    for (DType dt : dtypes) {
      const bool fp = is_floating(dt);
      if (!fp && (op == ReduceOp::mean || op == ReduceOp::var)) continue;
      for (const Config& cfg : kConfigs) {
        if (cfg.large && (dt != DType::f32 || op == ReduceOp::prod)) continue;
        if (!fp && cfg.shape.size() > 2 && cfg.layout != Layout::contiguous) continue;
        const bool empty_reduction = numel(cfg.shape) == 0;
        if (empty_reduction && extreme) continue;  // max of nothing is an error in the front end
        for (double corr : op == ReduceOp::var ? std::vector<double>{1, 0} : std::vector<double>{0}) {
          Case c;
          std::string dims;
          for (int64_t d : cfg.dims) dims += std::to_string(d);
          c.name = case_name(std::string("reduce.") + reduce_op_name(op), dt, cfg.shape,
                             "dims=" + dims + "," + layout_name(cfg.layout) +
                                 (op == ReduceOp::var ? ",correction=" + std::to_string(static_cast<int>(corr)) : ""));
          c.op = OpId::reduce;
          c.sub_op = static_cast<int>(op);
          c.dtype = dt;
          Rng rng = rng_for(c.name);
          Fill f = fp ? uniform(-1, 1) : dt == DType::bool_ ? integers(0, 1) : !is_signed(dt) ? integers(0, 9)
                                                                                                 : integers(-9, 9);
          if (op == ReduceOp::prod) f = fp ? uniform(0.8, 1.25) : dt == DType::bool_ ? integers(0, 1)
                                                                  : !is_signed(dt) ? integers(1, 2)
                                                                                   : choice({-1, 1, 2, 1});
          if (!fp && extreme) f = dt == DType::bool_ ? integers(0, 1) : integers(0, 3);  // ties
          DType od = arg ? DType::i64 : (!fp && (op == ReduceOp::sum || op == ReduceOp::prod)) ? DType::i64 : dt;
          c.bufs.push_back(output(rng, od, reduced_shape(cfg.shape, cfg.dims)));
          c.bufs.push_back(input(rng, dt, cfg.shape, cfg.layout, f));
          c.run = [op, corr](Backend& b, std::vector<TensorArg>& a) { b.reduce(op, a[0], a[1], corr); };
          c.max_nmse = nmse_for(dt, 1e-9);
          if (dt == DType::f32 && cfg.large) c.max_nmse = 1e-8;
          out.push_back(std::move(c));
        }
      }
    }
    Case c;  // NaN rules: max/min propagate, argmax/argmin give the first NaN
    c.name = case_name(std::string("reduce.") + reduce_op_name(op), DType::f32, {6, 9}, "special");
    c.op = OpId::reduce;
    c.sub_op = static_cast<int>(op);
    Rng rng = rng_for(c.name);
    c.bufs.push_back(output(rng, arg ? DType::i64 : DType::f32, {6, 1}));
    c.bufs.push_back(input(rng, DType::f32, {6, 9}, Layout::contiguous, choice({kNaN, 1.0, 2.0, 0.5, 2.0, -1.0, 3.0})));
    c.run = [op](Backend& b, std::vector<TensorArg>& a) { b.reduce(op, a[0], a[1], 1); };
    out.push_back(std::move(c));
  }

  // softmax / log_softmax
  struct SConfig {
    Shape shape;
    int64_t dim;
  };
  const std::vector<SConfig> sconfigs = {{{10}, 0}, {{4, 10}, 1}, {{3, 1000}, 1}, {{7, 5, 3}, 0}, {{7, 5, 3}, -2},
                                         {{1, 1}, 0}, {{0, 4}, 1}, {{2, 300, 3}, 1}};
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (bool log : {false, true})
      for (const SConfig& s : sconfigs) {
        if (dt != DType::f32 && s.shape.size() < 2) continue;
        const std::string name = log ? "log_softmax" : "softmax";
        Case c;
        c.name = case_name(name + "_forward", dt, s.shape, "dim=" + std::to_string(s.dim));
        c.op = OpId::softmax_forward;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, s.shape));
        c.bufs.push_back(input(rng, dt, s.shape, Layout::contiguous, uniform(-5, 5)));
        int64_t dim = s.dim;
        c.run = [dim, log](Backend& b, std::vector<TensorArg>& a) { b.softmax_forward(a[0], a[1], dim, log); };
        c.max_nmse = nmse_for(dt, 1e-10);
        out.push_back(std::move(c));

        Case g;
        g.name = case_name(name + "_backward", dt, s.shape, "dim=" + std::to_string(s.dim));
        g.op = OpId::softmax_backward;
        g.dtype = dt;
        rng = rng_for(g.name);
        g.bufs.push_back(output(rng, dt, s.shape));
        g.bufs.push_back(input(rng, dt, s.shape, Layout::contiguous, uniform(-1, 1)));
        // a valid forward output: softmax rows are positive, log_softmax rows negative
        g.bufs.push_back(input(rng, dt, s.shape, Layout::contiguous, log ? uniform(-5, -0.01) : uniform(0.001, 0.5)));
        g.run = [dim, log](Backend& b, std::vector<TensorArg>& a) { b.softmax_backward(a[0], a[1], a[2], dim, log); };
        g.max_nmse = nmse_for(dt, 1e-10);
        out.push_back(std::move(g));
      }
}

}  // namespace kiln::backend_ops
