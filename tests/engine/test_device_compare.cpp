// engine/graph/device_compare.h: rows per (device, precision), differences against the CPU f32
// reference, error rows, cancel.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/graph/device_compare.h"
#include "engine/train/mixed_precision.h"
#include "tests/common/test_deps.h"

namespace kiln::graph {
namespace {

using I = std::vector<int64_t>;

// Input [3, 8, 8] -> Conv2d(3 -> 4, 3x3, pad 1) -> BatchNorm2d -> ReLU -> Flatten -> Linear(256 -> 5) -> Output
Graph small_cnn(NodeId* fc_id = nullptr) {
  Graph g;
  NodeId x = g.add_node("Input", "x", {{"shape", I{3, 8, 8}}});
  NodeId conv = g.add_node("Conv2d", "conv", {{"in_channels", int64_t{3}}, {"out_channels", int64_t{4}},
                                              {"kernel_size", I{3, 3}}, {"padding", I{1, 1}}});
  NodeId bn = g.add_node("BatchNorm2d", "bn", {{"num_features", int64_t{4}}});
  NodeId relu = g.add_node("ReLU", "relu");
  NodeId flat = g.add_node("Flatten", "flat");
  NodeId fc = g.add_node("Linear", "fc", {{"in_features", int64_t{256}}, {"out_features", int64_t{5}}});
  NodeId y = g.add_node("Output", "y");
  if (fc_id) *fc_id = fc;
  g.connect({x, 0}, {conv, 0});
  g.connect({conv, 0}, {bn, 0});
  g.connect({bn, 0}, {relu, 0});
  g.connect({relu, 0}, {flat, 0});
  g.connect({flat, 0}, {fc, 0});
  g.connect({fc, 0}, {y, 0});
  return g;
}

CompareOptions quick() {
  CompareOptions o;
  o.batch = 4;
  o.steps = 2;
  o.warmup = 1;
  return o;
}

bool have_vulkan() {
  for (const DeviceInfo& d : list_devices())
    if (d.device.type == DeviceType::vulkan) return true;
  return false;
}

TEST(DeviceCompare, CpuRowsAndAnErrorRow) {
  const std::vector<CompareRow> rows =
      compare_devices(small_cnn(), {{"cpu", "f32"}, {"nosuch:0", "f32"}, {"cpu", "f64"}, {"cpu", "f32"}}, quick());
  ASSERT_EQ(rows.size(), 4u);
  const CompareRow& cpu = rows[0];
  EXPECT_EQ(cpu.error, "");
  EXPECT_EQ(cpu.device, "cpu");
  EXPECT_FALSE(cpu.name.empty());
  EXPECT_EQ(cpu.kind, "cpu");
  EXPECT_EQ(cpu.infer_steps, 2);
  EXPECT_EQ(cpu.train_steps, 2);
  EXPECT_GT(cpu.infer_ms, 0);
  EXPECT_GT(cpu.train_ms, 0);
  EXPECT_NEAR(cpu.train_samples_per_second, 4 * 1000.0 / cpu.train_ms, 1e-9 * cpu.train_samples_per_second);
  EXPECT_NEAR(cpu.infer_samples_per_second, 4 * 1000.0 / cpu.infer_ms, 1e-9 * cpu.infer_samples_per_second);
  ASSERT_TRUE(cpu.peak_bytes.has_value());  // the CPU backend tracks its memory
  EXPECT_GT(*cpu.peak_bytes, 0u);
  // The reference's own device and precision: the same parameters and batch give the same numbers.
  EXPECT_EQ(cpu.max_output_diff, 0.0);
  EXPECT_EQ(cpu.max_grad_diff, 0.0);
  EXPECT_DOUBLE_EQ(*cpu.train_speedup_vs_cpu, 1.0);
  EXPECT_DOUBLE_EQ(*cpu.infer_speedup_vs_cpu, 1.0);
  EXPECT_FALSE(cpu.cancelled);
  // An unknown device and an unknown precision fail alone; the row after them still runs.
  EXPECT_NE(rows[1].error.find("nosuch"), std::string::npos) << rows[1].error;
  EXPECT_FALSE(rows[1].max_output_diff.has_value());
  EXPECT_FALSE(rows[1].train_speedup_vs_cpu.has_value());
  EXPECT_EQ(rows[1].train_ms, 0);
  EXPECT_NE(rows[2].error.find("f64"), std::string::npos) << rows[2].error;
  EXPECT_EQ(rows[3].error, "");
  EXPECT_EQ(rows[3].train_steps, 2);
  EXPECT_EQ(rows[3].max_output_diff, 0.0);
  ASSERT_TRUE(rows[3].train_speedup_vs_cpu.has_value());  // against rows[0]
  EXPECT_DOUBLE_EQ(*rows[3].train_speedup_vs_cpu, cpu.train_ms / rows[3].train_ms);
}

TEST(DeviceCompare, NoCpuRowNoSpeedup) {
  const std::vector<CompareRow> rows = compare_devices(small_cnn(), {{"nosuch:0", "f32"}}, quick());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].error.empty());
  EXPECT_FALSE(rows[0].train_speedup_vs_cpu.has_value());
}

