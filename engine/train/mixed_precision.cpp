#include "engine/train/mixed_precision.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"

namespace kiln::train {

namespace {
// KILN_CPU_BF16=0 pretends the CPU has none (tests of the f32 fallback; a comparison run).
bool bf16_disabled() {
  const char* env = std::getenv("KILN_CPU_BF16");
  return env && std::string(env) == "0";
}
}  // namespace

bool cpu_has_bf16_dot() {
  if (bf16_disabled()) return false;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" avx512_bf16") != std::string::npos || line.find(" amx_bf16") != std::string::npos;
  return false;
}

PrecisionPlan plan_precision(const std::string& precision, const Device& device) {
  KILN_CHECK(precision == "f32" || precision == "bf16" || precision == "f16", ValueError, "precision '", precision,
             "' is not one of f32, bf16, f16");
  PrecisionPlan plan;
  if (precision == "f32") return plan;
  if (device.type == DeviceType::cpu) {
    if (precision == "bf16" && cpu_has_bf16_dot()) {
      plan.autocast = DType::bf16;
    } else {
      plan.note = precision != "bf16"  ? "f16 is for GPUs: training on the CPU runs in f32"
                  : bf16_disabled() ? "KILN_CPU_BF16=0 turns bf16 off on this CPU: training runs in f32"
                                    : "this CPU has no bf16 dot products (avx512_bf16 or AMX): training runs in f32";
    }
    return plan;
  }
  plan.autocast = precision == "bf16" ? DType::bf16 : DType::f16;
  plan.loss_scaling = precision == "f16";
  return plan;
}

GradScaler::GradScaler(double init_scale, double growth_factor, double backoff_factor, int64_t growth_interval)
    : scale_(init_scale), growth_(growth_factor), backoff_(backoff_factor), interval_(growth_interval) {
  KILN_CHECK(init_scale > 0 && growth_factor > 1 && backoff_factor > 0 && backoff_factor < 1 && growth_interval > 0,
             ValueError, "GradScaler: need init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1 and ",
             "growth_interval > 0");
}

Tensor GradScaler::scale(const Tensor& loss) const { return mul(loss, scalar_like(scale_, loss)); }

bool GradScaler::unscale(optim::Optimizer& opt) {
  NoGradGuard no_grad;
  Tensor total;
  for (const Tensor& p : opt.params()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    g = mul(g, scalar_like(1.0 / scale_, g));
    Tensor p2 = p;
    p2.set_grad(g);
    // A sum is finite only when every element is (an overflowing sum counts as a bad step).
    Tensor s = sum(g.to(DType::f32));
    total = total.defined() ? add(total, s) : s;
  }
  return !total.defined() || std::isfinite(total.item<double>());
}

bool GradScaler::step(optim::Optimizer& opt) {
  ++steps_;
  const bool ok = unscale(opt);
  if (ok) {
    opt.step();
    if (++good_ >= interval_) scale_ *= growth_, good_ = 0;
  } else {
    ++skipped_;
    scale_ *= backoff_;
    good_ = 0;
  }
  return ok;
}

}  // namespace kiln::train
