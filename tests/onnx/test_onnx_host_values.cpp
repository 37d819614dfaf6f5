// Shape arithmetic on the host (engine/onnx/host_values.h): which nodes of a PyTorch-style
// reshape the plan puts on the host, and that a device session (vulkan:0 = lavapipe here, or
// cuda:0, where runs are recorded and replayed: executor_graph.h) gives the CPU's outputs with
// them there, including a Gather on host indices.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/host_values.h"
#include "model_builder.h"

using namespace kiln;
using namespace kiln::onnx::test;

namespace {

// x f32 [N, 6] -> y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [2, 3]))  [N, 2, 3]
//              -> z = Gather(y, k, axis 1) [N, 3] -> out = z / Sqrt(Cast(Gather(Shape(x), 1)))
::onnx::GraphProto reshape_graph(int64_t k) {
  ::onnx::GraphProto g;
  *g.add_input() = value_info("x", ::onnx::TensorProto::FLOAT, {-1, 6});
  add_int64_initializer(g, "axes0", {0});
  add_int64_initializer(g, "tail", {2, 3});
  auto* zero = g.add_initializer();
  zero->set_name("zero");
  zero->set_data_type(::onnx::TensorProto::INT64);
  zero->add_int64_data(0);
  auto* one = g.add_initializer();
  one->set_name("one");
  one->set_data_type(::onnx::TensorProto::INT64);
  one->add_int64_data(1);
  auto* kk = g.add_initializer();
  kk->set_name("k");
  kk->set_data_type(::onnx::TensorProto::INT64);
  kk->add_int64_data(k);
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  add_node(g, "Gather", {"s", "zero"}, {"n"}, "batch");
  add_node(g, "Unsqueeze", {"n", "axes0"}, {"n1"}, "unsqueeze");
  add_node(g, "Concat", {"n1", "tail"}, {"shp"}, "concat");
  set_int(g.mutable_node(3), "axis", 0);
  add_node(g, "Reshape", {"x", "shp"}, {"y"}, "reshape");
  add_node(g, "Gather", {"y", "k"}, {"z"}, "pick");
  set_int(g.mutable_node(5), "axis", 1);
  add_node(g, "Gather", {"s", "one"}, {"c"}, "width");
  add_node(g, "Cast", {"c"}, {"cf"}, "cast");
  set_int(g.mutable_node(7), "to", ::onnx::TensorProto::FLOAT);
  add_node(g, "Sqrt", {"cf"}, {"scale"}, "sqrt");
  add_node(g, "Div", {"z", "scale"}, {"out"}, "div");
  g.add_output()->set_name("out");
  return g;
}

kiln::onnx::Model model(int64_t k) { return kiln::onnx::parse_model(model_with(reshape_graph(k), 17).SerializeAsString(), ""); }

}  // namespace

TEST(OnnxHostValues, ShapeArithmeticIsPlannedOnTheHost) {
  const kiln::onnx::Model m = model(1);
  const kiln::onnx::HostPlan plan = kiln::onnx::plan_host_values(m.graph);
  ASSERT_EQ(plan.nodes.size(), m.graph.nodes.size());
  std::map<std::string, bool> host;
  for (size_t i = 0; i < m.graph.nodes.size(); ++i) host[m.graph.nodes[i].name] = plan.nodes[i];
  EXPECT_TRUE(host["shape"] && host["batch"] && host["unsqueeze"] && host["concat"]);
  EXPECT_TRUE(host["width"] && host["cast"] && host["sqrt"]);
  EXPECT_FALSE(host["reshape"]);  // reads x, a device tensor
  EXPECT_FALSE(host["pick"]);     // gathers from y
  EXPECT_FALSE(host["div"]);
  EXPECT_EQ(plan.constants, (std::set<std::string>{"axes0", "k", "one", "tail", "zero"}));
}

TEST(OnnxHostValues, DeviceSessionsMatchTheCpu) {
  const Tensor x = Tensor::arange(0, 24, 1, DType::f32).reshape({4, 6});
  const std::vector<float> want = kiln::onnx::Session(model(-1)).run({{"x", x}})[0].to_vector<float>();
  ASSERT_EQ(want.size(), 12u);
  EXPECT_FLOAT_EQ(want[0], 3.0f / std::sqrt(6.0f));  // x[0, 3], the last of the 2 rows of 3
  int devices = 0;
  for (const DeviceInfo& d : list_devices()) {
    if (d.device.type == DeviceType::cpu) continue;
    SCOPED_TRACE(d.device.str());
    ++devices;
    kiln::onnx::Session s(model(-1), d.device);
    for (int run = 0; run < 4; ++run) {  // on CUDA: plain, recorded, then replayed (executor_graph.h)
      const Tensor out = s.run({{"x", x}})[0];
      EXPECT_EQ(out.shape(), (Shape{4, 3}));
      const std::vector<float> got = out.to(Device()).to_vector<float>();
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
    }
    EXPECT_EQ(s.fallback_stats().nodes, 0) << "a host value made a node fall back to the CPU";
    if (d.device.type == DeviceType::cuda) {
      EXPECT_EQ(s.cuda_graph_note(), "replaying 1 input shape set");
    }
    const Tensor other = Tensor::ones({2, 6});  // another shape set: runs plainly, then is recorded too
    for (int run = 0; run < 3; ++run) EXPECT_EQ(s.run({{"x", other}})[0].shape(), (Shape{2, 3}));
    if (d.device.type == DeviceType::cuda) {
      EXPECT_EQ(s.cuda_graph_note(), "replaying 2 input shape sets");
    }
    const std::vector<float> again = s.run({{"x", x}})[0].to(Device()).to_vector<float>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(again[i], want[i], 1e-6) << i;
  }
  if (!devices) GTEST_SKIP() << "no device besides the CPU: the CPU's own run was checked";
}

TEST(OnnxHostValues, HostIndexOutOfRangeNamesTheNode) {
  const Tensor x = Tensor::zeros({4, 6});
  for (const DeviceInfo& d : list_devices()) {
    SCOPED_TRACE(d.device.str());
    kiln::onnx::Session s(model(2), d.device);  // axis 1 of y has 2 entries
    try {
      s.run({{"x", x}});
      FAIL() << "index 2 of 2 must be refused";
    } catch (const IndexError& e) {
      EXPECT_NE(std::string(e.what()).find("node 'pick' (Gather): index 2 is out of range for axis 1 of size 2"),
                std::string::npos)
          << e.what();
    }
  }
}
