#include "tests/devemu/harness.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "algorithms/coll_args.h"
#include "algorithms/collectives.h"
#include "algorithms/p2p.h"
#include "algorithms/registry.h"
#include "algorithms/verify.h"
#include "src/exec/cuda/device_compute.cuh"
#include "src/exec/cuda/device_image.h"
#include "src/exec/host/host_executor.h"
#include "src/kernels/functors.h"
#include "transports/fifo.h"

namespace weft::devemu {

std::string describe(const CallSpec& s) {
  const bool fixed = plan::collInfo(s.coll).fixedPlan;
  return std::string(plan::collName(s.coll)) + " " +
         (fixed ? "p2p" : algo::algoName(static_cast<algo::AlgoId>(s.algo))) + " n=" + std::to_string(s.nranks) +
         " count=" + std::to_string(s.count) + " root=" + std::to_string(s.root) +
         " ch=" + std::to_string(s.nChannels) + " type=" + std::to_string(s.type) + " op=" + std::to_string(s.opKind) +
         (s.inPlace ? " in-place" : " out-of-place") + " misalign=" + std::to_string(s.misalign) +
         " slot=" + std::to_string(s.geometry.slotBytes) + "x" + std::to_string(s.geometry.nSlots) +
         " slice=" + std::to_string(s.sliceBytes) + " start=" + std::to_string(s.counterStart) + (s.proto == cuda::kProtoLl ? " ll" : " simple");
}

Fifos::~Fifos() {
  for (auto& [key, h] : fifos_) std::free(h);
}

FifoHeader* Fifos::get(int from, int to, int conn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_tuple(from, to, conn);
  auto it = fifos_.find(key);
  if (it != fifos_.end()) return it->second;
  const size_t bytes = (fifoBytes(geometry_.nSlots, geometry_.slotBytes) + 4095) / 4096 * 4096;
  void* mem = std::aligned_alloc(4096, bytes);
  std::memset(mem, 0, bytes);
  FifoHeader* h = fifoInit(mem, geometry_.nSlots, geometry_.slotBytes);
  h->posted.store(start_);
  h->consumed.store(start_);
  if (ll_) {
    char* data = reinterpret_cast<char*>(h) + h->dataOffset;
    for (uint32_t k = 0; k < geometry_.nSlots; k++) {
      const uint32_t first = start_ + ((k - start_) % geometry_.nSlots);  // first counter >= start in slot k
      auto* lines = reinterpret_cast<uint64_t*>(data + k * geometry_.slotBytes);
      for (uint64_t j = 0; j < geometry_.slotBytes / cuda::kLlLineBytes; j++)
        lines[j] = uint64_t(first - geometry_.nSlots + 1) << 32;
    }
  }
  fifos_[key] = h;
  if (credits_) {
    auto c = std::make_unique<Credit>();
    c->credit = c->decoy = start_;
    credit_[key] = std::move(c);
  }
  return h;
}

cuda::DevFifo Fifos::view(int from, int to, int conn, bool producer) {
  FifoHeader* h = get(from, to, conn);
  cuda::DevFifo f{};
  f.posted = reinterpret_cast<uint32_t*>(&h->posted);
  f.consumed = reinterpret_cast<uint32_t*>(&h->consumed);
  f.failed = reinterpret_cast<uint32_t*>(&h->failed);
  f.sizes = h->sizes;
  f.data = reinterpret_cast<char*>(h) + h->dataOffset;
  f.slotBytes = h->slotBytes;
  f.nSlots = h->nSlots;
  if (credits_) {
    std::lock_guard<std::mutex> lock(mu_);
    Credit& c = *credit_.at(std::make_tuple(from, to, conn));
    f.credit = &c.credit;
    if (producer) f.consumed = &c.decoy;
  }
  return f;
}

uint64_t Fifos::postedSinceStart() const {
  uint64_t n = 0;
  for (const auto& [key, h] : fifos_) n += uint32_t(h->posted.load() - start_);
  return n;
}

bool Fifos::allConsumed() const {
  for (const auto& [key, h] : fifos_)
    if (h->posted.load() != h->consumed.load()) return false;
  for (const auto& [key, c] : credit_)
    if (std::atomic_ref<uint32_t>(c->credit).load() != fifos_.at(key)->consumed.load()) return false;
  return true;
}

namespace {

plan::Plan buildPlanFor(const CallSpec& s, int rank) {
  algo::CollArgs a;
  a.coll = s.coll;
  a.nranks = s.nranks;
  a.rank = rank;
  a.count = s.count;
  a.elemSize = static_cast<uint32_t>(typeBytes(s.type));
  a.root = s.root;
  a.alignBytes = s.alignBytes;
  a.nChannels = s.nChannels;
  a.geometry = s.geometry;
  // A slice is planned as the slot of a smaller FIFO (what the selector
  // does): chunks must fit the FIFO counted in slices.
  if (s.sliceBytes) a.geometry.slotBytes = s.sliceBytes;
  // LL: a slot carries half its bytes of data.
  if (s.proto == cuda::kProtoLl) a.geometry.slotBytes = std::min<uint64_t>(a.geometry.slotBytes, s.geometry.slotBytes / 2);
  plan::Plan p = plan::collInfo(s.coll).fixedPlan ? algo::buildAllToAll(a)
                                                  : algo::algoInfo(static_cast<algo::AlgoId>(s.algo)).build(a);
  return p;
}

// Pieces the interpreter posts for this plan (as pieceElemsOf computes them).
uint64_t piecesOf(const plan::Plan& p, const plan::FifoGeometry& g) {
  uint64_t n = 0;
  const uint64_t slice = p.sliceBytes && p.sliceBytes < g.slotBytes ? p.sliceBytes : g.slotBytes;
  uint64_t piece = slice / p.elemSize;
  if (!piece) piece = 1;
  for (const auto& ch : p.channels)
    for (const auto& st : ch.steps) n += uint64_t(st.nSend) * ((st.count + piece - 1) / piece);
  return n;
}

}  // namespace

Call::Call(const CallSpec& s)
    : spec_(s), fifos_(s.geometry, s.counterStart, s.proto == cuda::kProtoLl, s.credits), types_(typeOps(s.type)) {
  const size_t es = types_.size;
  plans_.resize(s.nranks);
  images_.resize(s.nranks);
  for (int r = 0; r < s.nranks; r++) {
    plans_[r] = buildPlanFor(s, r);
    piecesExpected_ += piecesOf(plans_[r], s.geometry);
    try {
      images_[r] = cuda::buildDeviceImage(plans_[r], [&, r](bool send, int peer, int conn) {
        return send ? fifos_.view(r, peer, conn, true) : fifos_.view(peer, r, conn, false);
      });
    } catch (const std::exception& e) {
      skipped_ = true;
      skipWhy_ = e.what();
      return;
    }
  }
  problem_ = verify::collectiveProblem(s.coll, s.nranks, s.count, s.root, s.inPlace, s.geometry);
  std::mt19937_64 rng(s.seed);
  ranks_ = std::make_unique<RankBuffers[]>(s.nranks);
  for (int r = 0; r < s.nranks; r++) {
    RankBuffers& b = ranks_[r];
    const verify::BufferLayout& lay = problem_.buffers[r][0];
    const uint64_t pad = s.misalign + kGuardElems;
    auto alloc = [&](uint64_t elems) {
      Storage m(static_cast<char*>(std::aligned_alloc(64, ((elems + 2 * pad) * es + 63) / 64 * 64)), &std::free);
      std::memset(m.get(), kPoison, (elems + 2 * pad) * es);
      return m;
    };
    if (lay.aliased) {
      b.total = std::max(lay.sendBase + lay.sendElems, lay.recvBase + lay.recvElems);
      b.sendMem = alloc(b.total);
      b.send = b.sendMem.get() + (pad + lay.sendBase) * es;
      b.recv = b.sendMem.get() + (pad + lay.recvBase) * es;
    } else {
      b.sendMem = alloc(lay.sendElems);
      b.recvMem = alloc(lay.recvElems);
      b.send = b.sendMem.get() + pad * es;
      b.recv = b.recvMem.get() + pad * es;
    }
    b.input.resize(lay.sendElems * es);
    for (uint64_t i = 0; i < lay.sendElems; i++) types_.random(b.input.data() + i * es, rng, s.opKind);
    if (!b.input.empty()) std::memcpy(b.send, b.input.data(), b.input.size());  // count 0: data() may be null
    b.scratch.assign(plans_[r].scratchElems * es + 64, static_cast<char>(kPoison));
  }
  for (int r = 0; r < s.nranks; r++) launches_.push_back(launchFor(r));
}

cuda::DevLaunch Call::launchFor(int r) {
  const cuda::DeviceImage& img = images_[r];
  cuda::DevLaunch L{};
  L.channels = img.channels.data();
  L.steps = img.steps.data();
  L.fifos = img.fifos.data();
  L.scratch = ranks_[r].scratch.data();
  L.status = &ranks_[r].status;
  L.abortFlag = reinterpret_cast<const volatile uint8_t*>(&ranks_[r].abort);
  L.timeoutNs = spec_.timeoutMs * 1000000ull;
  L.elemSize = static_cast<uint32_t>(types_.size);
  L.arith = spec_.arith;
  L.proto = spec_.proto;
  L.sliceBytes = plans_[r].sliceBytes;
  L.nranks = spec_.nranks;
  L.type = spec_.type;
  L.opKind = spec_.opKind;
  types_.scalar(L.scalar);
  L.nBindings = 1;
  L.bindings[0] = {ranks_[r].send, ranks_[r].recv};
  return L;
}

uint64_t Call::scalarPieces() const {
  uint64_t n = 0;
  for (int r = 0; r < spec_.nranks; r++) {
    const cuda::DevLaunch& L = launches_[r];
    const plan::Plan& p = plans_[r];
    const uint64_t slice = p.sliceBytes && p.sliceBytes < spec_.geometry.slotBytes ? p.sliceBytes
                                                                                    : spec_.geometry.slotBytes;
    const uint64_t piece = std::max<uint64_t>(1, slice / L.elemSize);
    auto base = [&](plan::Buf b) -> const char* {
      if (b == plan::Buf::Send) return static_cast<const char*>(L.bindings[0].send);
      if (b == plan::Buf::Recv) return static_cast<const char*>(L.bindings[0].recv);
      if (b == plan::Buf::Scratch) return static_cast<const char*>(L.scratch);
      return nullptr;
    };
    auto misaligned = [&](plan::Buf b, uint64_t off) {
      const char* at = base(b);
      return at && reinterpret_cast<uintptr_t>(at + off * L.elemSize) % 16 != 0;
    };
    for (const auto& ch : p.channels)
      for (const auto& st : ch.steps) {
        const bool fifo = st.nRecv || st.nSend;
        for (uint64_t done = 0; done < st.count; done += fifo ? piece : st.count)
          n += misaligned(st.src, st.srcOff + done) || misaligned(st.dst, st.dstOff + done);
      }
  }
  return n;
}

void Call::run(const std::vector<int>& which) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(which.size());
  for (size_t i = 0; i < which.size(); i++) {
    const int r = which[i];
    const int nCh = static_cast<int>(plans_[r].channels.size());
    if (nCh == 0) continue;
    threads.emplace_back([&, i, r, nCh] {
      try {
        runLaunch(launches_[r], nCh, spec_.shape);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
}

void Call::refresh(uint64_t seed) {
  const size_t es = types_.size;
  std::mt19937_64 rng(seed);
  for (int r = 0; r < spec_.nranks; r++) {
    RankBuffers& b = ranks_[r];
    const verify::BufferLayout& lay = problem_.buffers[r][0];
    if (lay.aliased) throw std::logic_error("refresh: out-of-place calls only");
    for (uint64_t i = 0; i < lay.sendElems; i++) types_.random(b.input.data() + i * es, rng, spec_.opKind);
    if (!b.input.empty()) std::memcpy(b.send, b.input.data(), b.input.size());  // count 0: data() may be null
    std::memset(b.recv, kPoison, lay.recvElems * es);
    std::atomic_ref<uint32_t>(b.status.code).store(0);
  }
}

void Call::runAll() {
  std::vector<int> all;
  for (int r = 0; r < spec_.nranks; r++) all.push_back(r);
  run(all);
}

cuda::DevStatus Call::status(int r) const {
  const cuda::DevStatus& s = ranks_[r].status;
  return {std::atomic_ref<uint32_t>(const_cast<uint32_t&>(s.code)).load(), s.channel, s.step, s.detail};
}

// The first element that is not what the collective means, or a guard
// element that changed; empty when everything matches.
std::string Call::check() const {
  const size_t es = types_.size;
  for (const verify::Expect& e : problem_.expect) {
    const RankBuffers& b = ranks_[e.rank];
    for (uint64_t i = 0; i < e.count; i++) {
      const uint64_t at = e.recvOff + i;
      std::vector<const char*> terms;
      for (int q = 0; q < spec_.nranks; q++)
        if (e.from.test(q)) terms.push_back(ranks_[q].input.data() + (int64_t(at) + e.srcShift) * int64_t(es));
      std::string why = types_.check(b.recv + at * es, terms, e.reduced, spec_.opKind, spec_.nranks);
      if (!why.empty())
        return "rank " + std::to_string(e.rank) + " recv[" + std::to_string(at) + "]: " + why;
    }
  }
  for (int r = 0; r < spec_.nranks; r++) {
    const RankBuffers& b = ranks_[r];
    const verify::BufferLayout& lay = problem_.buffers[r][0];
    const uint64_t pad = spec_.misalign + kGuardElems;
    auto guardsIntact = [&](const char* base, uint64_t elems) {
      for (uint64_t i = 0; i < pad * es; i++)
        if (static_cast<unsigned char>(base[i]) != kPoison ||
            static_cast<unsigned char>(base[(pad + elems) * es + i]) != kPoison)
          return false;
      return true;
    };
    if (lay.aliased ? !guardsIntact(b.sendMem.get(), b.total)
                    : !guardsIntact(b.sendMem.get(), lay.sendElems) || !guardsIntact(b.recvMem.get(), lay.recvElems))
      return "rank " + std::to_string(r) + ": a write outside the user buffers";
    if (!lay.aliased && !b.input.empty() && std::memcmp(b.send, b.input.data(), b.input.size()) != 0)
      return "rank " + std::to_string(r) + ": the send buffer changed";
  }
  return {};
}

void Call::runHostRank(int r, Fifos& fifos, std::vector<HostCopy>& copies, std::vector<Doorbell>& bells) {
  const size_t es = types_.size;
  const RankBuffers& b = ranks_[r];
  HostCopy& h = copies[r];
  // The same offsets into the copies as into the device run's allocations.
  char* send = h.sendMem.data() + (b.send - b.sendMem.get());
  char* recv = b.recvMem ? h.recvMem.data() + (b.recv - b.recvMem.get()) : h.sendMem.data() + (b.recv - b.sendMem.get());
  const BufferBinding bind{send, recv};
  std::vector<char> scratch(plans_[r].scratchElems * es + 64);
  const plan::FifoGeometry g = spec_.geometry;
  FifoLookup lookup;
  lookup.send = [&, r](int peer, int conn) {
    FifoHeader* f = fifos.get(r, peer, conn);
    FifoEnd e;
    e.attach(f, reinterpret_cast<char*>(f) + f->dataOffset, g);
    e.producerBell = &bells[r];
    e.consumerBell = &bells[peer];
    return e;
  };
  lookup.recv = [&, r](int peer, int conn) {
    FifoHeader* f = fifos.get(peer, r, conn);
    FifoEnd e;
    e.attach(f, reinterpret_cast<char*>(f) + f->dataOffset, g);
    e.producerBell = &bells[peer];
    e.consumerBell = &bells[r];
    return e;
  };
  kernels::RedOp op;
  op.kind = static_cast<kernels::OpKind>(spec_.opKind);
  op.type = spec_.type;
  op.nranks = spec_.nranks;
  types_.scalar(op.scalar);
  std::atomic<bool> abort{false};
  HostExecContext ctx;
  ctx.bell = &bells[r];
  ctx.abortFlag = &abort;
  ctx.timeoutMs = static_cast<int64_t>(spec_.timeoutMs);
  ctx.rank = r;
  runHostPlan(plans_[r], {&bind, 1}, scratch.data(), op, lookup, ctx);
}

std::string Call::compareWithHostExecutor() {
  const size_t es = types_.size;
  std::vector<HostCopy> copies(spec_.nranks);
  for (int r = 0; r < spec_.nranks; r++) {
    const RankBuffers& b = ranks_[r];
    const verify::BufferLayout& lay = problem_.buffers[r][0];
    const uint64_t pad = spec_.misalign + kGuardElems;
    const uint64_t sendElems = lay.aliased ? b.total : lay.sendElems;
    copies[r].sendMem.assign((sendElems + 2 * pad) * es, static_cast<char>(kPoison));
    std::copy(b.input.begin(), b.input.end(), copies[r].sendMem.begin() + (b.send - b.sendMem.get()));
    if (!lay.aliased) copies[r].recvMem.assign((lay.recvElems + 2 * pad) * es, static_cast<char>(kPoison));
  }
  Fifos fifos(spec_.geometry, spec_.counterStart);
  std::vector<Doorbell> bells(spec_.nranks);
  std::vector<std::string> errors(spec_.nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < spec_.nranks; r++)
    threads.emplace_back([&, r] {
      try {
        runHostRank(r, fifos, copies, bells);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < spec_.nranks; r++) {
    if (!errors[r].empty()) return "host executor, rank " + std::to_string(r) + ": " + errors[r];
    const RankBuffers& b = ranks_[r];
    const char* dev = b.recvMem ? b.recvMem.get() : b.sendMem.get();
    const std::vector<char>& host = b.recvMem ? copies[r].recvMem : copies[r].sendMem;
    for (size_t i = 0; i < host.size(); i++)
      if (dev[i] != host[i])
        return "rank " + std::to_string(r) + ": device and host executor differ at byte " + std::to_string(i);
  }
  return {};
}

}  // namespace weft::devemu
