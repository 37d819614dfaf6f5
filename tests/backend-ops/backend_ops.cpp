// The conformance program: kiln_backend_ops [--device=all|vulkan|vulkan:0|cuda ...]
// [--mode=test|grad|perf|support] [GoogleTest flags]. See harness.h.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "tests/backend-ops/harness.h"
#include "tests/common/test_deps.h"

namespace kiln::backend_ops {
namespace {

const std::vector<Case>& cases() {
  static const std::vector<Case> all = all_cases();
  return all;
}

class CaseTest : public testing::Test {
 public:
  CaseTest(Device dev, size_t index) : dev_(dev), index_(index) {}
  void TestBody() override {
    const Case& c = cases()[index_];
    Backend* cpu = backend_for(Device());
    Backend* dev = backend_for(dev_);
    if (!dev->supports(c.op, c.dtype, c.sub_op))
      GTEST_SKIP() << "unsupported: " << c.name << " on " << dev_.str();
    if (c.expect_error) {
      EXPECT_THROW(execute(*dev, c), Error) << c.name << ": the device accepted bad input";
      // and the device still runs work afterwards
      Case ok = c;
      ok.expect_error = false;
      for (Buf& b : ok.bufs)
        if (b.dtype == DType::i64)
          for (int64_t i = 0; i < b.numel(); ++i) b.set(b.position(i), 0);
      std::string diff;
      EXPECT_NO_THROW(diff = compare(ok, execute(*cpu, ok), execute(*dev, ok)));
      EXPECT_EQ(diff, "");
      return;
    }
    if (!cpu->supports(c.op, c.dtype, c.sub_op)) GTEST_SKIP() << "the CPU reference does not support " << c.name;
    std::vector<std::vector<uint8_t>> ref, got;
    ASSERT_NO_THROW(ref = execute(*cpu, c)) << "CPU reference failed on " << c.name;
    try {
      got = execute(*dev, c);
    } catch (const std::exception& e) {
      FAIL() << dev_.str() << " failed on " << c.name << ": " << e.what();
    }
    const std::string diff = compare(c, ref, got);
    EXPECT_TRUE(diff.empty()) << c.name << " on " << dev_.str() << ": " << diff;
  }

 private:
  Device dev_;
  size_t index_;
};

std::string sanitize(std::string s) {
  std::string out;
  for (char ch : s)
    if (ch != ' ') out += ch;
  return out;
}

void register_case_tests(const Device& dev) {
  const std::vector<Case>& all = cases();
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string name = sanitize(all[i].name);
    const std::string suite = dev.str() + "." + op_id_name(all[i].op);
    testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [dev, i]() -> testing::Test* { return new CaseTest(dev, i); });
  }
}

std::string option(int& argc, char** argv, const char* flag, const char* env) {
  std::string value;
  if (const char* e = std::getenv(env)) value = e;
  const size_t n = std::strlen(flag);
  int w = 1;
  for (int r = 1; r < argc; ++r) {
    if (std::strncmp(argv[r], flag, n) == 0 && argv[r][n] == '=') value = argv[r] + n + 1;
    else argv[w++] = argv[r];
  }
  argc = w;
  return value;
}
}  // namespace
}  // namespace kiln::backend_ops

int main(int argc, char** argv) {
  using namespace kiln::backend_ops;
  const std::string device = option(argc, argv, "--device", "KILN_BACKEND_OPS_DEVICE");
  std::string mode = option(argc, argv, "--mode", "KILN_BACKEND_OPS_MODE");
  if (mode.empty()) mode = "test";
  if (mode != "test" && mode != "grad" && mode != "perf" && mode != "support") {
    std::cerr << "kiln_backend_ops: unknown --mode '" << mode << "' (test, grad, perf or support)\n";
    return 2;
  }
  testing::InitGoogleTest(&argc, argv);
  std::string why;
  std::vector<kiln::Device> devs;
  try {
    devs = selected_devices(device, why);
  } catch (const std::exception& e) {
    std::cerr << "kiln_backend_ops: " << e.what() << "\n";
    return 1;
  }
  if (devs.empty()) {
    const std::string what = "no device matches '" + (device.empty() ? "all" : device) + "' (" + why + ")";
    // Where the Vulkan plugin is built, vulkan:0 is lavapipe (mesa-vulkan-drivers), which quickstart installs.
    if (KILN_TEST_WITH_VULKAN && device.rfind("vulkan", 0) == 0) {
      const bool fail = kiln::test::require_test_deps();
      std::cout << (fail ? "FAILED: " : "SKIPPED: ") << kiln::test::missing_dep_message("mesa-vulkan-drivers", what) << "\n";
      return fail ? 1 : 77;
    }
    std::cout << "SKIPPED: " << what << "\n";
    return 77;
  }
  if (mode == "support") {
    print_support_table(devs);
    return 0;
  }
  for (const kiln::Device& d : devs) {
    std::cout << "backend-ops: " << mode << " on " << d.str() << " (" << kiln::backend_for(d)->info().name
              << ") against cpu\n";
    if (mode == "test") {
      register_case_tests(d);
      register_error_tests(d);
      register_timing_tests(d);
    }
    else if (mode == "grad") register_grad_tests(d);
    else register_perf_tests(d);
  }
  return RUN_ALL_TESTS();
}
