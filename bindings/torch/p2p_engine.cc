#include "bindings/torch/p2p_engine.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace weft::torch_backend {

namespace {

// How often a receive from any source asks the store whether a sender has
// counted a message it has not read yet.
constexpr auto kDoorbellPoll = std::chrono::milliseconds(5);
// A message's header: {tag, payload bytes}.
constexpr size_t kHeaderBytes = 2 * sizeof(int64_t);
// Ranks within a direction's communicator.
constexpr int kSenderRank = 0;
constexpr int kReceiverRank = 1;

int64_t nbytes(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

std::exception_ptr errorOf(const std::string& what) { return std::make_exception_ptr(std::runtime_error(what)); }

std::string messageOf(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

bool pollStore(c10d::Store& store, const std::string& key, std::chrono::steady_clock::time_point deadline) {
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(20))) {
    if (store.check({key})) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
  }
}

P2pEngine::P2pEngine(c10::intrusive_ptr<c10d::Store> store, int rank, int size, int timeoutMs)
    : store_(std::move(store)), rank_(rank), size_(size), timeoutMs_(timeoutMs) {
  for (int peer = 0; peer < size; peer++) {
    out_.push_back(std::make_unique<Direction>());
    in_.push_back(std::make_unique<Direction>());
  }
}

P2pEngine::~P2pEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  // Senders finish what is queued (each bounded by the timeout); receivers
  // stop between messages.
  for (auto* dirs : {&out_, &in_})
    for (auto& d : *dirs)
      if (d->thread.joinable()) d->thread.join();
  for (RecvOp& r : posted_)
    r.work->complete(errorOf("weft backend: the process group was destroyed before this receive completed"));
  posted_.clear();
  for (auto* dirs : {&out_, &in_})
    for (auto& d : *dirs) {
      if (!d->comm) continue;
      weftResult_t failed = weftSuccess;
      weftCommGetAsyncError(d->comm, &failed);
      if (failed != weftSuccess || !d->error.empty())
        weftCommAbort(d->comm);
      else
        weftCommDestroy(d->comm);
    }
}

std::string P2pEngine::key(int sender, int receiver, const char* what) const {
  return "weft_p2p/" + std::to_string(sender) + "-" + std::to_string(receiver) + "/" + what;
}

void P2pEngine::startThread(int peer, bool outgoing) {
  Direction& d = outgoing ? *out_[peer] : *in_[peer];
  if (d.thread.joinable()) return;
  if (outgoing)
    d.thread = std::thread([this, peer] { sendLoop(peer); });
  else
    d.thread = std::thread([this, peer] { recvLoop(peer); });
}

void P2pEngine::send(const c10::intrusive_ptr<WorkWeft>& work, const at::Tensor& tensor, int dst, int tag) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Direction& d = *out_[dst];
    if (d.error.empty()) {
      d.sends.push_back({work, tensor, tag});
      startThread(dst, true);
      cv_.notify_all();
      return;
    }
  }
  work->complete(errorOf(out_[dst]->error));
}

void P2pEngine::recv(const c10::intrusive_ptr<WorkWeft>& work, const at::Tensor& tensor, int src, int tag) {
  Unexpected message;
  int from = src;
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (src != kAnySource && !in_[src]->error.empty()) {
      error = in_[src]->error;
    } else if (!takeUnexpected(src, tag, &message, &from)) {
      posted_.push_back(
          {work, tensor, src, tag, false, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs_)});
      for (int peer = 0; peer < size_; peer++)
        if (peer != rank_ && (src == kAnySource || src == peer)) startThread(peer, false);
      cv_.notify_all();
      return;
    }
  }
  if (!error.empty()) {
    work->complete(errorOf(error));
    return;
  }
  deliver(work, tensor, from, tag, message.bytes);
}

void P2pEngine::deliver(const c10::intrusive_ptr<WorkWeft>& work, const at::Tensor& tensor, int from, int64_t tag,
                        const at::Tensor& bytes) {
  if (bytes.numel() != nbytes(tensor)) {
    work->complete(errorOf("weft backend: recv of " + std::to_string(nbytes(tensor)) + " bytes from rank " +
                           std::to_string(from) + " (tag " + std::to_string(tag) + ") matched a message of " +
                           std::to_string(bytes.numel()) + " bytes"));
    return;
  }
  if (bytes.numel() > 0) memcpy(tensor.data_ptr(), bytes.data_ptr(), bytes.numel());
  work->setSourceRank(from);
  work->complete(nullptr);
}

bool P2pEngine::takeUnexpected(int src, int64_t tag, Unexpected* out, int* from) {
  int best = -1;
  std::deque<Unexpected>::iterator bestIt;
  for (int peer = 0; peer < size_; peer++) {
    if (src != kAnySource && peer != src) continue;
    auto& list = in_[peer]->unexpected;
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (it->tag != tag) continue;
      if (best < 0 || it->arrival < bestIt->arrival) {
        best = peer;
        bestIt = it;
      }
      break;  // the first with this tag is the oldest from this sender
    }
  }
  if (best < 0) return false;
  *out = std::move(*bestIt);
  *from = best;
  in_[best]->unexpected.erase(bestIt);
  return true;
}

