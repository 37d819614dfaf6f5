// engine/distributed/rendezvous.h: the TCP rendezvous with threads as ranks on 127.0.0.1 — the
// operations, and the handshake's refusals. Failures after it: test_distributed_rendezvous_failures.cpp.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

#include "engine/core/error.h"
#include "engine/distributed/rendezvous.h"
#include "tests/engine/distributed_test_util.h"

using namespace kiln;
using namespace kiln::distributed;
using namespace kiln::distributed::testing;

TEST(DistributedRendezvous, BroadcastBarrierAllGatherOnThreeRanks) {
  const int port = free_port(), world = 3;
  std::vector<std::vector<uint8_t>> got(world);
  std::vector<std::vector<std::vector<uint8_t>>> gathered(world), big(world);
  auto errors = run_ranks(world, [&](int r) {
    DistributedEnvironment e = env(port, r, world);
    if (r == 2) e.master_addr = "localhost";  // a host name, through getaddrinfo
    Rendezvous rv(e, 5.0);
    std::vector<uint8_t> id = r == 0 ? std::vector<uint8_t>{7, 1, 2, 3} : std::vector<uint8_t>{};
    got[r] = rv.broadcast(id);
    rv.barrier("after broadcast");
    gathered[r] = rv.all_gather({static_cast<uint8_t>(r), static_cast<uint8_t>(2 * r)});
    // Blobs larger than a socket buffer, of sizes that differ by rank (partial sends and receives).
    big[r] = rv.all_gather(std::vector<uint8_t>(300000 + r, static_cast<uint8_t>(r + 1)));
    rv.barrier("end");
  });
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(got[r], (std::vector<uint8_t>{7, 1, 2, 3})) << "rank " << r;
    EXPECT_EQ(gathered[r], (std::vector<std::vector<uint8_t>>{{0, 0}, {1, 2}, {2, 4}})) << "rank " << r;
    ASSERT_EQ(big[r].size(), 3u);
    for (int q = 0; q < world; ++q)
      EXPECT_EQ(big[r][q], std::vector<uint8_t>(300000 + q, static_cast<uint8_t>(q + 1))) << r << " " << q;
  }
}

TEST(DistributedRendezvous, WorldOfOneNeedsNoPeer) {
  Rendezvous rv(env(free_port(), 0, 1), 1.0);
  EXPECT_EQ(rv.broadcast({1, 2}), (std::vector<uint8_t>{1, 2}));
  rv.barrier("alone");
  EXPECT_EQ(rv.all_gather({5}), (std::vector<std::vector<uint8_t>>{{5}}));
}

TEST(DistributedRendezvous, PortInUse) {
  PortHolder busy;
  try {
    Rendezvous rv(env(busy.port, 0, 2), 1.0);
    FAIL() << "no error for a port in use";
  } catch (const DistributedError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("127.0.0.1:" + std::to_string(busy.port)), std::string::npos) << m;
    EXPECT_NE(m.find("another job may be using it"), std::string::npos) << m;
    EXPECT_NE(m.find("MASTER_PORT"), std::string::npos) << m;
  }
}

TEST(DistributedRendezvous, WorldSizeMismatchFailsOnBothSides) {
  const int port = free_port();
  auto errors = run_ranks(2, [&](int r) { Rendezvous rv(env(port, r, r == 0 ? 2 : 3), 5.0); });
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(errors[r].find("[D] rank 1 says WORLD_SIZE=3, rank 0 has 2"), std::string::npos) << errors[r];
}

TEST(DistributedRendezvous, DuplicateRankIsRefused) {
  const int port = free_port();
  auto errors = run_ranks(3, [&](int r) { Rendezvous rv(env(port, r == 2 ? 1 : r, 3), 5.0); });
  for (int r = 0; r < 3; ++r)  // the refused one, rank 0 and the admitted one (told by rank 0)
    EXPECT_NE(errors[r].find("[D] two processes say RANK=1"), std::string::npos) << errors[r];
}

TEST(DistributedRendezvous, RanksOutOfStepFail) {
  const int port = free_port();
  auto errors = run_ranks(2, [&](int r) {
    Rendezvous rv(env(port, r, 2), 5.0);
    if (r == 0)
      rv.barrier("epoch 1");
    else
      rv.all_gather({1, 2});
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(errors[r].find("rank 1 is in all_gather while rank 0 is in barrier 'epoch 1'"), std::string::npos)
        << errors[r];
}

TEST(DistributedRendezvous, DifferentBarrierNamesFail) {
  const int port = free_port();
  auto errors = run_ranks(2, [&](int r) {
    Rendezvous rv(env(port, r, 2), 5.0);
    rv.barrier(r == 0 ? "epoch 2" : "epoch 3");
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(errors[r].find("rank 1 is at barrier 'epoch 3', rank 0 at barrier 'epoch 2'"), std::string::npos)
        << errors[r];
}

TEST(DistributedRendezvous, StrangersAreDroppedAndOtherVersionsRefused) {
  const int port = free_port();
  std::string error;
  std::thread rank0([&] {
    try {
      Rendezvous rv(env(port, 0, 2), 2.0);
    } catch (const DistributedError& e) {
      error = e.what();
    }
  });
  int stranger = raw_connect(port);
  const char http[] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_GT(::send(stranger, http, sizeof http - 1, MSG_NOSIGNAL), 0);
  EXPECT_EQ(read_all(stranger), "");  // dropped without a word; rank 0 keeps waiting
  int old = raw_connect(port);
  // A hello frame (kind 1, 16 bytes) of protocol version 99: magic "KILN", version, RANK=1, WORLD_SIZE=2.
  const uint8_t hello[] = {1, 0, 0, 0, 16, 'K', 'I', 'L', 'N', 0, 0, 0, 99, 0, 0, 0, 1, 0, 0, 0, 2};
  ASSERT_EQ(::send(old, hello, sizeof hello, MSG_NOSIGNAL), ssize_t(sizeof hello));
  std::string reply = read_all(old);  // an error frame (kind 3) with the reason
  rank0.join();
  ASSERT_GT(reply.size(), 5u);
  EXPECT_EQ(reply[0], 3);
  EXPECT_NE(reply.find("a rank speaks rendezvous protocol 99, rank 0 speaks 1"), std::string::npos) << reply;
  EXPECT_EQ(error, reply.substr(5));
}
