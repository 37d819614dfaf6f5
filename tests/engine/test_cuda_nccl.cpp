// The CUDA backend's collectives (backends/cuda/nccl.cu) through real NCCL, with what one GPU
// allows: a world of one rank on cuda:0 (NCCL refuses two ranks of one communicator on one device).
// For one rank all_reduce and broadcast leave the values as they are, so an out-of-place
// all_gather shows that the collectives really ran and in stream order with the device's kernels,
// eager and inside a recorded CUDA graph. Bad arguments, a rank that never comes (connect's
// timeout) and calls after abort() throw DeviceError naming the rank. Without a CUDA device (or
// without the plugin) the GPU tests skip, naming the registry's reason; without NCCL in the build
// (KILN_NCCL off) they skip too, and so do they where libnccl does not load (Note [NCCL at run
// time], backends/cuda/nccl_loader.h): there UnavailableLibrary checks the errors instead. The
// CPU backend has no collectives: that test runs everywhere.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/core/collectives.h"
#include "engine/core/error.h"
#include "engine/core/ops.h"
#include "engine/core/registry.h"
#include "tests/engine/cuda_test_util.h"

namespace kiln {
namespace {

using cuda_test::have_cuda;
using cuda_test::kGpu;


Collectives& nccl() { return *collectives_of(*backend_for(kGpu)); }

// library() of collectives whose libnccl did not load: "NCCL unavailable (<why>)".
bool nccl_unavailable() { return nccl().library().rfind("NCCL unavailable", 0) == 0; }

std::unique_ptr<Communicator> world_of_one() {
  return nccl().connect(nccl().unique_id(), 0, 1, 60.0);
}

// Throws E whose message holds every one of `parts`.
template <class E, class F>
void expect_error(F&& f, std::initializer_list<const char*> parts, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": did not throw";
  } catch (const E& e) {
    for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << what << ": " << e.what();
  }
}

TEST(CudaNccl, NoCollectivesOnCpuBackend) {
  EXPECT_EQ(collectives_of(*backend_for(Device())), nullptr);
}

// Where libnccl.so.2 does not load (not installed, or hidden from the dynamic loader, e.g. by an
// LD_AUDIT library whose la_objsearch refuses it), the device and its collectives stay; they say why.
TEST(CudaNccl, UnavailableLibrary) {
  REQUIRE_CUDA();
  if (!collectives_of(*backend_for(kGpu))) GTEST_SKIP() << "built without NCCL (KILN_NCCL off)";
  if (!nccl_unavailable()) GTEST_SKIP() << "NCCL loads here (" << nccl().library() << ")";
  const std::string lib = nccl().library();
  std::printf("[ library  ] %s\n", lib.c_str());
  EXPECT_NE(lib.find("libnccl"), std::string::npos) << lib;
  expect_error<DeviceError>([&] { nccl().unique_id(); },
                            {"cuda:0", "NCCL is not installed or cannot be loaded", "libnccl.so.2", "libnccl2"},
                            "unique_id");
  expect_error<DeviceError>([&] { nccl().connect(std::vector<uint8_t>(128, 0), 0, 1, 5.0); },
                            {"rank 0 of 1", "cuda:0", "NCCL is not installed or cannot be loaded"}, "connect");
  Tensor a = Tensor::ones({4}, DType::f32, kGpu);  // the device itself works
  EXPECT_EQ((a + 1.0).to_vector<float>(), std::vector<float>(4, 2.0f));
}

TEST(CudaNccl, LibraryAndUniqueId) {
  REQUIRE_NCCL();
  const std::string lib = nccl().library();
  std::printf("[ library  ] %s\n", lib.c_str());
  EXPECT_EQ(lib.rfind("NCCL 2.", 0), 0u) << lib;
  const std::vector<uint8_t> a = nccl().unique_id(), b = nccl().unique_id();
  EXPECT_EQ(a.size(), 128u);  // NCCL_UNIQUE_ID_BYTES
  EXPECT_NE(a, b);
}

TEST(CudaNccl, WorldOfOneAllReduceSumAndAvg) {
  REQUIRE_NCCL();
  std::unique_ptr<Communicator> comm = world_of_one();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->world_size(), 1);
  const std::vector<float> values = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 8.0f, 0.0f, 100.0f};
  for (DType dt : {DType::f32, DType::bf16}) {
    for (bool average : {false, true}) {
      Tensor buf = Tensor::from_vector(values, {2, 4}, kGpu).to(dt);
      comm->all_reduce(buf.arg(), average);
      comm->join();
      EXPECT_EQ(buf.to(DType::f32).to_vector<float>(), values) << dtype_name(dt) << (average ? " avg" : " sum");
    }
  }
  comm->wait(10.0);
}

