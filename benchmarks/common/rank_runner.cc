// The ranks of one thread (-g of them, one per GPU; one without a GPU): init,
// the sweep (warm-up, timed iterations, check) and teardown.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/common/device.h"
#include "benchmarks/common/format.h"
#include "benchmarks/common/rank_buffers.h"
#include "benchmarks/common/runner.h"
#include "benchmarks/common/verify.h"

namespace weft::bench {

namespace {

using Clock = std::chrono::steady_clock;

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// One rank of this thread.
struct Slot {
  int rank = 0;
  int gpu = -1;  // -1: host buffers
  weftComm_t comm = nullptr;
  weftStream_t stream = nullptr;  // a weft host stream, or a cudaStream_t for device buffers
  std::unique_ptr<RankBuffers> buffers;
  std::unique_ptr<gpu::Timer> timer;
  std::unique_ptr<gpu::Graph> graph;
  alignas(16) float barrierWord[4] = {};
};

class RankRunner {
 public:
  RankRunner(Shared& shared, int tid) : s_(shared), o_(shared.options), tid_(tid), slots_(shared.options.nGpus) {
    const bool device = s_.memory == MemoryKind::Device;
    for (int g = 0; g < o_.nGpus; g++) {
      slots_[g].rank = (s_.launch.procRank * o_.nThreads + tid) * o_.nGpus + g;
      if (device) slots_[g].gpu = gpuFor(s_.launch.procRank, o_.nThreads, o_.nGpus, tid, g, s_.visibleGpus);
    }
  }

  void run() {
    initComms();
    if (s_.launch.nProcs > 1) setUpCrossProcess();
    for (Slot& sl : slots_) makeStream(sl);
    printDevices();
    runSweeps();
    for (Slot& sl : slots_) {
      sl.graph.reset();
      if (sl.gpu >= 0) gpu::streamDestroy(sl.stream);
      else if (sl.stream) weftHostStreamDestroy(sl.stream);
      sl.buffers.reset();  // registered buffers (-R 1) before their communicator
    }
    s_.team->barrier();
    if (tid_ == 0) s_.team->setCrossProcess(nullptr);  // the leaders' communicator goes before the ranks'
    for (Slot& sl : slots_) WEFT_BENCH_CALL(weftCommDestroy(sl.comm), nullptr);
  }

 private:
  bool printer() const { return slots_[0].rank == 0; }
  Slot& first() { return slots_[0]; }

  void initOne(Slot& sl) {
    if (sl.gpu >= 0) gpu::setDevice(sl.gpu);
    WEFT_BENCH_CALL(weftCommInitRank(&sl.comm, s_.nranks, s_.id, sl.rank), nullptr);
  }

  // Several ranks of one thread join the communicator at once (each init
  // waits for all ranks), as nccl-tests' grouped init does.
  void initComms() {
    if (slots_.size() == 1) return initOne(slots_[0]);
    std::vector<std::thread> threads;
    for (Slot& sl : slots_) threads.emplace_back([this, &sl] { initOne(sl); });
    for (auto& t : threads) t.join();
  }

  void makeStream(Slot& sl) {
    if (sl.gpu >= 0) {
      gpu::setDevice(sl.gpu);
      // -y 1: the legacy default stream, as nccl-tests' stream_null.
      if (!o_.streamNull) sl.stream = gpu::streamCreate();
      sl.timer = std::make_unique<gpu::Timer>();
      return;
    }
    if (o_.streamNull) return;
    if (weftHostStreamCreate(&sl.stream) != weftSuccess) {
      sl.stream = nullptr;
      if (sl.rank == 0) std::fprintf(stderr, "weft-tests: no host stream (%s); every call blocks\n", weftGetLastError(sl.comm));
    }
  }

  void setUpCrossProcess() {
    if (s_.launch.mpi) {
      if (tid_ == 0) s_.team->setCrossProcess(makeMpiCrossProcess());
      s_.team->barrier();
      return;
    }
    weftComm_t leaders = nullptr;
    WEFT_BENCH_CALL(weftCommSplit(first().comm, tid_ == 0 ? 0 : WEFT_SPLIT_NOCOLOR, s_.launch.procRank, &leaders, nullptr),
                    first().comm);
    if (tid_ == 0) s_.team->setCrossProcess(makeWeftCrossProcess(leaders));
    s_.team->barrier();
  }

