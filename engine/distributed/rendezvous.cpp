#include "engine/distributed/rendezvous.h"

#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "engine/core/error.h"

namespace kiln::distributed {

using detail::str_cat;
using tcp::Deadline;
using tcp::Frame;
using tcp::Kind;
using tcp::Status;

namespace {

constexpr uint32_t kMagic = 0x4B494C4E;  // "KILN"
constexpr uint32_t kVersion = 1;         // Note [Rendezvous protocol]
const char* const kHandshake = "the rendezvous handshake";

std::string seconds(double s) { return str_cat(s, " s"); }

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// The operation a frame belongs to, for messages about ranks out of step.
std::string operation_of(const Frame& f) {
  switch (f.kind) {
    case Kind::kHello:
    case Kind::kWelcome: return kHandshake;
    case Kind::kBroadcast: return "broadcast";
    case Kind::kBarrier: return "barrier '" + std::string(f.payload.begin(), f.payload.end()) + "'";
    case Kind::kRelease: return "a barrier";
    case Kind::kGather:
    case Kind::kGathered: return "all_gather";
    case Kind::kError: break;
  }
  return "an error";
}

}  // namespace

Rendezvous::Rendezvous(const DistributedEnvironment& env, double timeout_s) : env_(env), timeout_s_(timeout_s) {
  check_environment(env_);
  KILN_CHECK(timeout_s > 0, ValueError, "Rendezvous: the timeout must be positive, got ", timeout_s, " s");
  where_ = env_.master_addr + ":" + std::to_string(env_.master_port);
  if (env_.world_size == 1) return;
  Deadline deadline = tcp::deadline_after(wait_s());
  if (env_.rank == 0)
    accept_ranks(deadline);
  else
    connect_to_rank0(deadline);
}

Rendezvous::~Rendezvous() = default;

double Rendezvous::wait_s() const {
  return env_.rank == 0 ? timeout_s_ : timeout_s_ + std::min(timeout_s_ / 2, 1.0);
}

void Rendezvous::accept_ranks(Deadline deadline) {
  sockaddr_in addr{};
  std::string error;
  KILN_CHECK(tcp::resolve_ipv4(env_.master_addr, env_.master_port, addr, error), DistributedError,
             "rank 0 cannot resolve MASTER_ADDR '", env_.master_addr, "': ", error);
  if ((ntohl(addr.sin_addr.s_addr) >> 24) != 127) addr.sin_addr.s_addr = htonl(INADDR_ANY);
  int err = 0;
  tcp::Socket listener = tcp::listen_on(addr, env_.world_size, err);
  KILN_CHECK(listener.valid() || err != EADDRINUSE, DistributedError, "rank 0 cannot listen on ", where_,
             ": the port is in use; another job may be using it: choose another MASTER_PORT");
  KILN_CHECK(listener.valid(), DistributedError, "rank 0 cannot listen on ", where_, ": ", std::strerror(err));
  peers_.resize(static_cast<size_t>(env_.world_size));
  int missing = env_.world_size - 1;
  while (missing > 0) {
    tcp::Socket s = tcp::accept_one(listener.fd(), deadline);
    if (!s.valid()) {
      if (tcp::remaining_ms(deadline) > 0) {  // a failed accept (no file descriptors left ...): try again
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      std::vector<int> absent;
      for (int r = 1; r < env_.world_size; ++r)
        if (!peers_[static_cast<size_t>(r)].valid()) absent.push_back(r);
      fail(str_cat("rank 0 timed out after ", seconds(timeout_s_), " waiting for ", rank_list(absent),
                   " to join the rendezvous at ", where_, " (WORLD_SIZE=", env_.world_size, ")"));
    }
    Frame hello;
    Deadline hello_deadline = std::min(deadline, tcp::deadline_after(5));
    if (tcp::recv_frame(s.fd(), hello, hello_deadline) != Status::kOk || hello.kind != Kind::kHello ||
        hello.payload.size() < 8 || tcp::get_u32(hello.payload.data()) != kMagic)
      continue;  // not a rank of a Kiln job: drop the connection, keep waiting
    std::string refusal = admit(hello);
    if (!refusal.empty()) {
      std::vector<uint8_t> text(refusal.begin(), refusal.end());
      tcp::send_frame(s.fd(), Kind::kError, text, tcp::deadline_after(0.5));
      fail(refusal);
    }
    peers_[tcp::get_u32(hello.payload.data() + 8)] = std::move(s);
    --missing;
  }
  send_to_peers(Kind::kWelcome, {}, kHandshake, deadline);
}

std::string Rendezvous::admit(const Frame& hello) const {
  const uint8_t* p = hello.payload.data();
  uint32_t version = tcp::get_u32(p + 4);  // magic and version stay first in every version
  if (version != kVersion || hello.payload.size() != 16)
    return str_cat("a rank speaks rendezvous protocol ", version, ", rank 0 speaks ", kVersion,
                   ": run the same Kiln build on every rank");
  auto rank = static_cast<int32_t>(tcp::get_u32(p + 8)), world = static_cast<int32_t>(tcp::get_u32(p + 12));
  if (world != env_.world_size)
    return str_cat("rank ", rank, " says WORLD_SIZE=", world, ", rank 0 has ", env_.world_size,
                   ": every rank must be started with the same WORLD_SIZE");
  if (rank == 0 || (rank > 0 && rank < env_.world_size && peers_[static_cast<size_t>(rank)].valid()))
    return str_cat("two processes say RANK=", rank, ": give each process its own RANK");
  if (rank < 0 || rank >= env_.world_size)
    return str_cat("a process says RANK=", rank, ", outside [0, WORLD_SIZE=", env_.world_size, ")");
  return "";
}

void Rendezvous::connect_to_rank0(Deadline deadline) {
  sockaddr_in addr{};
  std::string error = "no attempt";
  KILN_CHECK(tcp::resolve_ipv4(env_.master_addr, env_.master_port, addr, error), DistributedError, "rank ",
             env_.rank, " cannot resolve MASTER_ADDR '", env_.master_addr, "': ", error);
  tcp::Socket s;
  while (!(s = tcp::connect_once(addr, deadline, error)).valid()) {  // rank 0 may not listen yet
    int left = tcp::remaining_ms(deadline);
    if (left == 0)
      fail(str_cat("rank ", env_.rank, " could not connect to rank 0 at ", where_, " within ", seconds(wait_s()),
                   " (", error, "): is rank 0 running, with the same MASTER_ADDR and MASTER_PORT?"));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(left, 50)));
  }
  peers_.push_back(std::move(s));
  std::vector<uint8_t> hello;
  for (uint32_t v : {kMagic, kVersion, static_cast<uint32_t>(env_.rank), static_cast<uint32_t>(env_.world_size)})
    tcp::put_u32(hello, v);
  send_to_rank0(Kind::kHello, hello, kHandshake, deadline);
  receive_from_rank0(Kind::kWelcome, kHandshake, deadline);
}

