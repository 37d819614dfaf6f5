// i16, u16, u32, u64: names, promotion (PyTorch's table, NumPy's where PyTorch raises),
// CPU kernels (casts, wrapping arithmetic, comparisons, where, reductions, index ops),
// safetensors round trips. Expected values worked out by hand (C++ / NumPy semantics).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <unistd.h>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/core/backend.h"
#include "engine/core/ops.h"
#include "engine/core/registry.h"
#include "engine/core/tensor.h"
#include "engine/io/safetensors.h"
#include "tests/common/test_deps.h"

using namespace kiln;

namespace {
template <class T>
Tensor vec(std::vector<T> v) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}
}  // namespace

TEST(DTypeExtInts, NamesSizesAndCategories) {
  EXPECT_EQ(kNumDTypes, 13);
  EXPECT_EQ(static_cast<int>(DType::bool_), 8);  // existing values keep their numbers
  EXPECT_EQ(dtype_from_name("int16"), DType::i16);
  EXPECT_EQ(dtype_from_name("short"), DType::i16);
  EXPECT_EQ(dtype_from_name("uint16"), DType::u16);
  EXPECT_EQ(dtype_from_name("uint32"), DType::u32);
  EXPECT_EQ(dtype_from_name("uint64"), DType::u64);
  EXPECT_STREQ(dtype_name(DType::u64), "u64");
  EXPECT_EQ(dtype_size(DType::i16), 2u);
  EXPECT_EQ(dtype_size(DType::u16), 2u);
  EXPECT_EQ(dtype_size(DType::u32), 4u);
  EXPECT_EQ(dtype_size(DType::u64), 8u);
  for (DType t : {DType::i16, DType::u16, DType::u32, DType::u64}) {
    EXPECT_TRUE(is_integral(t)) << dtype_name(t);
    EXPECT_FALSE(is_floating(t)) << dtype_name(t);
  }
  EXPECT_TRUE(is_signed(DType::i16));
  EXPECT_FALSE(is_signed(DType::u16));
  EXPECT_FALSE(is_signed(DType::u64));
  EXPECT_THROW(dtype_from_name("uint128"), DTypeError);
}

TEST(DTypeExtInts, PromotionTable) {
  // PyTorch's table (c10 promoteTypes)
  EXPECT_EQ(promote_types(DType::u8, DType::i8), DType::i16);
  EXPECT_EQ(promote_types(DType::u8, DType::i16), DType::i16);
  EXPECT_EQ(promote_types(DType::i8, DType::i16), DType::i16);
  EXPECT_EQ(promote_types(DType::i16, DType::i32), DType::i32);
  EXPECT_EQ(promote_types(DType::u8, DType::i64), DType::i64);
  EXPECT_EQ(promote_types(DType::u16, DType::f16), DType::f16);  // a floating type wins
  EXPECT_EQ(promote_types(DType::bf16, DType::u64), DType::bf16);
  // where PyTorch raises: NumPy's result
  EXPECT_EQ(promote_types(DType::bool_, DType::u32), DType::u32);
  EXPECT_EQ(promote_types(DType::u16, DType::u32), DType::u32);
  EXPECT_EQ(promote_types(DType::u8, DType::u64), DType::u64);
  EXPECT_EQ(promote_types(DType::u16, DType::i8), DType::i32);
  EXPECT_EQ(promote_types(DType::i16, DType::u16), DType::i32);
  EXPECT_EQ(promote_types(DType::u32, DType::i32), DType::i64);
  EXPECT_EQ(promote_types(DType::u16, DType::i64), DType::i64);
  EXPECT_EQ(promote_types(DType::u64, DType::i8), DType::f64);
  EXPECT_EQ(promote_types(DType::i64, DType::u64), DType::f64);
  // symmetric
  for (int a = 0; a < kNumDTypes; ++a)
    for (int b = 0; b < kNumDTypes; ++b)
      EXPECT_EQ(promote_types(DType(a), DType(b)), promote_types(DType(b), DType(a)))
          << dtype_name(DType(a)) << " " << dtype_name(DType(b));
}

