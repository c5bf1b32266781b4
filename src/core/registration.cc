#include "src/core/registration.h"

#include <sys/random.h>

#include <cstdio>
#include <cstring>
#include <iterator>

#include "src/util/error.h"
#include "src/util/log.h"
#include "transports/shm/shm_segment.h"

namespace weft {
namespace {

constexpr size_t kPage = 4096;
constexpr uint64_t kRegMagic = 0x7265676973746572ull;

struct Block {
  uint64_t id = 0;
  ShmSegment seg;
  int registrations = 0;  // over every communicator
};

// The process's weftMemAlloc allocations, by base address, and every live
// registration handle with its communicator.
std::mutex g_mu;
std::map<uintptr_t, std::shared_ptr<Block>>& blocks() {
  static auto* m = new std::map<uintptr_t, std::shared_ptr<Block>>;
  return *m;
}
std::map<const void*, weftComm*>& liveHandles() {
  static auto* m = new std::map<const void*, weftComm*>;
  return *m;
}

// The allocation holding [p, p+bytes) whole, or null (under g_mu). A range
// that starts inside one and runs past its end is an error.
Block* blockHolding(uintptr_t p, size_t bytes) {
  auto& m = blocks();
  auto it = m.upper_bound(p);
  if (it == m.begin()) return nullptr;
  Block* b = std::prev(it)->second.get();
  const uintptr_t base = std::prev(it)->first;
  if (p >= base + b->seg.size()) return nullptr;
  if (bytes > base + b->seg.size() - p)
    raise(weftInvalidArgument, "weftCommRegister: [%p, +%zu) runs past the end of its weftMemAlloc allocation (%zu bytes at %p)",
          reinterpret_cast<void*>(p), bytes, b->seg.size(), reinterpret_cast<void*>(base));
  return b;
}

uint64_t randomId() {
  uint64_t id = 0;
  if (getrandom(&id, sizeof(id), 0) != sizeof(id)) raiseErrno("getrandom");
  return id | 1;
}

}  // namespace

struct Registrations::Reg {
  uint64_t magic = kRegMagic;
  uintptr_t base = 0;
  size_t bytes = 0;
  BufName name;  // reach Segment or Process; addr = base
  int pins = 0;   // calls in flight on it
};

void* memAlloc(size_t bytes) {
  if (bytes == 0) raise(weftInvalidArgument, "weftMemAlloc: size is 0");
  if (bytes > (size_t(1) << 48)) raise(weftInvalidArgument, "weftMemAlloc: size %zu is too large", bytes);
  auto b = std::make_shared<Block>();
  b->seg = ShmSegment::create("weft-mem", (bytes + kPage - 1) / kPage * kPage);
  b->id = randomId();
  void* p = b->seg.data();
  std::lock_guard<std::mutex> lock(g_mu);
  blocks()[reinterpret_cast<uintptr_t>(p)] = std::move(b);
  return p;
}

void memFree(void* p) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = blocks().find(reinterpret_cast<uintptr_t>(p));
  if (it == blocks().end())
    raise(weftInvalidArgument, "weftMemFree: %p was not returned by weftMemAlloc (or was freed already)", p);
  if (it->second->registrations > 0)
    raise(weftInvalidUsage, "weftMemFree: %p is still registered with %d communicator registration(s): deregister it first",
          p, it->second->registrations);
  it->second->seg.unlink();  // the name goes now; peers' mappings stay valid
  blocks().erase(it);        // unmaps, or the last holdAllocation reference does
}

std::shared_ptr<const void> holdAllocation(uint64_t segId, uint64_t addr, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& m = blocks();
  auto it = m.upper_bound(uintptr_t(addr));
  if (it == m.begin()) return nullptr;
  --it;
  const std::shared_ptr<Block>& b = it->second;
  if (b->id != segId || addr - it->first > b->seg.size() || bytes > b->seg.size() - (addr - it->first)) return nullptr;
  return b;
}

Registrations::Registrations(weftComm* comm) : comm_(comm) {}

Registrations::~Registrations() {
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> g(g_mu);
  for (auto& [base, r] : byBase_) {
    liveHandles().erase(r.get());
    if (r->name.reach != BufReach::Segment) continue;
    auto it = blocks().find(base - r->name.offset);
    if (it != blocks().end()) it->second->registrations--;
  }
}