std::vector<std::vector<uint8_t>> Rendezvous::collect(Kind kind, const std::string& op, Deadline deadline) {
  std::vector<std::vector<uint8_t>> got(static_cast<size_t>(env_.world_size));
  std::vector<int> missing;
  for (int r = 1; r < env_.world_size; ++r) missing.push_back(r);
  while (!missing.empty()) {
    std::vector<pollfd> fds;
    for (int r : missing) fds.push_back({peers_[static_cast<size_t>(r)].fd(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), tcp::remaining_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(str_cat("rank 0: poll failed during ", op, ": ", std::strerror(errno)));
    if (n == 0)
      fail(str_cat("rank 0 timed out after ", seconds(timeout_s_), " in ", op, " waiting for ", rank_list(missing)));
    std::vector<int> still;
    for (size_t i = 0; i < fds.size(); ++i) {
      int r = missing[i];
      if (fds[i].revents == 0) {
        still.push_back(r);
        continue;
      }
      Frame f;
      check_status(tcp::recv_frame(fds[i].fd, f, deadline), r, op, false, 0);
      if (f.kind != kind)
        fail(str_cat("rank ", r, " is in ", operation_of(f), " while rank 0 is in ", op,
                     ": every rank must call the same operations in the same order"));
      got[static_cast<size_t>(r)] = std::move(f.payload);
    }
    missing = std::move(still);
  }
  return got;
}

void Rendezvous::check_status(Status s, int peer, const std::string& op, bool sending, size_t bytes) {
  if (s == Status::kOk) return;
  if (s == Status::kClosed) fail(str_cat("rank ", peer, " closed its connection during ", op));
  if (s == Status::kTimeout)
    fail(str_cat("rank ", env_.rank, " timed out after ", seconds(wait_s()), " in ", op,
                 sending ? " sending to rank " : " waiting for rank ", peer, peer == 0 ? " at " + where_ : ""));
  if (sending)
    fail(str_cat("rank ", env_.rank, ": ", bytes, " bytes in ", op, " exceed the 1 GiB a rendezvous message carries"));
  fail(str_cat("rank ", peer, " sent a malformed message during ", op));
}

void Rendezvous::send_to_peers(Kind kind, const std::vector<uint8_t>& payload, const std::string& op,
                               Deadline deadline) {
  for (int r = 1; r < env_.world_size; ++r)
    check_status(tcp::send_frame(peers_[static_cast<size_t>(r)].fd(), kind, payload, deadline), r, op, true,
                 payload.size());
}

void Rendezvous::send_to_rank0(Kind kind, const std::vector<uint8_t>& payload, const std::string& op,
                               Deadline deadline) {
  check_status(tcp::send_frame(peers_[0].fd(), kind, payload, deadline), 0, op, true, payload.size());
}

std::vector<uint8_t> Rendezvous::receive_from_rank0(Kind kind, const std::string& op, Deadline deadline) {
  Frame f;
  check_status(tcp::recv_frame(peers_[0].fd(), f, deadline), 0, op, false, 0);
  if (f.kind == Kind::kError) fail(std::string(f.payload.begin(), f.payload.end()) + " (reported by rank 0)");
  if (f.kind != kind)
    fail(str_cat("rank 0 is in ", operation_of(f), " while rank ", env_.rank, " is in ", op,
                 ": every rank must call the same operations in the same order"));
  return std::move(f.payload);
}

void Rendezvous::check_usable(const std::string& op) const {
  KILN_CHECK(failure_.empty(), DistributedError, "rank ", env_.rank, " cannot run ", op,
             ": the rendezvous failed earlier: ", failure_);
}

void Rendezvous::fail(const std::string& message) {
  failure_ = message;
  if (env_.rank == 0) {  // tell every rank still connected, so that none waits for its timeout
    std::vector<uint8_t> text(message.begin(), message.end());
    Deadline deadline = tcp::deadline_after(0.5);
    for (tcp::Socket& p : peers_)
      if (p.valid()) tcp::send_frame(p.fd(), Kind::kError, text, deadline);
  }
  peers_.clear();
  throw DistributedError(message);
}

std::vector<uint8_t> Rendezvous::broadcast(std::vector<uint8_t> bytes) {
  const std::string op = "broadcast";
  check_usable(op);
  if (env_.world_size == 1) return bytes;
  Deadline deadline = tcp::deadline_after(wait_s());
  if (env_.rank != 0) return receive_from_rank0(Kind::kBroadcast, op, deadline);
  send_to_peers(Kind::kBroadcast, bytes, op, deadline);
  return bytes;
}

void Rendezvous::barrier(const std::string& what) {
  const std::string op = "barrier '" + what + "'";
  check_usable(op);
  if (env_.world_size == 1) return;
  Deadline deadline = tcp::deadline_after(wait_s());
  std::vector<uint8_t> name(what.begin(), what.end());
  if (env_.rank != 0) {
    send_to_rank0(Kind::kBarrier, name, op, deadline);
    receive_from_rank0(Kind::kRelease, op, deadline);
    return;
  }
  std::vector<std::vector<uint8_t>> names = collect(Kind::kBarrier, op, deadline);
  for (int r = 1; r < env_.world_size; ++r)
    if (names[static_cast<size_t>(r)] != name)
      fail(str_cat("rank ", r, " is at barrier '", std::string(names[static_cast<size_t>(r)].begin(),
                   names[static_cast<size_t>(r)].end()), "', rank 0 at ", op));
  send_to_peers(Kind::kRelease, {}, op, deadline);
}

std::vector<std::vector<uint8_t>> Rendezvous::all_gather(const std::vector<uint8_t>& bytes) {
  const std::string op = "all_gather";
  check_usable(op);
  if (env_.world_size == 1) return {bytes};
  Deadline deadline = tcp::deadline_after(wait_s());
  if (env_.rank == 0) {
    std::vector<std::vector<uint8_t>> all = collect(Kind::kGather, op, deadline);
    all[0] = bytes;
    send_to_peers(Kind::kGathered, tcp::encode_blobs(all), op, deadline);
    return all;
  }
  send_to_rank0(Kind::kGather, bytes, op, deadline);
  std::vector<std::vector<uint8_t>> all;
  if (!tcp::decode_blobs(receive_from_rank0(Kind::kGathered, op, deadline), static_cast<size_t>(env_.world_size), all))
    fail(str_cat("rank 0 sent a malformed all_gather result to rank ", env_.rank));
  return all;
}

}  // namespace kiln::distributed