void P2pEngine::publishId(int receiver, Direction& d) {
  if (d.idPublished) return;
  weftUniqueId id;
  weftResult_t r = weftGetUniqueId(&id);
  if (r != weftSuccess)
    throw std::runtime_error(std::string("weft backend: weftGetUniqueId failed: ") + weftGetErrorString(r));
  const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
  store_->set(key(rank_, receiver, "id"), std::vector<uint8_t>(bytes, bytes + sizeof(id)));
  d.idPublished = true;
}

weftComm_t P2pEngine::directionComm(int sender, int receiver, Direction& d) {
  if (d.comm) return d.comm;
  weftUniqueId id;
  const std::string idKey = key(sender, receiver, "id");
  if (sender == rank_) publishId(receiver, d);
  if (!pollStore(*store_, idKey, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs_)))
    throw std::runtime_error("weft backend: rank " + std::to_string(sender) + " did not start sending to rank " +
                             std::to_string(receiver) + " within " + std::to_string(timeoutMs_) + " ms");
  std::vector<uint8_t> bytes = store_->get(idKey);
  TORCH_CHECK(bytes.size() == sizeof(id), "weft backend: the store holds a point-to-point id of ", bytes.size(),
              " bytes, expected ", sizeof(id));
  memcpy(&id, bytes.data(), sizeof(id));
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs_;
  config.commName = "torch-p2p";
  weftComm_t comm = nullptr;
  weftResult_t r = weftCommInitRankConfig(&comm, 2, id, sender == rank_ ? kSenderRank : kReceiverRank, &config);
  if (r != weftSuccess)
    throw std::runtime_error("weft backend: connecting rank " + std::to_string(sender) + " to rank " +
                             std::to_string(receiver) + " for send/recv failed: " + weftGetErrorString(r) + " (" +
                             weftGetLastError(nullptr) + ")");
  d.comm = comm;
  return comm;
}

void P2pEngine::failDirection(int peer, bool outgoing, const std::string& why) {
  std::vector<c10::intrusive_ptr<WorkWeft>> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Direction& d = outgoing ? *out_[peer] : *in_[peer];
    d.error = why;
    if (outgoing) {
      for (SendOp& op : d.sends) failed.push_back(op.work);
      d.sends.clear();
    } else {
      for (auto it = posted_.begin(); it != posted_.end();) {
        if (it->src == peer && !it->taken) {
          failed.push_back(it->work);
          it = posted_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  for (auto& w : failed) w->complete(errorOf(why));
}

void P2pEngine::sendOne(int dst, const SendOp& op) {
  Direction& d = *out_[dst];
  // The id first, then the count, then the join: a receive from any source
  // joins only once it sees the count, and the join waits for both ends.
  publishId(dst, d);
  store_->add(key(rank_, dst, "sent"), 1);
  directionComm(rank_, dst, d);
  int64_t header[2] = {op.tag, nbytes(op.tensor)};
  auto fail = [&](weftResult_t r, const char* what) {
    throw std::runtime_error(std::string("weft backend: send to rank ") + std::to_string(dst) + " (" + what +
                             ") failed: " + weftGetErrorString(r) + " (" + weftGetLastError(d.comm) + ")");
  };
  weftResult_t r = weftSend(header, kHeaderBytes, weftUint8, kReceiverRank, d.comm, nullptr);
  if (r != weftSuccess) fail(r, "header");
  if (header[1] > 0) {
    r = weftSend(op.tensor.data_ptr(), header[1], weftUint8, kReceiverRank, d.comm, nullptr);
    if (r != weftSuccess) fail(r, "payload");
  }
}

void P2pEngine::sendLoop(int dst) {
  Direction& d = *out_[dst];
  for (;;) {
    SendOp op;
    {
      // Idle waiting is unbounded on purpose: nothing is in flight.
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !d.sends.empty(); });
      if (d.sends.empty()) return;
      op = d.sends.front();
      d.sends.pop_front();
    }
    std::exception_ptr e;
    try {
      sendOne(dst, op);
    } catch (...) {
      e = std::current_exception();
    }
    if (e) failDirection(dst, true, messageOf(e));
    op.work->complete(e);
  }
}

P2pEngine::Want P2pEngine::want(int src) const {
  if (!in_[src]->error.empty()) return Want::kNo;
  bool any = false;
  for (const RecvOp& r : posted_) {
    if (r.taken) continue;
    if (r.src == src) return Want::kYes;
    if (r.src == kAnySource) any = true;
  }
  return any ? Want::kIfCounted : Want::kNo;
}

int64_t P2pEngine::countedBy(int src) {
  const std::string k = key(src, rank_, "sent");
  if (!store_->check({k})) return 0;
  std::vector<uint8_t> v = store_->get(k);
  return std::stoll(std::string(v.begin(), v.end()));
}

void P2pEngine::expireAnySource(std::unique_lock<std::mutex>& lock) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<RecvOp> expired;
  for (auto it = posted_.begin(); it != posted_.end();) {
    if (it->src == kAnySource && !it->taken && it->deadline <= now) {
      expired.push_back(*it);
      it = posted_.erase(it);
    } else {
      ++it;
    }
  }
  if (expired.empty()) return;
  lock.unlock();
  for (RecvOp& op : expired)
    op.work->complete(errorOf("weft backend: recv from any source (tag " + std::to_string(op.tag) +
                              ") on rank " + std::to_string(rank_) + ": Timed out waiting " +
                              std::to_string(timeoutMs_) + " ms: no rank sent a message with this tag"));
  lock.lock();
}