TEST(DTypeExtInts, CastsWrapAndTruncate) {
  Tensor f = vec<float>({-1.0f, 2.7f, 65536.0f, 3e9f});
  EXPECT_EQ(f.to(DType::u16).to_vector<uint16_t>(), (std::vector<uint16_t>{65535, 2, 0, 24064}));
  EXPECT_EQ(f.to(DType::u32).to_vector<uint32_t>(), (std::vector<uint32_t>{4294967295u, 2, 65536, 3000000000u}));
  EXPECT_EQ(f.to(DType::u64).to_vector<uint64_t>(),
            (std::vector<uint64_t>{18446744073709551615ull, 2, 65536, 3000000000ull}));
  EXPECT_EQ(vec<int64_t>({-2, 40000}).to(DType::i16).to_vector<int16_t>(), (std::vector<int16_t>{-2, -25536}));
  Tensor big = vec<uint64_t>({18446744073709551615ull, 9007199254740993ull});
  EXPECT_EQ(big.to(DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{-1, 9007199254740993}));
  EXPECT_EQ(big.to(DType::u64).to_vector<uint64_t>(), big.to_vector<uint64_t>());
  EXPECT_EQ(vec<uint32_t>({4000000000u}).to(DType::f64).item<double>(), 4000000000.0);
  EXPECT_EQ(vec<uint16_t>({0, 7}).to(DType::bool_).to_vector<bool>(), (std::vector<bool>{false, true}));
}

TEST(DTypeExtInts, ArithmeticWrapsLikeCpp) {
  Tensor a = vec<uint16_t>({65535, 3, 0});
  Tensor b = vec<uint16_t>({1, 5, 1});
  EXPECT_EQ(add(a, b).to_vector<uint16_t>(), (std::vector<uint16_t>{0, 8, 1}));
  EXPECT_EQ(sub(a, b).to_vector<uint16_t>(), (std::vector<uint16_t>{65534, 65534, 65535}));
  EXPECT_EQ(mul(a, b).to_vector<uint16_t>(), (std::vector<uint16_t>{65535, 15, 0}));
  Tensor c = vec<uint64_t>({18446744073709551615ull, 10});
  Tensor d = vec<uint64_t>({3, 4});
  EXPECT_EQ(mul(c, d).to_vector<uint64_t>(), (std::vector<uint64_t>{18446744073709551613ull, 40}));
  EXPECT_EQ(pow(vec<uint32_t>({3, 2}), vec<uint32_t>({4, 31})).to_vector<uint32_t>(),
            (std::vector<uint32_t>{81, 2147483648u}));
  Tensor q = div(vec<int16_t>({7, -7}), vec<int16_t>({2, 2}));  // true division
  EXPECT_EQ(q.dtype(), DType::f32);
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{3.5f, -3.5f}));
  Tensor mixed = add(vec<uint8_t>({200}), vec<int8_t>({-100}));
  EXPECT_EQ(mixed.dtype(), DType::i16);
  EXPECT_EQ(mixed.to_vector<int16_t>(), (std::vector<int16_t>{100}));
  Tensor m2 = add(vec<uint32_t>({4000000000u}), vec<int32_t>({-1}));
  EXPECT_EQ(m2.dtype(), DType::i64);
  EXPECT_EQ(m2.item<int64_t>(), 3999999999);
}

