// TCP plumbing of the rendezvous (rendezvous.h): non-blocking sockets, every wait bounded by a
// deadline (poll), length-prefixed frames in network byte order, no SIGPIPE (MSG_NOSIGNAL).
// Internal to engine/distributed; errors are returned, the rendezvous words them.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

struct sockaddr_in;  // <netinet/in.h>

namespace kiln::distributed::tcp {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
Deadline deadline_after(double seconds);
int remaining_ms(Deadline deadline);  // >= 0, rounded up

// A file descriptor closed by the destructor; move-only.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& o) noexcept : fd_(o.release()) {}
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset();

 private:
  int fd_ = -1;
};

enum class Status { kOk, kClosed, kTimeout, kMalformed };

// Frame: kind (1 byte), payload length (4 bytes, big-endian), payload.
enum class Kind : uint8_t { kHello = 1, kWelcome, kError, kBroadcast, kBarrier, kRelease, kGather, kGathered };
struct Frame {
  Kind kind = Kind::kError;
  std::vector<uint8_t> payload;
};
constexpr uint32_t kMaxPayload = uint32_t{1} << 30;  // bytes; larger frames are malformed

Status send_frame(int fd, Kind kind, const std::vector<uint8_t>& payload, Deadline deadline);
Status recv_frame(int fd, Frame& out, Deadline deadline);

// Big-endian integers in byte vectors.
void put_u32(std::vector<uint8_t>& out, uint32_t v);
uint32_t get_u32(const uint8_t* p);
// A list of byte blobs: count, then each blob's length and bytes. decode_blobs is false unless
// `in` holds exactly `count` blobs.
std::vector<uint8_t> encode_blobs(const std::vector<std::vector<uint8_t>>& blobs);
bool decode_blobs(const std::vector<uint8_t>& in, size_t count, std::vector<std::vector<uint8_t>>& out);

// The first IPv4 address of `host` (getaddrinfo), port set; false with `error` when none.
bool resolve_ipv4(const std::string& host, int port, sockaddr_in& out, std::string& error);
std::string to_string(const sockaddr_in& addr);  // "127.0.0.1:29500"

// A listening socket on `addr` with SO_REUSEADDR; invalid with `error_number` (errno) on failure.
Socket listen_on(const sockaddr_in& addr, int backlog, int& error_number);
// The next connection on `listener`, or invalid at the deadline.
Socket accept_one(int listener, Deadline deadline);
// One connection attempt to `addr`, bounded by the deadline; invalid with `error` on failure.
Socket connect_once(const sockaddr_in& addr, Deadline deadline, std::string& error);

}  // namespace kiln::distributed::tcp