TEST(CudaNccl, WorldOfOneAllGatherAndBroadcast) {
  REQUIRE_NCCL();
  std::unique_ptr<Communicator> comm = world_of_one();
  for (DType dt : {DType::f32, DType::bf16, DType::i64, DType::u8}) {
    Tensor in = Tensor::arange(1, 9, 1, dt, kGpu);
    Tensor out = Tensor::zeros({8}, dt, kGpu);
    comm->all_gather(out.arg(), in.arg());  // out of place: NCCL copies, so it really ran
    comm->broadcast(in.arg(), 0);
    comm->join();
    EXPECT_EQ(out.to(DType::f64).to_vector<double>(), in.to(DType::f64).to_vector<double>()) << dtype_name(dt);
    EXPECT_EQ(in.to(DType::f64).to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8})) << dtype_name(dt);
  }
  // Bad arguments throw before NCCL sees them; the communicator stays usable.
  Tensor a = Tensor::ones({4}, DType::f32, kGpu), b = Tensor::zeros({8}, DType::f32, kGpu);
  expect_error<ValueError>([&] { comm->broadcast(a.arg(), 1); }, {"rank 0 of 1", "root 1"}, "broadcast root");
  expect_error<ShapeError>([&] { comm->all_gather(b.arg(), a.arg()); }, {"all_gather", "[8]", "[4]"}, "gather size");
  Tensor h = Tensor::zeros({4}, DType::f16, kGpu);
  expect_error<DTypeError>([&] { comm->all_gather(h.arg(), a.arg()); }, {"f16", "f32"}, "gather dtypes");
  Tensor flags = Tensor::ones({4}, DType::bool_, kGpu);
  expect_error<DTypeError>([&] { comm->all_reduce(flags.arg(), false); }, {"all_reduce", "bool"}, "bool");
  Tensor m = Tensor::zeros({4, 4}, DType::f32, kGpu);
  expect_error<ShapeError>([&] { comm->all_reduce(m.t().arg(), false); }, {"contiguous"}, "strided");
  Tensor c = Tensor::zeros({4}, DType::f32, kGpu);
  comm->all_gather(c.arg(), a.arg());
  comm->join();
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
}

// The collective runs after the kernels enqueued before it (the fork), and the kernels enqueued
// after join() see its result: a chain of adds writes `in` while NCCL would otherwise copy it early.
TEST(CudaNccl, StreamOrderWithTheDevicesKernels) {
  REQUIRE_NCCL();
  std::unique_ptr<Communicator> comm = world_of_one();
  const int64_t n = int64_t{1} << 22;  // 16 MiB of f32: each add takes a while
  const int adds = 40;
  Tensor x = Tensor::arange(0, static_cast<double>(n), 1, DType::f32, kGpu);
  for (int round = 0; round < 2; ++round) {
    Tensor in = x;
    for (int i = 0; i < adds; ++i) in = in + 1.0;  // x + 40, exact in f32 below 2^24
    Tensor out = Tensor::zeros({n}, DType::f32, kGpu);
    comm->all_gather(out.arg(), in.arg());
    comm->all_reduce(in.arg(), round == 1);
    comm->join();
    Tensor after = out + 1.0;  // on the device's stream, after the join
    const std::vector<float> got = after.to_vector<float>(), reduced = in.to_vector<float>();
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; ++i) {
      const float want = static_cast<float>(i + adds);
      if (got[static_cast<size_t>(i)] != want + 1 || reduced[static_cast<size_t>(i)] != want)
        ++bad, ADD_FAILURE() << "round " << round << " element " << i << ": gathered+1 " << got[static_cast<size_t>(i)]
                             << ", reduced " << reduced[static_cast<size_t>(i)] << ", want " << want;
    }
    comm->wait(10.0);
  }
}

