// Per-node CPU fallback of kiln::onnx::Session (SessionOptions::cpu_fallback) on the Vulkan device
// (lavapipe here): a node whose dtype the device lacks runs on the CPU, is counted once, and its
// outputs go back to the device; with the fallback off the device's error names the node.
// The device tests are skipped when no Vulkan device is found.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/onnx/executor.h"
#include "model_builder.h"
#include "tests/common/test_deps.h"

using namespace kiln;
using namespace kiln::onnx::test;

namespace {

const Device kVulkan{DeviceType::vulkan, 0};

// Skips the calling test (returns false) when there is no vulkan:0.
bool have_vulkan() {
  for (const DeviceInfo& d : list_devices())
    if (d.device == kVulkan) return true;
  return false;
}
std::string why_no_vulkan() {
  std::string why = "no Vulkan device";
  for (const std::string& u : unavailable_backends()) why += "; " + u;
  return why;
}
// Without the Vulkan plugin (KILN_VULKAN=OFF) a skip; with it, no vulkan:0 is a missing
// dependency (lavapipe, tests/common/test_deps.h).
#define REQUIRE_VULKAN()                                                                          \
  if (!KILN_TEST_WITH_VULKAN) GTEST_SKIP() << "the Vulkan plugin is not built (KILN_VULKAN=OFF)"; \
  KILN_SKIP_UNLESS_DEP(have_vulkan(), "mesa-vulkan-drivers", why_no_vulkan())

// y = Op(a, b) (b omitted for a unary op) of `type` inputs of shape [n]; then z = y + a
// when `then_add`, so one node stays on the device.
kiln::onnx::Model model_of(const std::string& op, int32_t type, int64_t n, bool binary, bool then_add) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("a", type, {n});
  if (binary) *g.add_input() = value_info("b", type, {n});
  add_node(g, op, binary ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"}, {"y"}, "op");
  if (then_add) add_node(g, "Add", {"y", "a"}, {"z"}, "add");
  g.add_output()->set_name(then_add ? "z" : "y");
  return kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), "");
}

kiln::onnx::SessionOptions no_fallback() {
  kiln::onnx::SessionOptions o;
  o.cpu_fallback = false;
  return o;
}

}  // namespace

TEST(OnnxFallback, CpuSessionCountsNothing) {
  kiln::onnx::Session s(model_of("Neg", ::onnx::TensorProto::INT64, 3, false, true));
  auto out = s.run({{"a", Tensor::from_vector<int64_t>({1, -2, 3}, {3})}});
  EXPECT_EQ(out[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_TRUE(s.fallback_stats().empty());
  EXPECT_EQ(s.fallback_stats().str(), "0 nodes ()");
}

TEST(OnnxFallback, BackendDTypeErrorRunsTheNodeOnTheCpu) {
  REQUIRE_VULKAN();
  // Vulkan's unary kernels are floating only: neg of i64 throws DTypeError on the device.
  kiln::onnx::Session s(model_of("Neg", ::onnx::TensorProto::INT64, 3, false, true), kVulkan);
  Tensor a = Tensor::from_vector<int64_t>({5, -2, 7}, {3});
  for (int run = 0; run < 2; ++run) {  // counted once however often it runs
    auto out = s.run({{"a", a}});
    EXPECT_EQ(out[0].device(), kVulkan);
    EXPECT_EQ(out[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  }
  kiln::onnx::FallbackStats st = s.fallback_stats();
  EXPECT_EQ(st.nodes, 1);  // Neg; the Add of i64 stays on the device
  EXPECT_EQ(st.op_types, (std::map<std::string, int64_t>{{"Neg", 1}}));
  ASSERT_EQ(st.reasons.count("Neg"), 1u);
  EXPECT_NE(st.reasons["Neg"].find("i64 is not supported on vulkan:0"), std::string::npos) << st.reasons["Neg"];
  EXPECT_EQ(st.str(), "1 node (1 Neg)");

  kiln::onnx::Session pure(model_of("Neg", ::onnx::TensorProto::INT64, 3, false, true), kVulkan, no_fallback());
  try {
    pure.run({{"a", a}});
    FAIL() << "neg of i64 ran on vulkan:0 without the fallback";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'op' (Neg): neg: i64 is not supported on vulkan:0"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(pure.fallback_stats().empty());
}

TEST(OnnxFallback, DTypeTheDeviceHoldsButCannotComputeRunsOnTheCpu) {
  REQUIRE_VULKAN();
  // Vulkan holds f64 (copies) but computes nothing on it: both nodes run on the CPU, and the
  // f64 outputs come back to the device.
  kiln::onnx::Session s(model_of("Max", ::onnx::TensorProto::DOUBLE, 4, true, true), kVulkan);
  Tensor a = Tensor::from_vector<double>({1.5, -2, 3, 1e300}, {4});
  Tensor b = Tensor::from_vector<double>({0.5, 4, -3, 2}, {4});
  auto out = s.run({{"a", a}, {"b", b}});
  EXPECT_EQ(out[0].device(), kVulkan);
  EXPECT_EQ(out[0].dtype(), DType::f64);
  EXPECT_EQ(out[0].to_vector<double>(), (std::vector<double>{3, 2, 6, 2e300}));  // f64 exact, not via f32
  kiln::onnx::FallbackStats st = s.fallback_stats();
  EXPECT_EQ(st.nodes, 2);
  EXPECT_EQ(st.str(), "2 nodes (1 Add, 1 Max)");
  EXPECT_NE(st.reasons["Max"].find("maximum: f64 is not supported on vulkan:0"), std::string::npos)
      << st.reasons["Max"];

  kiln::onnx::Session pure(model_of("Max", ::onnx::TensorProto::DOUBLE, 4, true, false), kVulkan, no_fallback());
  EXPECT_THROW(pure.run({{"a", a}, {"b", b}}), DTypeError);
}

TEST(OnnxFallback, NodeFailingOnTheCpuTooReportsTheCpuError) {
  REQUIRE_VULKAN();
  // Mod with fmod=0 on floats is invalid ONNX: the CPU's error names the node; nothing counted.
  ::onnx::GraphProto g;
  *g.add_input() = value_info("a", ::onnx::TensorProto::DOUBLE, {2});
  *g.add_input() = value_info("b", ::onnx::TensorProto::DOUBLE, {2});
  add_node(g, "Mod", {"a", "b"}, {"y"}, "mod");
  g.add_output()->set_name("y");
  kiln::onnx::Session s(kiln::onnx::parse_model(model_with(g, 17).SerializeAsString(), ""), kVulkan);
  Tensor a = Tensor::from_vector<double>({1, 2}, {2});
  try {
    s.run({{"a", a}, {"b", a}});
    FAIL() << "Mod fmod=0 of doubles ran";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("node 'mod' (Mod): ", 0), 0u) << e.what();
    EXPECT_EQ(std::string(e.what()).find("vulkan"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(s.fallback_stats().empty());
}
