// The host-side channel of a multi-process job: a small TCP rendezvous, like torch.distributed's
// TCPStore but only what a data-parallel job needs (hand out the NCCL unique id, barriers, small
// host blobs).
//
// Note [Rendezvous protocol]: rank 0 is the hub. It listens on MASTER_PORT (SO_REUSEADDR) — on the
// loopback address when MASTER_ADDR resolves to one, else on every IPv4 interface as TCPStore's
// server does, so that other machines reach it by any of its names — and accepts WORLD_SIZE - 1
// connections; every other rank connects, retrying until the timeout. Each sends a hello (magic
// number, protocol version, RANK, WORLD_SIZE); rank 0 refuses a different version or WORLD_SIZE, a
// RANK out of range and a RANK given twice, sending the reason back, and once every rank is in it
// welcomes them all. Operations then run over these connections, through rank 0: each message is a
// frame (kind, 4-byte big-endian length, payload). Every wait has the timeout (poll), sends never
// raise SIGPIPE (MSG_NOSIGNAL). The first failure is final: rank 0 sends its message to every rank
// still connected (which throw it too) and closes all connections; later calls throw at once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/distributed/environment.h"
#include "engine/distributed/tcp.h"

namespace kiln::distributed {

class Rendezvous {
 public:
  // Joins the rendezvous of env.world_size ranks at env.master_addr:env.master_port, waiting at most
  // timeout_s seconds for every rank to arrive. A world of one rank opens no socket. Errors:
  // ValueError for an invalid env (check_environment) or timeout_s <= 0; DistributedError naming
  // the ranks, the address and the port when the port is in use ("another job may be using it;
  // choose another MASTER_PORT"), MASTER_ADDR does not resolve, rank 0 cannot be reached in time,
  // ranks disagree ("rank 1 says WORLD_SIZE=3, rank 0 has 2"), a RANK is given twice or is out of
  // range, or ranks are missing at the timeout (rank 0 names them).
  Rendezvous(const DistributedEnvironment& env, double timeout_s);
  ~Rendezvous();  // closes the connections (peers then see this rank's connection closed)
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  double timeout_seconds() const { return timeout_s_; }

  // Collective operations (torch.distributed's broadcast_object_list / barrier / all_gather_object
  // on host bytes): every rank calls the same operations in the same order, one at a time (not
  // thread-safe). Each waits at most timeout_s seconds. DistributedError naming the rank and the
  // operation when a peer closed its connection ("rank 1 closed its connection during barrier
  // 'epoch 3'"), the timeout passed (naming the ranks waited for), ranks called different
  // operations, or an earlier operation failed. Payloads are at most 1 GiB (tcp::kMaxPayload).
  // Ranks other than 0 wait min(timeout_s / 2, 1 s) longer, here and in the constructor, so that
  // rank 0, which sees every rank, is the one to time out and tells them which ranks it waited for.

  // Rank 0's `bytes` on every rank (other ranks' arguments are ignored). Rank 0 returns once it
  // has sent them, the others once they have received them.
  std::vector<uint8_t> broadcast(std::vector<uint8_t> bytes);
  // Returns once every rank has entered a barrier; `what` names it in errors, and ranks in
  // barriers of different names fail ("rank 1 is at barrier 'a', rank 0 at barrier 'b'").
  void barrier(const std::string& what);
  // Every rank's `bytes`, indexed by rank (sizes may differ between ranks).
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& bytes);

 private:
  void accept_ranks(tcp::Deadline deadline);                  // rank 0
  void connect_to_rank0(tcp::Deadline deadline);              // other ranks
  std::string admit(const tcp::Frame& hello) const;           // rank 0: "" or why it is refused
  // Rank 0: one frame of `kind` from every other rank, indexed by rank.
  std::vector<std::vector<uint8_t>> collect(tcp::Kind kind, const std::string& op, tcp::Deadline deadline);
  void send_to_peers(tcp::Kind kind, const std::vector<uint8_t>& payload, const std::string& op,
                     tcp::Deadline deadline);                  // rank 0
  void send_to_rank0(tcp::Kind kind, const std::vector<uint8_t>& payload, const std::string& op,
                     tcp::Deadline deadline);
  std::vector<uint8_t> receive_from_rank0(tcp::Kind kind, const std::string& op, tcp::Deadline deadline);
  void check_usable(const std::string& op) const;
  double wait_s() const;  // the timeout of this rank's waits, in seconds
  // Nothing for kOk; else fails naming `peer` and `op` (sending: a send of `bytes` bytes, else a receive).
  void check_status(tcp::Status s, int peer, const std::string& op, bool sending, size_t bytes);
  [[noreturn]] void fail(const std::string& message);  // tells the peers (rank 0), closes, throws

  DistributedEnvironment env_;
  double timeout_s_;
  std::string where_;                 // "127.0.0.1:29500", for messages
  std::vector<tcp::Socket> peers_;    // rank 0: index r = rank r (0 unused); others: [0] = rank 0
  std::string failure_;               // the first error, once one happened
};

}  // namespace kiln::distributed
