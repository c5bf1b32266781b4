#include "transports/p2p/p2p_transport.h"
#include "transports/p2p/p2p_wire.h"

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "src/util/error.h"
#include "src/util/local_handles.h"
#include "src/util/log.h"

#if WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "src/exec/cuda/launch_policy.h"
#include "src/exec/cuda/runtime.h"
#include "src/util/settings.h"
#endif

namespace weft {
namespace {

#if WEFT_HAVE_CUDA

using namespace p2p_wire;

struct P2pOffer : P2pOfferFields {
  cudaIpcMemHandle_t handle{};
};

// The credit words of this process's sending ends, kP2pCreditStride bytes
// apart in blocks of kP2pCreditBlockBytes per GPU: IPC maps whole blocks,
// so one allocation per word would cost a block each. Blocks live as long as
// the process (freed by the driver at exit; a CUDA call from a static
// destructor could run after the runtime is gone); words are reused.
class CreditWords {
 public:
  struct Word {
    char* block = nullptr;
    uint64_t offset = 0;
  };
  static CreditWords& process() {
    static auto* words = new CreditWords;  // never destroyed, see above
    return *words;
  }
  // A zeroed word on the current GPU `device`.
  Word take(int device) {
    Word w;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<Word>& free = free_[device];
      if (free.empty()) {
        void* block = nullptr;
        WEFT_CUDA_CHECK(cudaMalloc(&block, kP2pCreditBlockBytes));
        for (uint64_t at = kP2pCreditBlockBytes; at >= kP2pCreditStride; at -= kP2pCreditStride)
          free.push_back({static_cast<char*>(block), at - kP2pCreditStride});
      }
      w = free.back();
      free.pop_back();
    }
    cuda::fillDeviceNow(w.block + w.offset, kP2pCreditStride, nullptr, 0);
    return w;
  }
  void give(int device, Word w) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[device].push_back(w);
  }

 private:
  std::mutex mu_;
  std::map<int, std::vector<Word>> free_;
};

bool sameProcess(const ConnectContext& ctx, int peer) {
  return ctx.peer(peer).processHash == ctx.self().processHash && ctx.peer(peer).pid == ctx.self().pid;
}

class P2pConnection : public Connection {
 public:
  FifoEnd end;
  bool sending = false;
  bool sameProc = false;
  int device = -1;
  void* owned = nullptr;   // receiver: cudaMalloc'd FIFO
  void* opened = nullptr;  // sender: IPC mapping of the FIFO; receiver: of the credit word's block
  uint64_t token = 0;      // what this end offered in this process (FIFO or credit word's block)
  CreditWords::Word credit;  // sender: its credit word

  ~P2pConnection() override {
    local_handles::withdraw(token);
    if (device >= 0) (void)cudaSetDevice(device);
    if (opened) (void)cudaIpcCloseMemHandle(opened);
    if (owned) (void)cudaFree(owned);
    if (credit.block) CreditWords::process().give(device, credit);
    (void)cudaGetLastError();
  }
  FifoEnd fifo() const override { return end; }
  std::string describe() const override { return sameProc ? "P2P/direct" : "P2P/IPC"; }
};

class P2pTransport : public Transport {
 public:
  const char* name() const override { return "P2P"; }