  // One gather per GPU index (a gathered line is at most 255 bytes), then
  // the lines in rank order: thread by thread, each thread's GPUs in turn.
  void printDevices() {
    std::vector<std::vector<std::string>> perGpu;
    for (const Slot& sl : slots_) {
      const bool dev = sl.gpu >= 0;
      perGpu.push_back(s_.team->allGatherLines(
          tid_, deviceLine(sl.rank, 0, static_cast<int>(getpid()), hostName(), dev ? sl.gpu : tid_,
                           dev ? gpu::busId(sl.gpu) : "host", dev ? gpu::deviceName(sl.gpu) : "host memory")));
    }
    if (!printer()) return;
    std::string text = "#\n# Using devices\n";
    for (size_t t = 0; t < perGpu[0].size(); t++)
      for (const auto& lines : perGpu) text += lines[t];
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }

  void group(bool on) {
    if (slots_.size() > 1) WEFT_BENCH_CALL(on ? weftGroupStart() : weftGroupEnd(), first().comm);
  }

  void barrier() {
    sync();
    group(true);
    for (Slot& sl : slots_)
      WEFT_BENCH_CALL(weftAllReduce(sl.barrierWord, sl.barrierWord, 1, weftFloat32, weftSum, sl.comm, nullptr), sl.comm);
    group(false);
  }

  void sync() {
    for (Slot& sl : slots_) {
      if (sl.gpu >= 0) gpu::streamSync(sl.stream);
      else if (sl.stream) WEFT_BENCH_CALL(weftHostStreamSynchronize(sl.stream), sl.comm);
    }
  }

  void launchOne(Slot& sl, const void* send, void* recv, const Shape& shape, weftDataType_t type, weftRedOp_t op,
                 int root) {
    const size_t count = shape.paramCount;
    weftComm_t c = sl.comm;
    weftStream_t st = sl.stream;
    switch (s_.kind) {
      case CollKind::AllReduce: WEFT_BENCH_CALL(weftAllReduce(send, recv, count, type, op, c, st), c); break;
      case CollKind::ReduceScatter: WEFT_BENCH_CALL(weftReduceScatter(send, recv, count, type, op, c, st), c); break;
      case CollKind::AllGather: WEFT_BENCH_CALL(weftAllGather(send, recv, count, type, c, st), c); break;
      case CollKind::Broadcast: WEFT_BENCH_CALL(weftBroadcast(send, recv, count, type, root, c, st), c); break;
      case CollKind::Reduce: WEFT_BENCH_CALL(weftReduce(send, recv, count, type, op, root, c, st), c); break;
      case CollKind::AllToAll: WEFT_BENCH_CALL(weftAlltoAll(send, recv, count, type, c, st), c); break;
      case CollKind::SendRecv: {
        const int next = (sl.rank + 1) % s_.nranks, prev = (sl.rank - 1 + s_.nranks) % s_.nranks;
        WEFT_BENCH_CALL(weftGroupStart(), c);
        WEFT_BENCH_CALL(weftSend(send, count, type, next, c, st), c);
        WEFT_BENCH_CALL(weftRecv(recv, count, type, prev, c, st), c);
        WEFT_BENCH_CALL(weftGroupEnd(), c);
        break;
      }
    }
  }

  struct Call {
    bool inPlace;
    const Shape* shape;
    weftDataType_t type;
    const std::vector<weftRedOp_t>* ops;  // per slot
    int root;
  };

  // The slot's send and receive pointers for the call (in place: one inside
  // the other, at this rank's offset).
  std::pair<char*, char*> pointers(Slot& sl, const Call& c) {
    char* send = sl.buffers->send();
    char* recv = sl.buffers->recv();
    if (c.inPlace) {
      const size_t size = typeInfo(c.type).size;
      if (c.shape->sendInplaceOffset) send = recv + static_cast<size_t>(sl.rank) * c.shape->sendInplaceOffset * size;
      else recv = send + static_cast<size_t>(sl.rank) * c.shape->recvInplaceOffset * size;
    }
    return {send, recv};
  }

  // `times` ops of every rank of this thread, inside one group call when
  // there are several.
  void iteration(const Call& c, int times) {
    const bool grouped = times > 1 || slots_.size() > 1;
    if (grouped) WEFT_BENCH_CALL(weftGroupStart(), first().comm);
    for (int a = 0; a < times; ++a)
      for (size_t g = 0; g < slots_.size(); g++) {
        auto [send, recv] = pointers(slots_[g], c);
        launchOne(slots_[g], send, recv, *c.shape, c.type, (*c.ops)[g], c.root);
      }
    if (grouped) WEFT_BENCH_CALL(weftGroupEnd(), first().comm);
  }

  weftRedOp_t createOp(Slot& sl, BenchOp op, weftDataType_t type) {
    if (op != BenchOp::MulSum) return builtinOp(op);
    alignas(8) char scalar[8] = {};
    storeElement(type, scalar, 0, mulSumScalar(sl.rank));
    weftRedOp_t created;
    WEFT_BENCH_CALL(weftRedOpCreatePreMulSum(&created, scalar, type, weftScalarHostImmediate, sl.comm), sl.comm);
    return created;
  }

