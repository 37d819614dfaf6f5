#include "tests/backend-ops/harness.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/registry.h"

namespace kiln::backend_ops {

namespace {
constexpr int64_t kPad = 16;          // sentinel elements on each side of an output
constexpr uint8_t kSentinel = 0xA5;   // byte pattern of sentinels
}  // namespace

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::contiguous: return "contiguous";
    case Layout::transposed: return "transposed";
    case Layout::stepped: return "stepped";
    case Layout::expanded: return "expanded";
  }
  return "?";
}

double Buf::get(int64_t i) const {
  const uint8_t* p = storage.data() + i * static_cast<int64_t>(dtype_size(dtype));
  double v = 0;
  KILN_DISPATCH_ALL(dtype, {
    T x;
    std::memcpy(&x, p, sizeof(T));
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) v = static_cast<float>(x);
    else v = static_cast<double>(x);
  });
  return v;
}

void Buf::set(int64_t i, double v) {
  uint8_t* p = storage.data() + i * static_cast<int64_t>(dtype_size(dtype));
  KILN_DISPATCH_ALL(dtype, {
    T x;
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) x = T(static_cast<float>(v));
    else if constexpr (std::is_same_v<T, bool>) x = v != 0;
    else x = static_cast<T>(v);
    std::memcpy(p, &x, sizeof(T));
  });
}

int64_t Buf::position(int64_t i) const {
  int64_t pos = offset;
  for (size_t d = shape.size(); d-- > 0;) {
    pos += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return pos;
}

Fill uniform(double lo, double hi) {
  return [=](Rng& r) { return std::uniform_real_distribution<double>(lo, hi)(r); };
}
Fill integers(int64_t lo, int64_t hi) {
  return [=](Rng& r) { return static_cast<double>(std::uniform_int_distribution<int64_t>(lo, hi)(r)); };
}
Fill choice(std::vector<double> values) {
  return [values](Rng& r) { return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(r)]; };
}

Buf input(Rng& rng, DType dt, const Shape& shape, Layout layout, const Fill& fill) {
  Buf b;
  b.dtype = dt;
  b.shape = shape;
  const size_t r = shape.size();
  if (layout == Layout::transposed && r < 2) layout = Layout::contiguous;
  if (layout == Layout::expanded && (r < 1 || shape[0] < 2)) layout = Layout::contiguous;
  if (layout == Layout::stepped && r < 1) layout = Layout::contiguous;
  Shape mem = shape;
  if (layout == Layout::transposed) std::swap(mem[r - 1], mem[r - 2]);
  if (layout == Layout::stepped) mem[r - 1] *= 2;
  if (layout == Layout::expanded) mem[0] = 1;
  Strides ms = contiguous_strides(mem);
  b.strides = ms;
  if (layout == Layout::transposed) std::swap(b.strides[r - 1], b.strides[r - 2]);
  if (layout == Layout::stepped) b.strides[r - 1] *= 2;
  if (layout == Layout::expanded) b.strides[0] = 0;
  b.offset = layout == Layout::stepped ? 3 : 0;
  const int64_t total = numel(mem) + b.offset;
  b.storage.assign(static_cast<size_t>(std::max<int64_t>(total, 1)) * dtype_size(dt), 0);
  for (int64_t i = 0; i < total; ++i) b.set(i, fill(rng));  // the gaps hold values too
  return b;
}

Buf output(Rng& rng, DType dt, const Shape& shape, const Fill* init) {
  Buf b;
  b.dtype = dt;
  b.shape = shape;
  b.strides = contiguous_strides(shape);
  b.offset = kPad;
  b.output = true;
  b.storage.assign(static_cast<size_t>(numel(shape) + 2 * kPad) * dtype_size(dt), kSentinel);
  if (init)
    for (int64_t i = 0; i < numel(shape); ++i) b.set(kPad + i, (*init)(rng));
  return b;
}

