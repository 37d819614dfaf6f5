// Helpers of the rendezvous tests (test_distributed_rendezvous*.cpp): free ports, ranks as
// threads on 127.0.0.1, plain sockets to speak to rank 0 by hand.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "engine/distributed/environment.h"

namespace kiln::distributed::testing {

// A socket listening on 127.0.0.1 at a port the kernel picked (so that tests running in
// parallel do not clash); closing it frees the port for the rendezvous.
struct PortHolder {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  PortHolder() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("PortHolder: no free port");
    port = ntohs(a.sin_port);
  }
  ~PortHolder() { release(); }
  void release() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

inline int free_port() { return PortHolder().port; }

inline DistributedEnvironment env(int port, int rank, int world) { return {"127.0.0.1", port, rank, world, rank}; }

// Runs fn(rank) on one thread per rank; returns each rank's error message ("" when none).
inline std::vector<std::string> run_ranks(int world, const std::function<void(int)>& fn) {
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::string("[") + (dynamic_cast<const DistributedError*>(&e) ? "D" : "?") +
                                         "] " + e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

// A plain blocking connection to 127.0.0.1:port (retrying while rank 0 starts), for speaking
// to rank 0 by hand.
inline int raw_connect(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("raw_connect: rank 0 does not listen");
}

// All bytes the peer sends until it closes the connection.
inline std::string read_all(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kiln::distributed::testing