// Low precision runs matmul and conv in bf16: the differences are measured, above 0 and within
// bf16's precision (8 significant bits: ~0.4% of values of order 1).
TEST(DeviceCompare, LowPrecisionDiffersWithinTolerance) {
  std::vector<CompareTarget> targets;
  if (train::cpu_has_bf16_dot()) targets.push_back({"cpu", "bf16"});
  if (KILN_TEST_WITH_VULKAN && have_vulkan()) {  // one low precision: lavapipe is slow
    const std::vector<std::string> p = compare_precisions(Device(DeviceType::vulkan, 0));
    if (p.size() > 1) targets.push_back({"vulkan:0", p[1]});
  }
  if (targets.empty()) GTEST_SKIP() << "neither a CPU with bf16 dot products nor a Vulkan device with f16/bf16 matmul";
  const std::vector<CompareRow> rows = compare_devices(small_cnn(), targets, quick());
  for (const CompareRow& r : rows) {
    SCOPED_TRACE(r.device + " " + r.precision);
    ASSERT_EQ(r.error, "");
    ASSERT_TRUE(r.max_output_diff && r.max_grad_diff);
    EXPECT_GT(*r.max_output_diff, 0);
    EXPECT_LT(*r.max_output_diff, 0.1);
    EXPECT_GT(*r.max_grad_diff, 0);
    EXPECT_LT(*r.max_grad_diff, 0.1);
  }
}

TEST(DeviceCompare, PrecisionsOfTheCpu) {
  const std::vector<std::string> p = compare_precisions(Device());
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0], "f32");
  EXPECT_EQ(std::count(p.begin(), p.end(), "bf16"), train::cpu_has_bf16_dot() ? 1 : 0);
  EXPECT_EQ(std::count(p.begin(), p.end(), "f16"), 0);  // f16 is for GPUs (mixed_precision.h)
  EXPECT_THROW(compare_precisions(Device(DeviceType::cuda, 7)), DeviceError);
}

TEST(DeviceCompare, VulkanAgreesWithTheCpu) {
  if (!KILN_TEST_WITH_VULKAN) GTEST_SKIP() << "the Vulkan plugin is not built (KILN_VULKAN=OFF)";
  KILN_SKIP_UNLESS_DEP(have_vulkan(), "mesa-vulkan-drivers", "no Vulkan device though the Vulkan plugin is built");
  const std::vector<CompareRow> rows = compare_devices(small_cnn(), {{"cpu", "f32"}, {"vulkan:0", "f32"}}, quick());
  ASSERT_EQ(rows.size(), 2u);
  const CompareRow& vk = rows[1];
  ASSERT_EQ(vk.error, "");
  EXPECT_EQ(vk.train_steps, 2);
  EXPECT_GT(vk.train_ms, 0);
  ASSERT_TRUE(vk.max_output_diff && vk.max_grad_diff);
  EXPECT_LT(*vk.max_output_diff, 1e-4);
  EXPECT_LT(*vk.max_grad_diff, 1e-4);
  ASSERT_TRUE(vk.train_speedup_vs_cpu.has_value());
  EXPECT_DOUBLE_EQ(*vk.train_speedup_vs_cpu, rows[0].train_ms / vk.train_ms);
}

