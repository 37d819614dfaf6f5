#include "engine/distributed/tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln::distributed::tcp {

Deadline deadline_after(double seconds) {
  seconds = seconds < 1e9 ? seconds : 1e9;  // ~31 years: no overflow of the clock's ticks
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int remaining_ms(Deadline deadline) {
  auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > 1 << 30 ? 1 << 30 : static_cast<int>(ms);
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

int Socket::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void Socket::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

// Waits until fd is ready for `events`; false at the deadline.
bool wait_for(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return true;  // ready, or an error/hangup the next call reports
    if (n == 0) return false;
    if (errno != EINTR) return true;
  }
}

Status send_all(int fd, const uint8_t* p, size_t n, Deadline deadline) {
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) return Status::kTimeout;
    } else {
      return Status::kClosed;  // EPIPE, ECONNRESET ...
    }
  }
  return Status::kOk;
}

Status recv_all(int fd, uint8_t* p, size_t n, Deadline deadline) {
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
    } else if (k == 0) {
      return Status::kClosed;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd, POLLIN, deadline)) return Status::kTimeout;
    } else {
      return Status::kClosed;
    }
  }
  return Status::kOk;
}

void configure(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small frames go out at once
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  uint32_t be = htonl(v);
  const auto* b = reinterpret_cast<const uint8_t*>(&be);
  out.insert(out.end(), b, b + 4);
}

uint32_t get_u32(const uint8_t* p) {
  uint32_t be;
  std::memcpy(&be, p, 4);
  return ntohl(be);
}

std::vector<uint8_t> encode_blobs(const std::vector<std::vector<uint8_t>>& blobs) {
  std::vector<uint8_t> out;
  put_u32(out, static_cast<uint32_t>(blobs.size()));
  for (const auto& b : blobs) {
    put_u32(out, static_cast<uint32_t>(b.size()));
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

bool decode_blobs(const std::vector<uint8_t>& in, size_t count, std::vector<std::vector<uint8_t>>& out) {
  size_t at = 4;
  if (in.size() < at || get_u32(in.data()) != count) return false;
  out.assign(count, {});
  for (auto& b : out) {
    if (in.size() - at < 4) return false;
    size_t n = get_u32(in.data() + at);
    at += 4;
    if (in.size() - at < n) return false;
    b.assign(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return at == in.size();
}

Status send_frame(int fd, Kind kind, const std::vector<uint8_t>& payload, Deadline deadline) {
  if (payload.size() > kMaxPayload) return Status::kMalformed;
  std::vector<uint8_t> header{static_cast<uint8_t>(kind)};
  put_u32(header, static_cast<uint32_t>(payload.size()));
  Status s = send_all(fd, header.data(), header.size(), deadline);
  if (s != Status::kOk) return s;
  return send_all(fd, payload.data(), payload.size(), deadline);
}

Status recv_frame(int fd, Frame& out, Deadline deadline) {
  uint8_t header[5];
  Status s = recv_all(fd, header, sizeof header, deadline);
  if (s != Status::kOk) return s;
  uint32_t length = get_u32(header + 1);
  if (header[0] < static_cast<uint8_t>(Kind::kHello) || header[0] > static_cast<uint8_t>(Kind::kGathered) ||
      length > kMaxPayload)
    return Status::kMalformed;
  out.kind = static_cast<Kind>(header[0]);
  out.payload.resize(length);
  return recv_all(fd, out.payload.data(), length, deadline);
}

bool resolve_ipv4(const std::string& host, int port, sockaddr_in& out, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    error = rc != 0 ? ::gai_strerror(rc) : "no IPv4 address";
    return false;
  }
  std::memcpy(&out, found->ai_addr, sizeof out);
  out.sin_port = htons(static_cast<uint16_t>(port));
  ::freeaddrinfo(found);
  return true;
}

std::string to_string(const sockaddr_in& addr) {
  char text[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(addr.sin_port));
}

Socket listen_on(const sockaddr_in& addr, int backlog, int& error_number) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  if (!s.valid() || ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(s.fd(), backlog) != 0) {
    error_number = errno;
    return Socket();
  }
  configure(s.fd());
  return s;
}

Socket accept_one(int listener, Deadline deadline) {
  for (;;) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      configure(fd);
      return Socket(fd);
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Socket();
    if (!wait_for(listener, POLLIN, deadline)) return Socket();
  }
}

Socket connect_once(const sockaddr_in& addr, Deadline deadline, std::string& error) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) {
    error = std::strerror(errno);
    return Socket();
  }
  configure(s.fd());
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return s;
  if (errno != EINPROGRESS) {
    error = std::strerror(errno);
    return Socket();
  }
  if (!wait_for(s.fd(), POLLOUT, deadline)) {
    error = "no answer";
    return Socket();
  }
  int so_error = 0;
  socklen_t len = sizeof so_error;
  ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &so_error, &len);
  if (so_error != 0) {
    error = std::strerror(so_error);
    return Socket();
  }
  return s;
}

}  // namespace kiln::distributed::tcp
