// engine/distributed/rendezvous.h: ranks that never come, die or fall silent are named, within the
// timeout, never a hang (threads as ranks on 127.0.0.1, and one forked process).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "engine/core/error.h"
#include "engine/distributed/rendezvous.h"
#include "tests/engine/distributed_test_util.h"

using namespace kiln;
using namespace kiln::distributed;
using namespace kiln::distributed::testing;

TEST(DistributedRendezvous, MissingRankTimesOutNamingIt) {
  const int port = free_port();
  auto t0 = std::chrono::steady_clock::now();
  // Rank 2 never comes; rank 1 hears rank 0's verdict before its own (longer) wait ends.
  auto errors = run_ranks(2, [&](int r) { Rendezvous rv(env(port, r, 3), 1.0); });
  double took = seconds_since(t0);
  EXPECT_NE(errors[0].find("[D] rank 0 timed out after 1 s waiting for rank 2 to join"), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("waiting for rank 2 to join"), std::string::npos) << errors[1];
  EXPECT_NE(errors[1].find("reported by rank 0"), std::string::npos) << errors[1];
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 2.0);
}

TEST(DistributedRendezvous, NoRankZeroTimesOutNamingTheAddress) {
  const int port = free_port();
  try {
    Rendezvous rv(env(port, 1, 2), 0.3);
    FAIL() << "no error without rank 0";
  } catch (const DistributedError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("rank 1 could not connect to rank 0 at 127.0.0.1:" + std::to_string(port) + " within 0.45 s"),
              std::string::npos)
        << m;
  }
}

TEST(DistributedRendezvous, PeerClosingMidBarrierIsNamed) {
  const int port = free_port();
  auto errors = run_ranks(3, [&](int r) {
    Rendezvous rv(env(port, r, 3), 5.0);
    rv.barrier("start");
    if (r == 2) {  // dies instead of entering the barrier: its connection closes
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return;
    }
    rv.barrier("epoch 3");
  });
  EXPECT_EQ(errors[2], "");
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(errors[r].find("[D] rank 2 closed its connection during barrier 'epoch 3'"), std::string::npos)
        << errors[r];
}

TEST(DistributedRendezvous, RankZeroClosingIsNamedAndLaterCallsFail) {
  const int port = free_port();
  std::string later;
  auto errors = run_ranks(2, [&](int r) {
    Rendezvous rv(env(port, r, 2), 5.0);
    if (r == 0) return;
    try {
      rv.all_gather({1});
    } catch (const DistributedError&) {
      try {
        rv.barrier("after");
      } catch (const DistributedError& e) {
        later = e.what();
      }
      throw;
    }
  });
  EXPECT_NE(errors[1].find("rank 0 closed its connection during all_gather"), std::string::npos) << errors[1];
  EXPECT_NE(later.find("rank 1 cannot run barrier 'after': the rendezvous failed earlier"), std::string::npos)
      << later;
}

TEST(DistributedRendezvous, SilentPeerTimesOutNamingIt) {
  const int port = free_port();
  auto t0 = std::chrono::steady_clock::now();
  auto errors = run_ranks(3, [&](int r) {
    Rendezvous rv(env(port, r, 3), 0.5);
    if (r == 2) {  // alive but never enters the barrier: waits in a broadcast rank 0 does not make
      rv.broadcast({});
      return;
    }
    rv.barrier("epoch 1");
  });
  EXPECT_NE(errors[0].find("rank 0 timed out after 0.5 s in barrier 'epoch 1' waiting for rank 2"), std::string::npos)
      << errors[0];
  for (int r = 1; r < 3; ++r)  // told by rank 0 before their own (longer) waits end
    EXPECT_NE(errors[r].find("waiting for rank 2 (reported by rank 0)"), std::string::npos) << errors[r];
  EXPECT_LT(seconds_since(t0), 0.7);
}

TEST(DistributedRendezvous, KilledProcessIsNamedWithoutSigpipe) {
  const int port = free_port();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // rank 1: joins, then dies at once (no destructor, no clean close)
    try {
      Rendezvous rv(env(port, 1, 2), 5.0);
      ::raise(SIGKILL);
    } catch (...) {
    }
    ::_exit(3);
  }
  std::string message;
  try {
    Rendezvous rv(env(port, 0, 2), 5.0);
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status)) << "rank 1 did not get through the rendezvous";
    rv.broadcast(std::vector<uint8_t>(4 << 20, 1));  // writes to a dead peer: EPIPE, not SIGPIPE
    rv.barrier("epoch 3");
  } catch (const DistributedError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("rank 1 closed its connection during "), std::string::npos) << message;
}