TEST(DeviceCompare, CancelStopsBetweenIterations) {
  // Cancelled after the reference and a few iterations of the first row: that row keeps what it
  // timed, the next is returned unrun.
  std::atomic<int> asked{0};
  std::vector<std::string> finished;
  const std::vector<CompareRow> rows =
      compare_devices(small_cnn(), {{"cpu", "f32"}, {"cpu", "f32"}}, quick(), [&] { return ++asked > 3; },
                      [&](const CompareRow& r) { finished.push_back(r.device); });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].cancelled);
  EXPECT_EQ(rows[0].error, "");
  EXPECT_TRUE(rows[0].max_output_diff.has_value());  // the check ran before the timing
  EXPECT_LT(rows[0].train_steps, 2);
  EXPECT_TRUE(rows[1].cancelled);
  EXPECT_EQ(rows[1].infer_steps + rows[1].train_steps, 0);
  EXPECT_FALSE(rows[1].max_output_diff.has_value());
  EXPECT_EQ(finished, std::vector<std::string>{"cpu"});  // on_row: only the row that ran
}

TEST(DeviceCompare, BadInputThrows) {
  CompareOptions o = quick();
  o.batch = 0;
  EXPECT_THROW(compare_devices(small_cnn(), {{"cpu", "f32"}}, o), ValueError);
  NodeId fc;
  Graph g = small_cnn(&fc);
  g.disconnect({fc, 0});
  try {
    compare_devices(g, {{"cpu", "f32"}}, quick());
    FAIL() << "a graph with an open input was compared";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("fc"), std::string::npos) << e.what();
  }
}

TEST(DeviceCompare, JsonAndCsv) {
  CompareRow ok;
  ok.device = "cpu";
  ok.name = "AMD EPYC (2 threads)";
  ok.kind = "cpu";
  ok.precision = "f32";
  ok.train_ms = 2;
  ok.train_samples_per_second = 4000;
  ok.peak_bytes = 1024;
  ok.train_speedup_vs_cpu = 1.0;
  ok.max_output_diff = 0;
  CompareRow bad;
  bad.device = "cuda:7";
  bad.precision = "f32";
  bad.error = "device 'cuda:7', not \"found\"";
  CompareOptions o = quick();
  const nlohmann::json j = nlohmann::json::parse(compare_json({ok, bad}, "g.json", "all", o, true));
  EXPECT_EQ(j["model"], "g.json");
  EXPECT_EQ(j["batch_size"], 4);
  EXPECT_EQ(j["interrupted"], true);
  ASSERT_EQ(j["results"].size(), 2u);
  const nlohmann::json& r = j["results"][0];
  EXPECT_EQ(r["peak_memory_bytes"], 1024);
  EXPECT_EQ(r["train_images_per_second"], 4000.0);
  EXPECT_EQ(r["train_speedup_vs_cpu"], 1.0);
  EXPECT_TRUE(r["infer_speedup_vs_cpu"].is_null());
  EXPECT_TRUE(r["max_grad_diff"].is_null());
  EXPECT_EQ(r["max_output_diff"], 0.0);
  EXPECT_TRUE(j["results"][1]["peak_memory_bytes"].is_null());
  EXPECT_EQ(j["results"][1]["error"], bad.error);
  // Read back: the same document again.
  const CompareDocument back = compare_from_json(j.dump());
  EXPECT_EQ(back.model, "g.json");
  EXPECT_EQ(back.options.batch, 4);
  ASSERT_EQ(back.rows.size(), 2u);
  EXPECT_EQ(compare_json(back.rows, back.model, back.precisions, back.options, back.interrupted), j.dump(2) + "\n");
  EXPECT_THROW(compare_from_json("[1]"), ValueError);
  EXPECT_THROW(compare_from_json(R"({"results": [{"name": "no device"}]})"), ValueError);
  const std::string csv = compare_csv({ok, bad});
  const std::string head = "device,name,kind,precision,train_step_ms,train_images_per_second,infer_step_ms,"
                           "infer_images_per_second,peak_memory_bytes,train_speedup_vs_cpu,infer_speedup_vs_cpu,"
                           "max_output_diff,max_grad_diff,interrupted,error\r\n";
  EXPECT_EQ(csv, head + "cpu,AMD EPYC (2 threads),cpu,f32,2,4000,0,0,1024,1,n/a,0,n/a,false,\r\n" +
                     "cuda:7,,,f32,0,0,0,0,n/a,n/a,n/a,n/a,n/a,false,\"device 'cuda:7', not \"\"found\"\"\"\r\n");
}

}  // namespace
}  // namespace kiln::graph
