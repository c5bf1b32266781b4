// One progress thread shared by many connections of a rank. A transport
// whose connections need polling (an RDMA completion queue and credit words
// that the network writes without waking anyone) gives each connection's
// progress to a service instead of a thread of its own: with a thread per
// connection direction a rank talking to 32 peers over 2 channels ran 128
// of them, mostly asleep, each one a stack and a wake-up to schedule.
//
// The thread polls every task in turn; when a whole pass moves nothing it
// backs off (spin, yield, then naps on its bell, which executors ring when
// they post), exactly as a single connection's proxy did. Tasks that wait
// on sockets (the socket transport) name them in idleWait(): the nap is
// then a poll() on all of them and on an eventfd the bell also wakes, so
// one thread serves every connection of a rank without polling in slices.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/util/doorbell.h"

namespace weft {

class ProxyTask {
 public:
  virtual ~ProxyTask() = default;
  // One non-blocking pass; true when it moved anything. An exception ends
  // the task: failed() gets it and progress() is not called again.
  virtual bool progress() = 0;
  virtual void failed(const std::exception& e) noexcept = 0;
  // Called when a whole pass moved nothing, before the service naps: adds
  // the descriptors whose readiness should end the nap to *fds and returns
  // the longest nap this task allows in ns (-1: no limit of its own).
  virtual int64_t idleWait(std::vector<pollfd>* fds) {
    (void)fds;
    return -1;
  }
  // True while something else moves this task's bytes (an executor that
  // reads and writes its sockets itself), so that a pass finding nothing
  // says nothing of when the next one will: when every task stands back
  // the service naps at once instead of yielding first, and its core goes
  // to the ranks. A service yielding for its whole window after each call
  // of a communicator kept one of two cores busy for milliseconds while
  // both ranks' executors shared the other.
  virtual bool standsBack() const { return false; }
};

class ProxyService {
 public:
  // `name` appears in the thread's name (top, gdb) and in log lines.
  // `sleepSliceNs`: the longest nap once idle, so completions that arrive
  // without a ring are seen within it.
  // `spin`: whether the service spins before it yields (false where a pass
  // is system calls rather than looks at memory). `logRank`: the rank the
  // thread's log lines name (-1: none). `yield`: whether it yields the core
  // before it naps (false: it naps, in poll() where tasks name descriptors,
  // as soon as a pass moves nothing; the socket transport's receiving
  // service where ranks outnumber cores, whose yields would only keep the
  // cores from the ranks that would send).
  ProxyService(std::string name, int64_t sleepSliceNs, bool spin = true, int logRank = -1, bool yield = true);
  ~ProxyService();  // stops and joins the thread; every task must be removed
  ProxyService(const ProxyService&) = delete;
  ProxyService& operator=(const ProxyService&) = delete;

  void add(ProxyTask* task);
  // Once this returns, `task` is not running and is never called again.
  void remove(ProxyTask* task);

  // Ring it when a task may have work (a slot posted or consumed).
  Doorbell* bell() { return &bell_; }
  size_t taskCount() const;

 private:
  void run(int logRank);
  bool pass();
  bool everyTaskStandsBack() const;
  // The nap once idle: on the bell alone, or in poll() on the tasks'
  // descriptors and the wake eventfd.
  void nap(uint32_t seen);

  std::string name_;
  WaitKnobs knobs_;
  Doorbell bell_;
  mutable std::mutex mu_;  // held by the thread during a pass
  std::vector<ProxyTask*> tasks_;
  std::vector<pollfd> fds_;  // the thread's own, reused by every nap
  int wakeFd_ = -1;          // eventfd written by ring(&bell_) while the thread naps
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace weft
