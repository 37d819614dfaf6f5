// Cases: matmul, conv2d forward / backward, max and avg pooling forward / backward.
#include <cmath>

#include "tests/backend-ops/harness.h"

namespace kiln::backend_ops {

namespace {
Rng rng_for(const std::string& name) { return Rng(std::hash<std::string>{}(name)); }

// PyTorch's pooling_output_shape (as engine/core/ops_nn.cpp).
int64_t pooled(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void add_matmul(std::vector<Case>& out) {
  struct M {
    Shape batch;
    int64_t m, k, n;
    Layout la, lb;
  };
  const std::vector<M> ms = {
      {{}, 1, 1, 1, Layout::contiguous, Layout::contiguous},
      {{}, 7, 13, 5, Layout::contiguous, Layout::contiguous},
      {{}, 64, 64, 64, Layout::contiguous, Layout::contiguous},
      {{}, 65, 127, 33, Layout::transposed, Layout::contiguous},
      {{}, 129, 257, 70, Layout::contiguous, Layout::transposed},
      {{}, 31, 9, 200, Layout::transposed, Layout::transposed},
      {{}, 16, 300, 8, Layout::stepped, Layout::stepped},
      {{}, 600, 72, 520, Layout::contiguous, Layout::contiguous},
      {{}, 5, 0, 4, Layout::contiguous, Layout::contiguous},
      {{}, 0, 3, 4, Layout::contiguous, Layout::contiguous},
      {{3}, 17, 9, 11, Layout::contiguous, Layout::contiguous},
      {{4}, 10, 6, 7, Layout::expanded, Layout::transposed},
      {{2, 3}, 8, 5, 9, Layout::contiguous, Layout::expanded},
      // the fast kernel: dense operands, contiguous dims multiples of 4
      {{}, 256, 128, 192, Layout::transposed, Layout::contiguous},
      {{}, 200, 96, 132, Layout::contiguous, Layout::transposed},
      {{}, 132, 36, 260, Layout::transposed, Layout::transposed},
      {{3}, 96, 64, 128, Layout::contiguous, Layout::contiguous},
      {{2}, 130, 300, 68, Layout::contiguous, Layout::transposed},
  };
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
  for (const M& m : ms) {
    Shape sa = m.batch, sb = m.batch, so = m.batch;
    sa.insert(sa.end(), {m.m, m.k});
    sb.insert(sb.end(), {m.k, m.n});
    so.insert(so.end(), {m.m, m.n});
    Case c;
    c.name = case_name("matmul", dt, so, "k=" + std::to_string(m.k) + "," + layout_name(m.la) + "," +
                                                     layout_name(m.lb));
    c.op = OpId::matmul;
    c.dtype = dt;
    Rng rng = rng_for(c.name);
    c.bufs.push_back(output(rng, dt, so));
    c.bufs.push_back(input(rng, dt, sa, m.la, uniform(-1, 1)));
    c.bufs.push_back(input(rng, dt, sb, m.lb, uniform(-1, 1)));
    c.run = [](Backend& b, std::vector<TensorArg>& a) { b.matmul(a[0], a[1], a[2]); };
    c.max_nmse = nmse_for(dt, 1e-9);
    out.push_back(std::move(c));
  }
}

void add_conv(std::vector<Case>& out) {
  struct C {
    int64_t n, ci, h, w, co, kh, kw, s, p, d, g;
    bool bias;
  };
  const std::vector<C> cs = {
      {2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, true},   {1, 1, 5, 5, 1, 1, 1, 1, 0, 1, 1, false},
      {3, 4, 11, 8, 6, 3, 3, 2, 1, 1, 2, true},  {2, 8, 10, 10, 4, 5, 5, 1, 2, 2, 1, false},
      {2, 6, 9, 7, 6, 3, 2, 2, 0, 1, 3, true},   {16, 8, 28, 28, 16, 3, 3, 1, 1, 1, 1, true},
      {4, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1, true}, {0, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, true},
  };
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
  for (const C& k : cs) {
    Conv2dParams cp;
    cp.stride[0] = cp.stride[1] = k.s;
    cp.padding[0] = cp.padding[1] = k.p;
    cp.dilation[0] = cp.dilation[1] = k.d;
    cp.groups = k.g;
    const int64_t ho = pooled(k.h, k.kh, k.p, k.s, k.d, false), wo = pooled(k.w, k.kw, k.p, k.s, k.d, false);
    const Shape si{k.n, k.ci, k.h, k.w}, sw{k.co, k.ci / k.g, k.kh, k.kw}, so{k.n, k.co, ho, wo};
    const std::string extra = "w=" + shape_str(sw) + ",s=" + std::to_string(k.s) + ",p=" + std::to_string(k.p) +
                              ",d=" + std::to_string(k.d) + ",g=" + std::to_string(k.g) + (k.bias ? ",bias" : "");
    {
      Case c;
      c.name = case_name("conv2d_forward", dt, si, extra);
      c.op = OpId::conv2d_forward;
      c.dtype = dt;
      Rng rng = rng_for(c.name);
      c.bufs.push_back(output(rng, dt, so));
      c.bufs.push_back(input(rng, dt, si, Layout::contiguous, uniform(-1, 1)));
      c.bufs.push_back(input(rng, dt, sw, Layout::contiguous, uniform(-1, 1)));
      c.bufs.push_back(input(rng, dt, {k.co}, Layout::contiguous, uniform(-1, 1)));
      bool bias = k.bias;
      c.run = [cp, bias](Backend& b, std::vector<TensorArg>& a) {
        TensorArg none = a[3];
        none.data = nullptr;
        b.conv2d_forward(a[0], a[1], a[2], bias ? a[3] : none, cp);
      };
      c.max_nmse = nmse_for(dt, 1e-9);
      out.push_back(std::move(c));
    }
    {
      Case c;
      c.name = case_name("conv2d_backward_input", dt, si, extra);
      c.op = OpId::conv2d_backward_input;
      c.dtype = dt;
      Rng rng = rng_for(c.name);
      c.bufs.push_back(output(rng, dt, si));
      c.bufs.push_back(input(rng, dt, so, Layout::contiguous, uniform(-1, 1)));
      c.bufs.push_back(input(rng, dt, sw, Layout::contiguous, uniform(-1, 1)));
      c.run = [cp](Backend& b, std::vector<TensorArg>& a) { b.conv2d_backward_input(a[0], a[1], a[2], cp); };
      c.max_nmse = nmse_for(dt, 1e-9);
      out.push_back(std::move(c));
    }
    {
      Case c;
      c.name = case_name("conv2d_backward_weight", dt, si, extra);
      c.op = OpId::conv2d_backward_weight;
      c.dtype = dt;
      Rng rng = rng_for(c.name);
      c.bufs.push_back(output(rng, dt, sw));
      c.bufs.push_back(output(rng, dt, {k.co}));
      c.bufs.push_back(input(rng, dt, so, Layout::contiguous, uniform(-1, 1)));
      c.bufs.push_back(input(rng, dt, si, Layout::contiguous, uniform(-1, 1)));
      bool bias = k.bias;
      c.run = [cp, bias](Backend& b, std::vector<TensorArg>& a) {
        TensorArg none = a[1];
        none.data = nullptr;
        b.conv2d_backward_weight(a[0], bias ? a[1] : none, a[2], a[3], cp);
      };
      if (!k.bias) c.bufs[1].output = false;  // untouched: not compared
      c.max_nmse = nmse_for(dt, 1e-9);
      out.push_back(std::move(c));
    }
  }
}

// Fake quantization (QAT) per tensor and per channel, output and mask, against the CPU kernel
// (which tests/engine/test_fake_quant.cpp checks against PyTorch). No GPU backend has a kernel
// yet (the front end composes it there), so these run where one is added.
void add_fake_quantize(std::vector<Case>& out) {
  for (DType dt : {DType::f32, DType::f64})
    for (int64_t channels : {1, 3}) {
      const Shape s{8, 3, 5, 7};
      const int64_t inner = channels == 1 ? numel(s) : 35;
      Case c;
      c.name = case_name("fake_quantize", dt, s, channels == 1 ? "per_tensor" : "per_channel");
      c.op = OpId::fake_quantize;
      c.dtype = dt;
      Rng rng = rng_for(c.name);
      c.bufs.push_back(output(rng, dt, s));
      c.bufs.push_back(output(rng, DType::bool_, s));
      c.bufs.push_back(input(rng, dt, s, Layout::contiguous, uniform(-3, 3)));
      c.bufs.push_back(input(rng, DType::f32, {channels}, Layout::contiguous, choice({0.01, 0.02, 0.05})));
      c.bufs.push_back(input(rng, DType::i32, {channels}, Layout::contiguous, integers(0, 20)));
      c.run = [inner](Backend& b, std::vector<TensorArg>& a) { b.fake_quantize(a[0], a[1], a[2], a[3], a[4], inner, 0, 255); };
      out.push_back(std::move(c));
    }
}

void add_pool(std::vector<Case>& out) {
  struct P {
    Shape s;
    int64_t k, st, p, d;
    bool ceil, include_pad;
  };
  const std::vector<P> ps = {{{2, 3, 8, 8}, 2, 2, 0, 1, false, true},   {{1, 2, 9, 7}, 3, 2, 1, 1, false, true},
                             {{2, 2, 9, 7}, 3, 2, 1, 1, true, false},   {{1, 3, 10, 11}, 3, 1, 1, 2, false, true},
                             {{4, 5, 1, 1}, 1, 1, 0, 1, false, true},   {{0, 2, 4, 4}, 2, 2, 0, 1, false, true},
                             {{3, 4, 28, 28}, 2, 2, 0, 1, false, true}, {{1, 1, 6, 6}, 3, 3, 1, 1, true, true}};
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (const P& q : ps) {
      Pool2dParams pp;
      pp.kernel[0] = pp.kernel[1] = q.k;
      pp.stride[0] = pp.stride[1] = q.st;
      pp.padding[0] = pp.padding[1] = q.p;
      pp.dilation[0] = pp.dilation[1] = q.d;
      pp.ceil_mode = q.ceil;
      pp.count_include_pad = q.include_pad;
      const Shape so{q.s[0], q.s[1], pooled(q.s[2], q.k, q.p, q.st, q.d, q.ceil),
                     pooled(q.s[3], q.k, q.p, q.st, q.d, q.ceil)};
      const std::string extra = "k=" + std::to_string(q.k) + ",s=" + std::to_string(q.st) + ",p=" +
                                std::to_string(q.p) + ",d=" + std::to_string(q.d) + (q.ceil ? ",ceil" : "") +
                                (q.include_pad ? "" : ",exclude_pad");
      {
        Case c;
        c.name = case_name("max_pool2d_forward", dt, q.s, extra);
        c.op = OpId::max_pool2d_forward;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, so));
        c.bufs.push_back(output(rng, DType::i64, so));
        c.bufs.push_back(input(rng, dt, q.s, Layout::contiguous, uniform(-2, 2)));
        c.run = [pp](Backend& b, std::vector<TensorArg>& a) { b.max_pool2d_forward(a[0], a[1], a[2], pp); };
        out.push_back(std::move(c));
      }
      if (q.d == 1) {
        Case c;
        c.name = case_name("avg_pool2d_forward", dt, q.s, extra);
        c.op = OpId::avg_pool2d_forward;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, so));
        c.bufs.push_back(input(rng, dt, q.s, Layout::contiguous, uniform(-2, 2)));
        c.run = [pp](Backend& b, std::vector<TensorArg>& a) { b.avg_pool2d_forward(a[0], a[1], pp); };
        c.max_nmse = nmse_for(dt, 1e-10);
        out.push_back(std::move(c));