std::vector<std::vector<uint8_t>> execute(Backend& b, const Case& c) {
  struct Held {
    Backend* b;
    void* p;
    size_t n;
    ~Held() { b->deallocate(p, n); }
  };
  std::vector<std::unique_ptr<Held>> held;
  std::vector<TensorArg> args;
  for (const Buf& buf : c.bufs) {
    size_t n = buf.storage.size();
    void* p = b.allocate(n);
    held.push_back(std::unique_ptr<Held>(new Held{&b, p, n}));
    b.upload(p, 0, buf.storage.data(), n);
    args.push_back(TensorArg{p, buf.offset, buf.dtype, buf.shape, buf.strides});
  }
  c.run(b, args);
  b.synchronize();
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < c.bufs.size(); ++i)
    if (c.bufs[i].output) {
      std::vector<uint8_t> bytes(c.bufs[i].storage.size());
      b.download(bytes.data(), held[i]->p, 0, bytes.size());
      out.push_back(std::move(bytes));
    }
  return out;
}

std::string compare(const Case& c, const std::vector<std::vector<uint8_t>>& ref,
                    const std::vector<std::vector<uint8_t>>& got) {
  std::ostringstream err;
  size_t k = 0;
  for (const Buf& buf : c.bufs) {
    if (!buf.output) continue;
    Buf r = buf, g = buf;
    r.storage = ref[k];
    g.storage = got[k];
    const size_t es = dtype_size(buf.dtype);
    // sentinels: bytes outside the view must be as uploaded
    const size_t lo = static_cast<size_t>(buf.offset) * es, hi = lo + static_cast<size_t>(buf.numel()) * es;
    for (size_t i = 0; i < buf.storage.size(); ++i)
      if ((i < lo || i >= hi) && g.storage[i] != buf.storage[i]) {
        err << "output " << k << ": sentinel byte " << i << " overwritten; ";
        break;
      }
    const bool exact = !is_floating(buf.dtype);
    double num = 0, den = 0;
    int shown = 0;
    for (int64_t i = 0; i < buf.numel(); ++i) {
      const int64_t pos = buf.position(i);
      const double a = r.get(pos), b = g.get(pos);
      const bool special = std::isnan(a) || std::isinf(a) || std::isnan(b) || std::isinf(b);
      bool bad = false;
      if (special) bad = !(std::isnan(a) && std::isnan(b)) && a != b;
      else if (exact) bad = a != b;
      else {
        num += (a - b) * (a - b);
        den += a * a;
      }
      if (bad && shown++ < 5) err << "output " << k << "[" << i << "]: cpu " << a << ", device " << b << "; ";
    }
    const double nmse = den > 0 ? num / den : num;
    if (nmse > c.max_nmse)
      err << "output " << k << ": NMSE " << nmse << " above " << c.max_nmse << "; ";
    ++k;
  }
  return err.str();
}

double nmse_for(DType dt, double f32_threshold) {
  if (dt == DType::f16) return std::max(f32_threshold, 1e-5);
  if (dt == DType::bf16) return std::max(f32_threshold, 1e-4);
  return f32_threshold;
}

std::string case_name(const std::string& op, DType dt, const Shape& shape, const std::string& extra) {
  std::string s = op + "/" + dtype_name(dt) + "/" + shape_str(shape);
  if (!extra.empty()) s += "/" + extra;
  return s;
}

std::vector<Case> all_cases() {
  std::vector<Case> v;
  add_elementwise_cases(v);
  add_reduce_cases(v);
  add_nn_cases(v);
  add_index_cases(v);
  return v;
}

std::vector<Device> selected_devices(const std::string& spec, std::string& why) {
  std::vector<Device> out;
  for (const DeviceInfo& d : list_devices()) {
    if (d.device.type == DeviceType::cpu) continue;
    if (spec.empty() || spec == "all" || spec == device_type_name(d.device.type) || spec == d.device.str())
      out.push_back(d.device);
  }
  for (const std::string& r : unavailable_backends()) why += (why.empty() ? "" : "; ") + r;
  return out;
}

}  // namespace kiln::backend_ops
