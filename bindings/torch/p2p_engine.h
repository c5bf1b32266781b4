// Point-to-point (send, recv, recv from any source) for one process group,
// with gloo's semantics on top of weft's NCCL-like ones.
//
// weft pairs sends and receives in call order on a communicator whose
// operations never overlap, so issuing torch's sends and receives on the
// group's communicator, in issue order, deadlocks where gloo does not (two
// ranks that both isend before they recv; pipeline stages) and cannot match
// tags. Here every direction between two ranks (sender -> receiver) gets a
// two-rank weft communicator of its own, made on first use through the store,
// and a thread on each end:
// - the sender's thread sends, in issue order, a header {tag, bytes} and then
//   the payload, after counting the message in the store (the "doorbell"
//   that a receive from any source looks at);
// - the receiver's thread reads a header only while a posted receive could
//   take it (one from that sender, or from any source when the doorbell says
//   a message is on its way), then the payload: into the posted tensor whose
//   tag matches (the first posted, for equal tags), or else into a buffer
//   that a later receive with that tag takes (an unexpected message).
// Directions never wait on each other, so a receive is never stuck behind a
// send of the same rank, and collectives run on the group's own communicator.
// Every wait is bounded by the group's timeout.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bindings/torch/work_weft.h"
#include "weft/weft.h"

namespace weft::torch_backend {

// Waits until `key` exists in `store` or `deadline` passes (false then). It
// asks with check() every few ms instead of the store's blocking wait/get:
// a TCPStore client holds its connection for the whole of a blocking call,
// so one thread waiting there would stall every other thread of the process
// that uses the store (a sender publishing the very key waited for).
bool pollStore(c10d::Store& store, const std::string& key, std::chrono::steady_clock::time_point deadline);

class P2pEngine {
 public:
  static constexpr int kAnySource = -1;

  P2pEngine(c10::intrusive_ptr<c10d::Store> store, int rank, int size, int timeoutMs);
  ~P2pEngine();  // ends every direction's thread (each bounded by the timeout)
  P2pEngine(const P2pEngine&) = delete;
  P2pEngine& operator=(const P2pEngine&) = delete;

  // `tensor` is CPU, dense and contiguous (checked by the caller).
  void send(const c10::intrusive_ptr<WorkWeft>& work, const at::Tensor& tensor, int dst, int tag);
  // src kAnySource: the first message with `tag` from any peer.
  void recv(const c10::intrusive_ptr<WorkWeft>& work, const at::Tensor& tensor, int src, int tag);

 private:
  struct SendOp {
    c10::intrusive_ptr<WorkWeft> work;
    at::Tensor tensor;
    int64_t tag;
  };
  struct RecvOp {
    c10::intrusive_ptr<WorkWeft> work;
    at::Tensor tensor;
    int src;
    int64_t tag;
    bool taken = false;  // a sender's header named it; its payload is on the way
    std::chrono::steady_clock::time_point deadline;  // a receive from any source fails then
  };
  struct Unexpected {
    int64_t tag;
    at::Tensor bytes;  // uint8
    uint64_t arrival;  // order across senders, for receives from any source
  };
  // One direction between this rank and a peer, and the thread that serves it.
  struct Direction {
    weftComm_t comm = nullptr;
    bool idPublished = false;
    std::string error;  // set once the direction failed: every later op fails with it
    std::thread thread;
    std::deque<SendOp> sends;    // outgoing only
    uint64_t headersRead = 0;    // incoming only
    std::deque<Unexpected> unexpected;  // incoming only
  };

  void sendLoop(int dst);
  void recvLoop(int src);
  // Sender side: one message (doorbell, header, payload); throws on failure.
  void sendOne(int dst, const SendOp& op);
  // Receiver side: reads one header from src and its payload into the
  // posted receive it matches or an unexpected buffer; a weft failure fails
  // the direction.
  void receiveOne(int src);
  void recvBytes(int src, Direction& d, void* buf, int64_t bytes);  // throws on failure
  // Marks the first posted receive that a message {src, tag} fills as taken
  // and returns a copy of it (work null: none).
  RecvOp claim(int src, int64_t tag);
  // After the payload: drops the finished receive; or, for a message that no
  // posted receive claimed, returns (and removes) a receive posted since
  // then that takes it, or else files it as unexpected (work null).
  RecvOp settle(int src, const c10::intrusive_ptr<WorkWeft>& work, int64_t tag, const at::Tensor& buffer);
  // Completes a receive with a message that arrived before it was matched
  // (a size mismatch fails it).
  void deliver(const c10::intrusive_ptr<WorkWeft>& work, const at::Tensor& tensor, int from, int64_t tag,
               const at::Tensor& bytes);
  // Whether recvLoop(src) should read a header now (mutex_ held): kYes for a
  // posted receive from src, kIfCounted for one from any source (read only
  // if src's doorbell count is ahead of the headers read).
  enum class Want { kNo, kYes, kIfCounted };
  Want want(int src) const;
  int64_t countedBy(int src);  // src's doorbell count for this rank, from the store
  // Fails the receives from any source that no sender has taken by their
  // deadline (the group's timeout), as gloo's would time out; `lock` holds mutex_.
  void expireAnySource(std::unique_lock<std::mutex>& lock);
  // Takes a message of `src` (or any sender) with `tag` from the unexpected lists (mutex_ held).
  bool takeUnexpected(int src, int64_t tag, Unexpected* out, int* from);
  // Sender side: creates the direction's unique id and puts it in the store (once).
  void publishId(int receiver, Direction& d);
  // Joins (publishing the id first, when this rank sends) the direction's communicator.
  weftComm_t directionComm(int sender, int receiver, Direction& d);
  void failDirection(int peer, bool outgoing, const std::string& why);
  void startThread(int peer, bool outgoing);
  std::string key(int sender, int receiver, const char* what) const;

  c10::intrusive_ptr<c10d::Store> store_;
  const int rank_;
  const int size_;
  const int timeoutMs_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t arrivals_ = 0;
  std::vector<std::unique_ptr<Direction>> out_;  // by destination
  std::vector<std::unique_ptr<Direction>> in_;   // by source
  std::deque<RecvOp> posted_;                    // receives not yet complete, in issue order
};

}  // namespace weft::torch_backend
