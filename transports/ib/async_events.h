// What an HCA reports outside the completion queues: a QP or CQ that broke
// (QP fatal, access error, CQ overflow), a port that went down or came
// back, a device that died. Without a reader these are never seen: a QP
// in error only shows as flushed completions, a port down as a retry error
// half a minute later. One thread per opened device reads them (bounded
// waits on the context's async descriptor), says what happened (WARN,
// naming the device, port or QP) and fails the connection that owns a
// broken QP or CQ at once.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "transports/ib/verbs_loader.h"

namespace weft::ib {

// What a failed work completion most likely means (for the error message).
const char* completionHint(ibv_wc_status s);

class AsyncEventThread {
 public:
  using Failure = std::function<void(const std::string& message)>;

  // Starts reading ctx's events; needs v->getAsyncEvent and ackAsyncEvent.
  AsyncEventThread(const Verbs* v, ibv_context* ctx, std::string devName);
  ~AsyncEventThread();  // stops within one wait slice and joins
  AsyncEventThread(const AsyncEventThread&) = delete;
  AsyncEventThread& operator=(const AsyncEventThread&) = delete;

  // `fail` is called (from this thread) when the QP numbered qpn or the CQ
  // breaks; `owner` groups the registrations of one connection.
  void watchQp(const void* owner, uint32_t qpn, Failure fail);
  void watchCq(const void* owner, const ibv_cq* cq, Failure fail);
  // Drops owner's registrations; no callback of owner runs after it returns.
  void unwatch(const void* owner);
  // The last port event of `port` ("" none): error messages add it.
  std::string portNote(int port) const;

 private:
  void run();
  void handle(const ibv_async_event& ev);
  std::string eventName(ibv_event_type t) const;

  struct Watch {
    const void* owner;
    Failure fail;
  };
  const Verbs* v_;
  ibv_context* ctx_;
  std::string dev_;
  mutable std::mutex mu_;  // held while a callback runs, so unwatch waits for it
  std::map<uint32_t, Watch> qps_;
  std::map<const ibv_cq*, Watch> cqs_;
  std::map<int, std::string> portNotes_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace weft::ib