void* Registrations::add(void* buff, size_t bytes) {
  if (!buff) raise(weftInvalidArgument, "weftCommRegister: buffer is NULL");
  if (bytes == 0) raise(weftInvalidArgument, "weftCommRegister: size is 0");
  const uintptr_t p = reinterpret_cast<uintptr_t>(buff);
  if (p + bytes < p) raise(weftInvalidArgument, "weftCommRegister: [%p, +%zu) wraps around", buff, bytes);
  std::lock_guard<std::mutex> lock(mu_);
  auto next = byBase_.lower_bound(p);
  if (next != byBase_.end() && next->first < p + bytes)
    raise(weftInvalidArgument, "weftCommRegister: [%p, +%zu) overlaps the registration at %p (%zu bytes)", buff, bytes,
          reinterpret_cast<void*>(next->first), next->second->bytes);
  if (next != byBase_.begin() && std::prev(next)->first + std::prev(next)->second->bytes > p) {
    const auto& prev = *std::prev(next);
    raise(weftInvalidArgument, "weftCommRegister: [%p, +%zu) overlaps the registration at %p (%zu bytes)", buff, bytes,
          reinterpret_cast<void*>(prev.first), prev.second->bytes);
  }
  auto r = std::make_unique<Reg>();
  r->base = p;
  r->bytes = bytes;
  r->name.addr = p;
  r->name.reach = BufReach::Process;
  std::lock_guard<std::mutex> g(g_mu);
  if (Block* b = blockHolding(p, bytes)) {
    const uintptr_t segBase = reinterpret_cast<uintptr_t>(b->seg.data());
    r->name.reach = BufReach::Segment;
    r->name.segId = b->id;
    r->name.segBytes = b->seg.size();
    r->name.offset = p - segBase;
    snprintf(r->name.name, sizeof(r->name.name), "%s", b->seg.name().c_str());
    b->registrations++;
  }
  void* handle = r.get();
  liveHandles()[handle] = comm_;
  byBase_[p] = std::move(r);
  return handle;
}

void Registrations::remove(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  std::lock_guard<std::mutex> g(g_mu);
  auto live = liveHandles().find(handle);
  if (live == liveHandles().end())
    raise(weftInvalidArgument, "weftCommDeregister: %p is not a registration handle (deregistered already?)", handle);
  if (live->second != comm_)
    raise(weftInvalidArgument, "weftCommDeregister: handle %p was registered on another communicator", handle);
  auto* r = static_cast<Reg*>(handle);
  if (r->pins > 0)
    raise(weftInvalidUsage, "weftCommDeregister: the buffer at %p is in use by a collective in flight", reinterpret_cast<void*>(r->base));
  if (r->name.reach == BufReach::Segment) {
    auto it = blocks().find(r->base - r->name.offset);
    if (it != blocks().end()) it->second->registrations--;
  }
  liveHandles().erase(live);
  r->magic = 0;
  byBase_.erase(r->base);
}

Registrations::Reg* Registrations::holding(uintptr_t p, size_t bytes) {
  auto it = byBase_.upper_bound(p);
  if (it == byBase_.begin()) return nullptr;
  Reg* r = std::prev(it)->second.get();
  return p - r->base <= r->bytes && bytes <= r->bytes - (p - r->base) ? r : nullptr;
}

BufName Registrations::pinned(const void* p, size_t bytes) {
  BufName n;
  if (!p || bytes == 0) return n;
  std::lock_guard<std::mutex> lock(mu_);
  Reg* r = holding(reinterpret_cast<uintptr_t>(p), bytes);
  if (!r) return n;
  r->pins++;
  n = r->name;
  const uint64_t skip = reinterpret_cast<uintptr_t>(p) - r->base;
  n.addr = reinterpret_cast<uintptr_t>(p);
  n.offset += skip;
  return n;
}

void Registrations::unpin(const BufName& n) {
  if (n.reach == BufReach::None) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (Reg* r = holding(n.addr, 1)) r->pins--;
}

size_t Registrations::count() {
  std::lock_guard<std::mutex> lock(mu_);
  return byBase_.size();
}

PinnedBuffers::PinnedBuffers(Registrations& regs, const void* send, size_t sendBytes, const void* recv,
                             size_t recvBytes)
    : regs_(regs), send_(regs.pinned(send, sendBytes)), recv_(regs.pinned(recv, recvBytes)) {}

PinnedBuffers::~PinnedBuffers() {
  regs_.unpin(send_);
  regs_.unpin(recv_);
}

}  // namespace weft