TEST(DTypeExtInts, CompareMinMaxWhere) {
  Tensor a = vec<uint64_t>({18446744073709551615ull, 1, 5});
  Tensor b = vec<uint64_t>({2, 1, 9});
  EXPECT_EQ(maximum(a, b).to_vector<uint64_t>(), (std::vector<uint64_t>{18446744073709551615ull, 1, 9}));
  EXPECT_EQ(minimum(a, b).to_vector<uint64_t>(), (std::vector<uint64_t>{2, 1, 5}));
  EXPECT_EQ(gt(a, b).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(eq(a, b).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  Tensor s = vec<int16_t>({-3, 4});
  EXPECT_EQ(minimum(s, vec<int16_t>({2, 2})).to_vector<int16_t>(), (std::vector<int16_t>{-3, 2}));
  EXPECT_EQ(abs(s).to_vector<int16_t>(), (std::vector<int16_t>{3, 4}));
  Tensor w = where(vec<uint8_t>({1, 0}).to(DType::bool_), vec<uint32_t>({1, 2}), vec<uint32_t>({3, 4}));
  EXPECT_EQ(w.to_vector<uint32_t>(), (std::vector<uint32_t>{1, 4}));
}

TEST(DTypeExtInts, ReductionsAndIndexOps) {
  Tensor x = Tensor::from_vector(std::vector<uint32_t>{4000000000u, 1, 7, 300000000u}, {2, 2});
  Tensor s = sum(x);
  EXPECT_EQ(s.dtype(), DType::i64);  // torch.sum of integers gives int64
  EXPECT_EQ(s.item<int64_t>(), 4300000008);
  EXPECT_EQ(amax(x, {1}).to_vector<uint32_t>(), (std::vector<uint32_t>{4000000000u, 300000000u}));
  EXPECT_EQ(amin(x, {0}).to_vector<uint32_t>(), (std::vector<uint32_t>{7, 1}));
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  Tensor idx = vec<int64_t>({1, 0, 1});
  EXPECT_EQ(index_select(vec<uint16_t>({10, 65535}), 0, idx).to_vector<uint16_t>(),
            (std::vector<uint16_t>{65535, 10, 65535}));
  Tensor g = gather(Tensor::from_vector(std::vector<int16_t>{1, -2, 3, -4}, {2, 2}), 1,
                    Tensor::from_vector(std::vector<int64_t>{1, 1, 0, 0}, {2, 2}));
  EXPECT_EQ(g.to_vector<int16_t>(), (std::vector<int16_t>{-2, -2, 3, 3}));
}

TEST(DTypeExtInts, SafetensorsRoundTrip) {
  auto dir = std::filesystem::temp_directory_path() / ("kiln-dtype-ext-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "t.safetensors").string();
  io::NamedTensors in = {
      {"a", vec<int16_t>({-32768, 32767})},
      {"b", vec<uint16_t>({65535, 1})},
      {"c", vec<uint32_t>({4294967295u})},
      {"d", vec<uint64_t>({18446744073709551615ull, 0})}};
  io::save_safetensors(path, in);
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : io::load_safetensors(path).tensors) out[name] = t;
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out.at("a").dtype(), DType::i16);
  EXPECT_EQ(out.at("a").to_vector<int16_t>(), in[0].second.to_vector<int16_t>());
  EXPECT_EQ(out.at("b").dtype(), DType::u16);
  EXPECT_EQ(out.at("b").to_vector<uint16_t>(), in[1].second.to_vector<uint16_t>());
  EXPECT_EQ(out.at("c").dtype(), DType::u32);
  EXPECT_EQ(out.at("c").to_vector<uint32_t>(), in[2].second.to_vector<uint32_t>());
  EXPECT_EQ(out.at("d").dtype(), DType::u64);
  EXPECT_EQ(out.at("d").to_vector<uint64_t>(), in[3].second.to_vector<uint64_t>());
  std::filesystem::remove_all(dir);
}

// The CPU runs the elementwise, reduction and index ops on the new types; the GPU backends
// have no kernels for them and must say so in supports() (callers then fall back or get a
// DTypeError naming the dtype and device, never a wrong kernel).
TEST(DTypeExtInts, SupportsIsHonestOnEveryBackend) {
  Backend* cpu = backend_for(Device());
  for (DType t : {DType::i16, DType::u16, DType::u32, DType::u64}) {
    for (OpId op : {OpId::copy, OpId::fill, OpId::unary, OpId::binary, OpId::where, OpId::reduce, OpId::gather,
                    OpId::scatter_add, OpId::index_select, OpId::index_add})
      EXPECT_TRUE(cpu->supports(op, t)) << op_id_name(op) << " " << dtype_name(t);
    EXPECT_FALSE(cpu->supports(OpId::matmul, t)) << dtype_name(t);
  }
  int gpus = 0;
  for (const DeviceInfo& d : list_devices()) {
    if (d.device.type == DeviceType::cpu) continue;
    ++gpus;
    Backend* b = backend_for(d.device);
    for (DType t : {DType::i16, DType::u16, DType::u32, DType::u64})
      for (int op = 0; op < static_cast<int>(OpId::count); ++op)
        EXPECT_FALSE(b->supports(static_cast<OpId>(op), t))
            << d.device.str() << " " << op_id_name(static_cast<OpId>(op)) << " " << dtype_name(t);
    Tensor x = vec<uint32_t>({1, 2}).to(d.device);  // the bytes move; arithmetic is refused by name
    std::string msg;
    try {
      add(x, x);
    } catch (const DTypeError& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("u32"), std::string::npos) << d.device.str() << ": " << msg;
    EXPECT_EQ(x.to(Device()).to_vector<uint32_t>(), (std::vector<uint32_t>{1, 2})) << d.device.str();
  }
  if (gpus == 0 && !KILN_TEST_WITH_VULKAN) GTEST_SKIP() << "no GPU backend here; the CPU half ran";
  KILN_SKIP_UNLESS_DEP(gpus > 0, "mesa-vulkan-drivers", "no GPU device, not even vulkan:0 (the Vulkan plugin is built); the CPU half ran");
}
