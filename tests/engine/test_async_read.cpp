// AsyncRead / Backend::read_async: values read back without waiting for later work.
#include <gtest/gtest.h>

#include "engine/core/async_read.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/registry.h"

using namespace kiln;

namespace {

std::vector<Device> devices() {
  std::vector<Device> out;
  for (const DeviceInfo& d : list_devices()) out.push_back(d.device);
  return out;
}

}  // namespace

TEST(AsyncRead, ReadsTheValuesAsTheyWereWhenStarted) {
  for (const Device& dev : devices()) {
    SCOPED_TRACE(dev.str());
    Tensor t = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).to(dev);
    AsyncRead first(t);
    t.copy_(Tensor::full({2, 3}, 7.0f).to(dev));  // enqueued after the read: not seen by it
    AsyncRead second(t.transpose(0, 1));           // a non-contiguous view is read in its own order
    EXPECT_TRUE(first.pending());
    Tensor a = first.wait();
    EXPECT_FALSE(first.pending());
    EXPECT_EQ(a.device().type, DeviceType::cpu);
    EXPECT_EQ(a.shape(), (Shape{2, 3}));
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    Tensor b = second.wait();
    EXPECT_EQ(b.shape(), (Shape{3, 2}));
    EXPECT_EQ(b.to_vector<float>(), std::vector<float>(6, 7.0f));
  }
}

TEST(AsyncRead, KeepsDtypeAndReadsScalars) {
  for (const Device& dev : devices()) {
    SCOPED_TRACE(dev.str());
    AsyncRead loss(Tensor::scalar(0.25, DType::f32, dev));
    AsyncRead ids(Tensor::from_vector(std::vector<int64_t>{3, -1}, {2}).to(dev));
    EXPECT_DOUBLE_EQ(loss.wait().item<double>(), 0.25);
    Tensor i = ids.wait();
    EXPECT_EQ(i.dtype(), DType::i64);
    EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{3, -1}));
  }
}

TEST(AsyncRead, WaitingTwiceOrForNothingIsAnError) {
  AsyncRead none;
  EXPECT_THROW(none.wait(), ValueError);
  AsyncRead once(Tensor::ones({3}));
  AsyncRead moved(std::move(once));
  EXPECT_FALSE(once.pending());
  EXPECT_THROW(once.wait(), ValueError);
  moved.wait();
  EXPECT_THROW(moved.wait(), ValueError);
}

TEST(AsyncRead, UnreadCopiesAreReleased) {
  for (const Device& dev : devices()) {
    SCOPED_TRACE(dev.str());
    Backend* backend = Tensor::ones({1}).to(dev).backend();
    for (int i = 0; i < 100; ++i) AsyncRead dropped(Tensor::full({256}, i).to(dev));
    Tensor t = Tensor::full({4}, 2.0f).to(dev);
    AsyncRead kept(t);
    EXPECT_EQ(kept.wait().to_vector<float>(), std::vector<float>(4, 2.0f));
    float host = 0;
    EXPECT_THROW(backend->read_wait(123456789, &host), DeviceError);  // unknown ticket
  }
}