  bool canConnect(const ConnectContext& ctx, int peer, std::string* why) const override {
    const PeerInfo& me = ctx.self();
    const PeerInfo& other = ctx.peer(peer);
    if (settings::get(settings::kP2pDisable)) {
      *why = "WEFT_P2P_DISABLE=1";
      return false;
    }
    if (me.hostHash != other.hostHash) {
      *why = "hosts differ";
      return false;
    }
    if (me.cudaDev < 0 || other.cudaDev < 0) {
      *why = "no CUDA device on rank " + std::to_string(me.cudaDev < 0 ? me.rank : peer);
      return false;
    }
    if (!cuda::gpuAvailable()) {
      *why = "no usable GPU in this process";
      return false;
    }
    if (me.cudaDev == other.cudaDev) {
      *why = "same GPU";
      return true;
    }
    // Device ordinals are compared as this process numbers them: ranks of
    // one host are expected to see the same CUDA_VISIBLE_DEVICES.
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, me.cudaDev, other.cudaDev) != cudaSuccess || !can) {
      (void)cudaGetLastError();
      *why = "GPU " + std::to_string(me.cudaDev) + " cannot access GPU " + std::to_string(other.cudaDev);
      return false;
    }
    *why = "GPUs " + std::to_string(me.cudaDev) + " and " + std::to_string(other.cudaDev) + " have peer access";
    return true;
  }

  std::unique_ptr<Connection> connectRecv(ConnectContext& ctx, int peer, uint64_t tag) override {
    auto c = std::make_unique<P2pConnection>();
    c->sameProc = sameProcess(ctx, peer);
    c->device = ctx.self().cudaDev;
    if (c->device < 0) raise(weftInvalidUsage, "p2p: rank %d has no CUDA device", ctx.rank);
    cuda::DeviceGuard guard(c->device);
    const size_t bytes = fifoBytes(ctx.geometry.nSlots, ctx.geometry.slotBytes);
    cuda::countDeviceSetup();  // connecting: the allocation and copies below may synchronise
    WEFT_CUDA_CHECK(cudaMalloc(&c->owned, bytes));
    // The header is built on the host (fifoInit validates the geometry) and
    // copied into place. The slots start zeroed: device LL reads a zero
    // line as the flag of the piece before a slot's first (device_layout.h).
    std::vector<char> header(fifoBytes(ctx.geometry.nSlots, ctx.geometry.slotBytes) -
                             size_t(ctx.geometry.nSlots) * ctx.geometry.slotBytes);
    FifoHeader* h = fifoInit(header.data(), ctx.geometry.nSlots, ctx.geometry.slotBytes);
    cuda::fillDeviceNow(c->owned, bytes, header.data(), header.size());
    P2pOffer offer;
    offer.sameProcess = c->sameProc;
    offer.bytes = bytes;
    offer.dataOffset = h->dataOffset;
    offer.device = c->device;
    // The registry's reference is a no-op owner: the receiver frees the FIFO
    // (device memory cannot outlive its context), so it withdraws the token.
    if (c->sameProc) offer.token = c->token = local_handles::publish(std::shared_ptr<void>(c->owned, [](void*) {}));
    else WEFT_CUDA_CHECK(cudaIpcGetMemHandle(&offer.handle, c->owned));
    c->end.attach(static_cast<FifoHeader*>(c->owned), static_cast<char*>(c->owned) + h->dataOffset, ctx.geometry);
    ctx.bootstrap->send(peer, tag, &offer, sizeof(offer));
    // Both ends connect their edges in one global order (Connections sorts
    // them), so waiting here for the sender's answer cannot deadlock.
    P2pOffer answer;
    ctx.bootstrap->recv(peer, tag, &answer, sizeof(answer));
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    weftResult_t code = weftSuccess;
    if (const std::string bad = p2pCreditProblem(answer, c->sameProc, devices, &code); !bad.empty())
      raise(code, "p2p: rank %d answered with %s", peer, bad.c_str());
    char* block = static_cast<char*>(openPeerMemory(*c, answer, peer, "credit word"));
    c->end.credit = reinterpret_cast<uint32_t*>(block + answer.dataOffset);
    return c;
  }

  // The peer's GPU memory an offer or answer names (already checked): the
  // same process's pointer (with peer access when the GPUs differ) or an
  // IPC mapping.
  static void* openPeerMemory(P2pConnection& c, const P2pOffer& o, int peer, const char* what) {
    if (c.sameProc) {
      void* mem = local_handles::take(o.token).get();
      if (!mem) raise(weftRemoteError, "p2p: rank %d says it is a thread of this process, but its %s is not here", peer, what);
      if (o.device != c.device) {
        cudaError_t e = cudaDeviceEnablePeerAccess(o.device, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
        else WEFT_CUDA_CHECK(e);
      }
      return mem;
    }
    WEFT_CUDA_CHECK(cudaIpcOpenMemHandle(&c.opened, o.handle, cudaIpcMemLazyEnablePeerAccess));
    return c.opened;
  }

  // The sender's credit word: zeroed (consumed starts at 0), offered to the
  // receiver as the FIFO was offered to this end (its block, and where in it).
  static void offerCreditWord(ConnectContext& ctx, P2pConnection& c, int peer, uint64_t tag) {
    c.credit = CreditWords::process().take(c.device);
    P2pOffer answer;
    answer.sameProcess = c.sameProc;
    answer.bytes = kP2pCreditBlockBytes;
    answer.dataOffset = c.credit.offset;
    answer.device = c.device;
    if (c.sameProc)
      answer.token = c.token = local_handles::publish(std::shared_ptr<void>(c.credit.block, [](void*) {}));
    else WEFT_CUDA_CHECK(cudaIpcGetMemHandle(&answer.handle, c.credit.block));
    c.end.credit = reinterpret_cast<uint32_t*>(c.credit.block + c.credit.offset);
    ctx.bootstrap->send(peer, tag, &answer, sizeof(answer));
  }

  std::unique_ptr<Connection> connectSend(ConnectContext& ctx, int peer, uint64_t tag) override {
    auto c = std::make_unique<P2pConnection>();
    c->sending = true;
    c->sameProc = sameProcess(ctx, peer);
    c->device = ctx.self().cudaDev;
    if (c->device < 0) raise(weftInvalidUsage, "p2p: rank %d has no CUDA device", ctx.rank);
    P2pOffer offer;
    ctx.bootstrap->recv(peer, tag, &offer, sizeof(offer));
    const size_t bytes = fifoBytes(ctx.geometry.nSlots, ctx.geometry.slotBytes);
    cuda::DeviceGuard guard(c->device);
    cuda::countDeviceSetup();  // connecting: peer access, an IPC mapping or the credit word may synchronise
    // The slots start where this rank's own layout puts them, not where the
    // offer says: both ranks share one geometry.
    const size_t slotsAt = bytes - size_t(ctx.geometry.nSlots) * ctx.geometry.slotBytes;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    weftResult_t code = weftSuccess;
    if (const std::string bad = p2pOfferProblem(offer, bytes, slotsAt, c->sameProc, devices, &code); !bad.empty())
      raise(code, "p2p: rank %d offered %s", peer, bad.c_str());
    void* mem = openPeerMemory(*c, offer, peer, "FIFO");
    c->end.attach(static_cast<FifoHeader*>(mem), static_cast<char*>(mem) + slotsAt, ctx.geometry);
    offerCreditWord(ctx, *c, peer, tag);
    return c;
  }
};

#else  // !WEFT_HAVE_CUDA

class P2pTransport : public Transport {
 public:
  const char* name() const override { return "P2P"; }
  bool canConnect(const ConnectContext&, int, std::string* why) const override {
    *why = "weft was built without CUDA";
    return false;
  }
  std::unique_ptr<Connection> connectSend(ConnectContext&, int, uint64_t) override {
    raise(weftInvalidUsage, "p2p: weft was built without CUDA");
  }
  std::unique_ptr<Connection> connectRecv(ConnectContext&, int, uint64_t) override {
    raise(weftInvalidUsage, "p2p: weft was built without CUDA");
  }
};

#endif

}  // namespace

std::unique_ptr<Transport> makeP2pTransport() { return std::make_unique<P2pTransport>(); }

}  // namespace weft