void P2pEngine::recvLoop(int src) {
  Direction& d = *in_[src];
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    Want w = want(src);
    if (stopping_) return;
    if (w == Want::kNo) {
      cv_.wait(lock);  // idle: nothing posted that this sender could fill
      continue;
    }
    if (w == Want::kIfCounted) {
      uint64_t read = d.headersRead;
      lock.unlock();
      int64_t counted = 0;
      try {
        counted = countedBy(src);
      } catch (...) {
        counted = 0;  // the store is unreachable: the receive times out on its own bound
      }
      lock.lock();
      if (counted <= static_cast<int64_t>(read)) {
        expireAnySource(lock);
        cv_.wait_for(lock, kDoorbellPoll);
        continue;
      }
    }
    lock.unlock();
    receiveOne(src);
    lock.lock();
  }
}

void P2pEngine::recvBytes(int src, Direction& d, void* buf, int64_t bytes) {
  directionComm(src, rank_, d);
  weftResult_t r = weftRecv(buf, bytes, weftUint8, kSenderRank, d.comm, nullptr);
  if (r != weftSuccess)
    throw std::runtime_error(std::string("weft backend: recv from rank ") + std::to_string(src) + " failed: " +
                             weftGetErrorString(r) + " (" + weftGetLastError(d.comm) + ")");
}

P2pEngine::RecvOp P2pEngine::claim(int src, int64_t tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_[src]->headersRead++;
  for (RecvOp& op : posted_) {
    if (op.taken || op.tag != tag || (op.src != src && op.src != kAnySource)) continue;
    op.taken = true;
    return op;
  }
  return RecvOp{};
}

P2pEngine::RecvOp P2pEngine::settle(int src, const c10::intrusive_ptr<WorkWeft>& work, int64_t tag,
                                     const at::Tensor& buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!work) {
    if (!buffer.defined()) return RecvOp{};
    // A receive posted while this payload was on its way found no
    // unexpected message then and waits on the next header: it takes this one.
    for (auto it = posted_.begin(); it != posted_.end(); ++it)
      if (!it->taken && it->tag == tag && (it->src == src || it->src == kAnySource)) {
        RecvOp late = *it;
        posted_.erase(it);
        return late;
      }
    in_[src]->unexpected.push_back({tag, buffer, arrivals_++});
    return RecvOp{};
  }
  for (auto it = posted_.begin(); it != posted_.end(); ++it)
    if (it->work == work) {
      posted_.erase(it);
      break;
    }
  return RecvOp{};
}

void P2pEngine::receiveOne(int src) {
  Direction& d = *in_[src];
  RecvOp match;
  try {
    int64_t header[2] = {0, 0};
    recvBytes(src, d, header, kHeaderBytes);
    const int64_t tag = header[0], bytes = header[1];
    match = claim(src, tag);
    const bool fits = match.work && nbytes(match.tensor) == bytes;
    // A message no posted receive takes (or takes at the wrong size) still
    // has to leave the connection: it lands in a buffer of its own.
    at::Tensor buffer = fits ? match.tensor : at::empty({bytes}, at::kByte);
    if (bytes > 0) recvBytes(src, d, buffer.data_ptr(), bytes);
    RecvOp late = settle(src, match.work, tag, buffer);
    if (!match.work) {
      if (late.work) deliver(late.work, late.tensor, src, tag, buffer);
      return;
    }
    match.work->setSourceRank(src);
    match.work->complete(fits ? nullptr
                              : errorOf("weft backend: recv of " + std::to_string(nbytes(match.tensor)) +
                                        " bytes from rank " + std::to_string(src) + " (tag " + std::to_string(tag) +
                                        ") matched a message of " + std::to_string(bytes) + " bytes"));
  } catch (...) {
    std::exception_ptr e = std::current_exception();
    if (match.work) {
      settle(src, match.work, 0, at::Tensor());
      match.work->complete(e);
    }
    failDirection(src, false, messageOf(e));
  }
}

}  // namespace weft::torch_backend