// Collectives recorded into a CUDA graph of the device's stream (Note [NCCL streams and capture]):
// each replay runs the recorded fill, all_gather and the add after join() again.
TEST(CudaNccl, RecordedIntoACudaGraph) {
  REQUIRE_NCCL();
  Backend* be = backend_for(kGpu);
  std::unique_ptr<Communicator> comm = world_of_one();
  Tensor in = Tensor::zeros({1024}, DType::f32, kGpu), out = Tensor::zeros({1024}, DType::f32, kGpu);
  comm->all_gather(out.arg(), in.arg());  // a warm-up step, eager
  comm->join();
  std::string why;
  ASSERT_TRUE(be->begin_capture(why)) << why;
  try {
    be->fill(in.arg(), 3.0);
    comm->all_gather(out.arg(), in.arg());
    expect_error<DeviceError>([&] { comm->wait(1.0); }, {"rank 0 of 1", "recorded"}, "wait while recording");
    comm->join();
    be->fill(in.arg(), 5.0);  // after join: may not race the gather
  } catch (...) {
    be->abort_capture();
    throw;
  }
  const int64_t graph = be->end_capture();
  for (int replay = 0; replay < 2; ++replay) {
    out.fill_(0);
    in.fill_(0);
    be->replay(graph, {});
    EXPECT_EQ(out.to_vector<float>(), std::vector<float>(1024, 3.0f)) << "replay " << replay;
    EXPECT_EQ(in.to_vector<float>(), std::vector<float>(1024, 5.0f)) << "replay " << replay;
  }
  be->release_graph(graph);
  comm->wait(10.0);
}

TEST(CudaNccl, ConnectErrorsNameTheRank) {
  REQUIRE_NCCL();
  const std::vector<uint8_t> id = nccl().unique_id();
  expect_error<DeviceError>([&] { nccl().connect(id, 1, 1, 5.0); }, {"rank 1 of 1", "cuda:0", "out of range"},
                            "rank out of range");
  expect_error<DeviceError>([&] { nccl().connect(id, -1, 2, 5.0); }, {"rank -1 of 2", "out of range"}, "rank -1");
  expect_error<DeviceError>([&] { nccl().connect(id, 0, 0, 5.0); }, {"world size"}, "world size 0");
  expect_error<DeviceError>([&] { nccl().connect(std::vector<uint8_t>(16, 0), 0, 1, 5.0); },
                            {"rank 0 of 1", "16 bytes", "128"}, "id of the wrong size");
  // Rank 1 of 2 never comes: rank 0 gives up at the timeout, with an error, not a hang.
  const auto start = std::chrono::steady_clock::now();
  expect_error<DeviceError>([&] { nccl().connect(nccl().unique_id(), 0, 2, 2.0); },
                            {"rank 0 of 2", "cuda:0", "within 2 s"}, "a missing rank");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ timeout  ] connect with a missing rank gave up after %.2f s\n", s);
  EXPECT_GE(s, 2.0);
  EXPECT_LT(s, 4.0);
  // NCCL still works after the aborted one.
  std::unique_ptr<Communicator> comm = world_of_one();
  Tensor a = Tensor::ones({4}, DType::f32, kGpu);
  comm->all_reduce(a.arg(), false);
  comm->wait(10.0);
}

TEST(CudaNccl, CallsAfterAbortThrow) {
  REQUIRE_NCCL();
  std::unique_ptr<Communicator> comm = world_of_one();
  Tensor a = Tensor::ones({4}, DType::f32, kGpu);
  comm->all_reduce(a.arg(), true);
  comm->wait(10.0);
  comm->abort();
  expect_error<DeviceError>([&] { comm->wait(1.0); }, {"rank 0 of 1", "aborted"}, "wait after abort");
  expect_error<DeviceError>([&] { comm->all_reduce(a.arg(), false); }, {"rank 0 of 1", "all_reduce", "aborted"},
                            "all_reduce after abort");
  expect_error<DeviceError>([&] { comm->join(); }, {"aborted"}, "join after abort");
  comm->abort();  // twice: nothing more
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(4, 1.0f));  // the device still works
}

}  // namespace
}  // namespace kiln