  void runSweeps();
  void runSize(size_t bytes, weftDataType_t type, BenchOp op, std::vector<weftRedOp_t>& redOps, int root);
  double timeIterations(const Call& c);
  long long check(const Call& c, BenchOp op);
  void record(std::string& line, const Shape& shape, const TypeInfo& info, const std::string& opText, int root,
              int inPlace, double localUs, long long wrong);

  Shared& s_;
  const Options& o_;
  int tid_;
  std::vector<Slot> slots_;
  long long wrongTotal_ = 0;
  double busBwSum_ = 0;
  long long busBwCount_ = 0;
  std::vector<ResultRow> rows_;
};

void RankRunner::runSweeps() {
  const std::vector<size_t> sizes = sweepSizes(o_);
  for (Slot& sl : slots_) {
    if (sl.gpu >= 0) gpu::setDevice(sl.gpu);
    sl.buffers = std::make_unique<RankBuffers>(o_.maxBytes, sl.gpu >= 0, o_.localRegister ? sl.comm : nullptr);
  }
  std::vector<BenchOp> ops = usesOp(s_.kind) ? o_.ops : std::vector<BenchOp>{BenchOp::Sum};
  std::vector<int> roots{-1};
  if (isRooted(s_.kind)) {
    roots.clear();
    if (o_.root < 0) {
      for (int r = 0; r < s_.nranks; ++r) roots.push_back(r);
    } else {
      roots.push_back(o_.root);
    }
  }
  if (printer()) std::fputs(resultHeader().c_str(), stdout);
  for (int cycle = 0; o_.runCycles == 0 || cycle < o_.runCycles; ++cycle)
    for (weftDataType_t type : o_.types)
      for (BenchOp op : ops) {
        std::vector<weftRedOp_t> redOps;
        for (Slot& sl : slots_) redOps.push_back(createOp(sl, op, type));
        for (int root : roots)
          for (size_t bytes : sizes) runSize(bytes, type, op, redOps, root);
        if (op == BenchOp::MulSum)
          for (size_t g = 0; g < slots_.size(); g++) WEFT_BENCH_CALL(weftRedOpDestroy(redOps[g], slots_[g].comm), slots_[g].comm);
      }
  if (printer()) {
    const double avg = busBwCount_ ? busBwSum_ / busBwCount_ : 0.0;
    std::fputs(resultFooter(wrongTotal_, avg).c_str(), stdout);
    std::fflush(stdout);
    if (!o_.jsonPath.empty()) writeJson(o_.jsonPath, s_.kind, o_, s_.nranks, rows_, wrongTotal_, avg);
  }
  if (wrongTotal_ > 0) s_.exitStatus = 1;
}

// Microseconds per operation: host buffers by the wall clock around the
// iterations (the stream synchronised at the end); device buffers by CUDA
// events on each rank's stream (the slowest rank of the thread), the
// iterations launched one by one or (-G) captured once as a graph and
// launched -G times. -z (blocking) keeps the wall clock.
double RankRunner::timeIterations(const Call& c) {
  const bool device = first().gpu >= 0;
  const bool graphs = device && o_.graphLaunches > 0;
  if (graphs) {
    for (Slot& sl : slots_) {
      sl.graph = std::make_unique<gpu::Graph>();
      sl.graph->begin(sl.stream);
    }
    for (int it = 0; it < o_.iters; ++it) iteration(c, o_.aggIters);
    for (Slot& sl : slots_) sl.graph->end(sl.stream);
  }
  barrier();
  const auto start = Clock::now();
  if (device)
    for (Slot& sl : slots_) sl.timer->start(sl.stream);
  const int rounds = graphs ? o_.graphLaunches : 1;
  for (int r = 0; r < rounds; ++r) {
    if (graphs) {
      for (Slot& sl : slots_) sl.graph->launch(sl.stream);
      continue;
    }
    for (int it = 0; it < o_.iters; ++it) {
      iteration(c, o_.aggIters);
      if (o_.blocking) {
        sync();
        if (o_.blocking == 1) barrier();
      }
    }
  }
  if (device)
    for (Slot& sl : slots_) sl.timer->stop(sl.stream);
  sync();
  double us = std::chrono::duration<double>(Clock::now() - start).count() * 1e6;
  if (device && !o_.blocking) {
    us = 0;
    for (Slot& sl : slots_) us = std::max(us, sl.timer->elapsedUs());
  }
  for (Slot& sl : slots_) sl.graph.reset();
  return us / (static_cast<double>(o_.iters) * o_.aggIters * rounds);
}

// Wrong elements over this thread's ranks: inputs written (through the
// host mirrors for device buffers), one call, results read back.
long long RankRunner::check(const Call& c, BenchOp op) {
  long long wrong = 0;
  const Shape& shape = *c.shape;
  const size_t size = typeInfo(c.type).size;
  for (int k = 0; k < o_.checkIters; ++k) {
    for (Slot& sl : slots_) {
      auto [send, recv] = pointers(sl, c);
      RankBuffers& b = *sl.buffers;
      const CheckSpec spec{s_.kind, c.type, op, s_.nranks, sl.rank, c.root};
      char* poisonBase = c.inPlace && !shape.sendInplaceOffset ? send : recv;
      const size_t poisonBytes = (c.inPlace ? std::max(shape.sendCount, shape.recvCount) : shape.recvCount) * size;
      poison(b.hostView(poisonBase), poisonBytes);
      fillInput(spec, b.hostView(send), shape.sendCount);
      b.upload();
    }
    iteration(c, 1);
    sync();
    for (Slot& sl : slots_) {
      auto [send, recv] = pointers(sl, c);
      sl.buffers->download();
      const CheckSpec spec{s_.kind, c.type, op, s_.nranks, sl.rank, c.root};
      wrong += countWrong(spec, shape, sl.buffers->hostView(recv));
    }
  }
  return wrong;
}

void RankRunner::runSize(size_t bytes, weftDataType_t type, BenchOp op, std::vector<weftRedOp_t>& redOps, int root) {
  const TypeInfo& info = typeInfo(type);
  const Shape shape = shapeFor(s_.kind, bytes, info.size, s_.nranks);
  const std::string opText = usesOp(s_.kind) ? opName(op) : "none";
  std::string line = resultPrefix(reportedBytes(s_.kind, shape, info.size), shape.paramCount, info.name, opText,
                                  isRooted(s_.kind) ? root : -1);
  for (int inPlace = 0; inPlace < 2; ++inPlace) {
    const Call c{inPlace != 0, &shape, type, &redOps, root < 0 ? 0 : root};
    if (tid_ == 0) armWatchdog(s_.watchdog);
    // At least one untimed call before a capture: it makes what the
    // captured calls need (connections, plans, scratch).
    const int warmup = first().gpu >= 0 && o_.graphLaunches > 0 ? std::max(o_.warmupIters, 1) : o_.warmupIters;
    for (int w = 0; w < warmup; ++w) iteration(c, o_.aggIters);
    sync();
    const double localUs = timeIterations(c);
    long long wrong = -1;
    if (o_.checkIters > 0 && (!inPlace || inPlaceDefined(s_.kind))) wrong = check(c, op);
    record(line, shape, info, opText, root, inPlace, localUs, wrong);
  }
  if (printer()) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
  }
}

// Time across ranks per -a (this thread's ranks count as one: the slowest);
// wrong elements are summed over ranks.
void RankRunner::record(std::string& line, const Shape& shape, const TypeInfo& info, const std::string& opText,
                        int root, int inPlace, double localUs, long long wrong) {
  const Combine how = o_.average == 2 ? Combine::Min : o_.average == 3 ? Combine::Max : Combine::Sum;
  double mine = localUs;
  if (o_.average == 0) mine = printer() ? localUs : 0.0;
  double timeUs = s_.team->allReduce(tid_, {mine}, how)[0];
  if (o_.average == 1) timeUs /= s_.nranks / o_.nGpus;
  const double wrongSum = s_.team->allReduce(tid_, {static_cast<double>(std::max(wrong, 0LL))}, Combine::Sum)[0];
  const long long wrongAll = wrong < 0 ? -1 : static_cast<long long>(wrongSum);
  const double algBw = timeUs > 0 ? algBytes(s_.kind, shape, info.size, s_.nranks) / 1e9 / (timeUs / 1e6) : 0.0;
  const double busBw = algBw * busFactor(s_.kind, s_.nranks);
  if (wrongAll > 0) wrongTotal_ += wrongAll;
  busBwSum_ += busBw;
  ++busBwCount_;
  line += resultPart(timeUs, algBw, busBw, wrongAll);
  if (printer() && !o_.jsonPath.empty()) {
    rows_.push_back({reportedBytes(s_.kind, shape, info.size), shape.paramCount, info.name, opText,
                     isRooted(s_.kind) ? root : -1, inPlace != 0, timeUs, algBw, busBw, wrongAll});
  }
}

}  // namespace

void runThread(Shared& shared, int tid) { RankRunner(shared, tid).run(); }

}  // namespace weft::bench