        Case g;
        g.name = case_name("avg_pool2d_backward", dt, q.s, extra);
        g.op = OpId::avg_pool2d_backward;
        g.dtype = dt;
        rng = rng_for(g.name);
        g.bufs.push_back(output(rng, dt, q.s));
        g.bufs.push_back(input(rng, dt, so, Layout::contiguous, uniform(-2, 2)));
        g.run = [pp](Backend& b, std::vector<TensorArg>& a) { b.avg_pool2d_backward(a[0], a[1], pp); };
        g.max_nmse = nmse_for(dt, 1e-10);
        out.push_back(std::move(g));
      }
      {
        // backward from valid indices: the argmax positions of a forward on the CPU backend
        // are not known here, so indices are drawn inside each window's plane; collisions test
        // the accumulation.
        Case c;
        c.name = case_name("max_pool2d_backward", dt, q.s, extra);
        c.op = OpId::max_pool2d_backward;
        c.dtype = dt;
        Rng rng = rng_for(c.name);
        c.bufs.push_back(output(rng, dt, q.s));
        c.bufs.push_back(input(rng, dt, so, Layout::contiguous, uniform(-2, 2)));
        c.bufs.push_back(input(rng, DType::i64, so, Layout::contiguous, integers(0, q.s[2] * q.s[3] - 1)));
        c.run = [](Backend& b, std::vector<TensorArg>& a) { b.max_pool2d_backward(a[0], a[1], a[2]); };
        c.max_nmse = nmse_for(dt, 1e-10);
        out.push_back(std::move(c));
      }
    }
}
}  // namespace

void add_nn_cases(std::vector<Case>& out) {
  add_matmul(out);
  add_conv(out);
  add_pool(out);
  add_fake_quantize(out);
}

}  // namespace kiln::backend_ops
