// Bad input on a device (registered for every device of the run, test mode): errors name
// the op, shape and device, and the device keeps working afterwards.
#include <gtest/gtest.h>

#include <string>

#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "tests/backend-ops/harness.h"

namespace kiln::backend_ops {

namespace {
class ErrorTest : public testing::Test {
 public:
  ErrorTest(Device dev, int which) : dev_(dev), which_(which) {}
  void TestBody() override {
    Backend* b = backend_for(dev_);
    if (which_ == 0) {  // an allocation beyond the device's memory
      const uint64_t huge = b->info().memory_bytes * 4 + (uint64_t{1} << 40);
      try {
        void* p = b->allocate(huge);
        b->deallocate(p, huge);
        FAIL() << dev_.str() << " allocated " << huge << " bytes";
      } catch (const DeviceError& e) {
        EXPECT_NE(std::string(e.what()).find(dev_.str()), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("memory"), std::string::npos) << e.what();
      }
    } else {  // an (op, dtype) the device says it does not support
      int tried = 0;
      for (DType dt : {DType::f64, DType::f16, DType::bf16, DType::i32})
        if (!b->supports(OpId::matmul, dt)) {
          ++tried;
          Rng rng(0);
          Case c;
          c.bufs.push_back(output(rng, dt, {2, 2}));
          c.bufs.push_back(input(rng, dt, {2, 2}, Layout::contiguous, integers(0, 3)));
          c.bufs.push_back(input(rng, dt, {2, 2}, Layout::contiguous, integers(0, 3)));
          c.run = [](Backend& be, std::vector<TensorArg>& a) { be.matmul(a[0], a[1], a[2]); };
          try {
            execute(*b, c);
            ADD_FAILURE() << dev_.str() << " ran matmul " << dtype_name(dt) << " although supports() says no";
          } catch (const DTypeError& e) {
            EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
          }
        }
      if (tried == 0) GTEST_SKIP() << dev_.str() << " supports matmul in every dtype tried";
    }
    // the device still runs work
    Rng rng(1);
    Case ok;
    ok.bufs.push_back(output(rng, DType::f32, {3}));
    ok.bufs.push_back(input(rng, DType::f32, {3}, Layout::contiguous, uniform(-1, 1)));
    ok.run = [](Backend& be, std::vector<TensorArg>& a) { be.unary(UnaryOp::neg, a[0], a[1], 0, 0); };
    EXPECT_EQ(compare(ok, execute(*backend_for(Device()), ok), execute(*b, ok)), "");
  }

 private:
  Device dev_;
  int which_;
};
}  // namespace

void register_error_tests(const Device& dev) {
  const std::string suite = dev.str() + ".errors";
  for (int w = 0; w < 2; ++w)
    testing::RegisterTest(suite.c_str(), w == 0 ? "allocation_beyond_memory" : "unsupported_dtype", nullptr, nullptr,
                          __FILE__, __LINE__, [dev, w]() -> testing::Test* { return new ErrorTest(dev, w); });
}

}  // namespace kiln::backend_ops
