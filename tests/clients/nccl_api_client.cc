// A client of libnccl.so.2 that knows nothing of weft: it includes only
// weft's nccl.h and uses the NCCL API the way nccl-tests and PyTorch's
// ProcessGroupNCCL do, on host buffers with the NULL stream (blocking).
//
//   nccl_api_client procs N   N forked processes; rank 0 makes the id and
//                             hands it out over pipes (the MPI_Bcast of
//                             nccl-tests, the store of ProcessGroupNCCL)
//   nccl_api_client group N   one thread drives N ranks: inits deferred in
//                             ncclGroupStart/End and grouped collectives,
//                             as nccl-tests -g N does
//   nccl_api_client initall N ncclCommInitAll, then as above
//
// Exit status 0 when every check held; each failure prints a line.
#include <nccl.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int failures = 0;

#define EXPECT(cond, ...)                                            \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fprintf(stderr, "\n");                                         \
      failures++;                                                    \
    }                                                                \
  } while (0)

#define NCCL_OK(call)                                                                             \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    if (r_ != ncclSuccess) {                                                                      \
      fprintf(stderr, "FAIL %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
              ncclGetLastError(nullptr));                                                         \
      failures++;                                                                                 \
      return;                                                                                     \
    }                                                                                             \
  } while (0)

// Input element i of rank r: small integers, so every reduction order gives
// the same float result (the idea behind nccl-tests' verifiable inputs).
float input(int rank, size_t i) { return static_cast<float>((rank + 1) * 3 + static_cast<int>(i % 17)); }

// One rank's share of the collectives, issued on comm; `n` elements each.
// In "group" mode every call is already inside ncclGroupStart/End driven by
// the caller, so this is split into an issue step and a check step.
struct RankBuffers {
  std::vector<float> send, recv, gathered, scattered, bcast, reduced, a2aIn, a2aOut, p2pIn, p2pOut, premul;
};

void issue(ncclComm_t comm, RankBuffers& b, size_t n) {
  int nranks = 0, rank = 0;
  NCCL_OK(ncclCommCount(comm, &nranks));
  NCCL_OK(ncclCommUserRank(comm, &rank));
  b.send.resize(n * nranks);
  for (size_t i = 0; i < b.send.size(); i++) b.send[i] = input(rank, i);
  b.recv.assign(n, -1.f);
  b.gathered.assign(n * nranks, -1.f);
  b.scattered.assign(n, -1.f);
  b.bcast.assign(n, rank == 1 % nranks ? 42.f : -1.f);
  b.reduced.assign(n, -1.f);
  b.a2aIn.resize(n * nranks);
  for (size_t i = 0; i < b.a2aIn.size(); i++) b.a2aIn[i] = static_cast<float>(rank * 1000 + i);
  b.a2aOut.assign(n * nranks, -1.f);
  b.p2pIn.assign(n, static_cast<float>(rank));
  b.p2pOut.assign(n, -1.f);
  b.premul.assign(n, -1.f);
  int root = 1 % nranks;
  NCCL_OK(ncclAllReduce(b.send.data(), b.recv.data(), n, ncclFloat, ncclSum, comm, nullptr));
  NCCL_OK(ncclAllGather(b.send.data(), b.gathered.data(), n, ncclFloat, comm, nullptr));
  NCCL_OK(ncclReduceScatter(b.send.data(), b.scattered.data(), n, ncclFloat, ncclMax, comm, nullptr));
  NCCL_OK(ncclBroadcast(b.bcast.data(), b.bcast.data(), n, ncclFloat, root, comm, nullptr));
  NCCL_OK(ncclReduce(b.send.data(), b.reduced.data(), n, ncclFloat, ncclMin, root, comm, nullptr));
  NCCL_OK(ncclAlltoAll(b.a2aIn.data(), b.a2aOut.data(), n, ncclFloat, comm, nullptr));
  // The ring exchange of nccl-tests' sendrecv_perf, grouped so it cannot deadlock.
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(b.p2pIn.data(), n, ncclFloat, (rank + 1) % nranks, comm, nullptr));
  NCCL_OK(ncclRecv(b.p2pOut.data(), n, ncclFloat, (rank + nranks - 1) % nranks, comm, nullptr));
  NCCL_OK(ncclGroupEnd());
}

void check(ncclComm_t comm, const RankBuffers& b, size_t n) {
  int nranks = 0, rank = 0;
  NCCL_OK(ncclCommCount(comm, &nranks));
  NCCL_OK(ncclCommUserRank(comm, &rank));
  int root = 1 % nranks;
  for (size_t i = 0; i < n; i++) {
    float sum = 0, mx = -1e30f, mn = 1e30f;
    for (int r = 0; r < nranks; r++) {
      sum += input(r, i);
      mx = std::max(mx, input(r, rank * n + i));
      mn = std::min(mn, input(r, i));
    }
    EXPECT(b.recv[i] == sum, "rank %d allreduce[%zu] = %g, want %g", rank, i, b.recv[i], sum);
    EXPECT(b.scattered[i] == mx, "rank %d reducescatter[%zu] = %g, want %g", rank, i, b.scattered[i], mx);
    EXPECT(b.bcast[i] == 42.f, "rank %d broadcast[%zu] = %g", rank, i, b.bcast[i]);
    if (rank == root) EXPECT(b.reduced[i] == mn, "rank %d reduce[%zu] = %g, want %g", rank, i, b.reduced[i], mn);
    int from = (rank + nranks - 1) % nranks;
    EXPECT(b.p2pOut[i] == static_cast<float>(from), "rank %d recv[%zu] = %g, want %d", rank, i, b.p2pOut[i], from);
  }
  if (rank != root) EXPECT(b.reduced[0] == -1.f, "rank %d: reduce wrote a non-root buffer", rank);
  for (int r = 0; r < nranks; r++)
    for (size_t i = 0; i < n; i++) {
      EXPECT(b.gathered[r * n + i] == input(r, i), "rank %d allgather[%d][%zu] = %g", rank, r, i, b.gathered[r * n + i]);
      float want = static_cast<float>(r * 1000 + rank * n + i);
      EXPECT(b.a2aOut[r * n + i] == want, "rank %d alltoall[%d][%zu] = %g, want %g", rank, r, i, b.a2aOut[r * n + i],
             want);
    }
}

// What ProcessGroupNCCL does besides collectives: async-error polling,
// PreMulSum for averaging, registration, split into sub-groups.
void extras(ncclComm_t comm, size_t n) {
  int nranks = 0, rank = 0, dev = -2;
  NCCL_OK(ncclCommCount(comm, &nranks));
  NCCL_OK(ncclCommUserRank(comm, &rank));
  NCCL_OK(ncclCommCuDevice(comm, &dev));
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT(async == ncclSuccess, "rank %d async error %d on a healthy comm", rank, async);

  std::vector<float> v(n, static_cast<float>(rank + 1)), out(n, 0.f);
  void* handle = nullptr;
  NCCL_OK(ncclCommRegister(comm, v.data(), v.size() * sizeof(float), &handle));
  EXPECT(handle != nullptr, "registration returned no handle");
  float scale = 0.5f;
  ncclRedOp_t half;
  NCCL_OK(ncclRedOpCreatePreMulSum(&half, &scale, ncclFloat, ncclScalarHostImmediate, comm));
  NCCL_OK(ncclAllReduce(v.data(), out.data(), n, ncclFloat, half, comm, nullptr));
  NCCL_OK(ncclRedOpDestroy(half, comm));
  NCCL_OK(ncclCommDeregister(comm, handle));
  float want = 0.5f * nranks * (nranks + 1) / 2.f;
  EXPECT(out[n - 1] == want, "rank %d premulsum = %g, want %g", rank, out[n - 1], want);
  EXPECT(ncclCommDeregister(comm, nullptr) == ncclInvalidArgument, "deregistering nothing must fail");

  // Even and odd ranks form two communicators, ordered by descending key.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t sub = nullptr;
  NCCL_OK(ncclCommSplit(comm, rank % 2, -rank, &sub, &config));
  int subRank = -1, subCount = 0;
  NCCL_OK(ncclCommUserRank(sub, &subRank));
  NCCL_OK(ncclCommCount(sub, &subCount));
  int wantCount = (nranks + 1 - rank % 2) / 2;
  EXPECT(subCount == wantCount, "rank %d split size %d, want %d", rank, subCount, wantCount);
  std::vector<int> one(1, rank), all(subCount, -1);
  NCCL_OK(ncclAllGather(one.data(), all.data(), 1, ncclInt32, sub, nullptr));
  for (int i = 1; i < subCount; i++) EXPECT(all[i] < all[i - 1], "rank %d split order not by key", rank);
  EXPECT(all[subRank] == rank, "rank %d has sub-rank %d holding %d", rank, subRank, all[subRank]);
  NCCL_OK(ncclCommDestroy(sub));

  // Argument errors come back as NCCL codes with a message.
  EXPECT(ncclAllReduce(nullptr, out.data(), n, ncclFloat, ncclSum, comm, nullptr) == ncclInvalidArgument,
         "NULL sendbuff accepted");
  // (Out-of-range datatypes and ops are nccl_c_client.c's: C++ cannot make
  // an int outside an enum's range into the enum.)
  EXPECT(ncclAllReduce(v.data(), nullptr, n, ncclFloat, ncclSum, comm, nullptr) == ncclInvalidArgument,
         "NULL recvbuff accepted");
  const char* msg = ncclGetLastError(comm);
  EXPECT(msg && *msg, "no last error after a failed call");
}

void runRank(int nranks, int rank, const ncclUniqueId& id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  ncclComm_t comm = nullptr;
  NCCL_OK(ncclCommInitRankConfig(&comm, nranks, id, rank, &config));
  const size_t n = 1000 + 7;
  RankBuffers b;
  issue(comm, b, n);
  check(comm, b, n);
  extras(comm, n);
  NCCL_OK(ncclCommDestroy(comm));
}

int runProcesses(int nranks) {
  std::vector<int> fds(2 * nranks);
  for (int r = 1; r < nranks; r++)
    if (pipe(&fds[2 * r]) != 0) return 2;
  std::vector<pid_t> kids;
  for (int r = 0; r < nranks; r++) {
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      alarm(60);  // a hang is a failure, not a stuck CI job
      ncclUniqueId id;
      if (r == 0) {
        if (ncclGetUniqueId(&id) != ncclSuccess) _exit(3);
        for (int k = 1; k < nranks; k++)
          if (write(fds[2 * k + 1], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(3);
      } else if (read(fds[2 * r], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) {
        _exit(3);
      }
      runRank(nranks, r, id);
      fflush(stderr);
      _exit(failures == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  int bad = 0;
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank process %d ended with status %#x\n", pid, status);
      bad++;
    }
  }
  return bad == 0 ? 0 : 1;
}

// One thread, all ranks: init and collectives grouped, as nccl-tests -g N.
int runGrouped(int nranks, bool initAll) {
  std::vector<ncclComm_t> comms(nranks, nullptr);
  alarm(60);
  [&] {
    if (initAll) {
      NCCL_OK(ncclCommInitAll(comms.data(), nranks, nullptr));
    } else {
      ncclUniqueId id;
      NCCL_OK(ncclGetUniqueId(&id));
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      NCCL_OK(ncclGroupStart());
      for (int r = 0; r < nranks; r++) NCCL_OK(ncclCommInitRankConfig(&comms[r], nranks, id, r, &config));
      EXPECT(comms[0] == nullptr, "a deferred init produced a comm before ncclGroupEnd");
      NCCL_OK(ncclGroupEnd());
    }
    for (int r = 0; r < nranks; r++) {
      int rank = -1;
      NCCL_OK(ncclCommUserRank(comms[r], &rank));
      EXPECT(rank == r, "comm %d has rank %d", r, rank);
    }
    const size_t n = 257;
    std::vector<RankBuffers> bufs(nranks);
    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < nranks; r++) issue(comms[r], bufs[r], n);
    NCCL_OK(ncclGroupEnd());
    for (int r = 0; r < nranks; r++) check(comms[r], bufs[r], n);
    for (int r = 0; r < nranks; r++) NCCL_OK(ncclCommDestroy(comms[r]));
  }();
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s procs|group|initall NRANKS\n", argv[0]);
    return 2;
  }
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version != NCCL_VERSION_CODE) {
    fprintf(stderr, "FAIL ncclGetVersion = %d, header says %d\n", version, NCCL_VERSION_CODE);
    return 1;
  }
  if (std::string(ncclGetErrorString(ncclInvalidArgument)).empty()) return 1;
  void* mem = nullptr;
  ncclResult_t m = ncclMemAlloc(&mem, 1000);
#if defined(WEFT_NCCL_WITH_CUDA)
  // Device memory: only a machine with a GPU can hand it out.
  if (m == ncclSuccess) EXPECT(ncclMemFree(mem) == ncclSuccess, "ncclMemFree failed");
  else EXPECT(m == ncclUnhandledCudaError, "ncclMemAlloc without a GPU returned %d", m);
#else
  EXPECT(m == ncclSuccess && mem && reinterpret_cast<uintptr_t>(mem) % 4096 == 0, "host ncclMemAlloc");
  if (mem) memset(mem, 0, 1000);
  EXPECT(ncclMemFree(mem) == ncclSuccess, "ncclMemFree failed");
#endif
  int nranks = atoi(argv[2]);
  std::string mode = argv[1];
  int rc = mode == "procs" ? runProcesses(nranks) : runGrouped(nranks, mode == "initall");
  if (failures) rc = 1;
  printf("%s %d ranks: %s\n", mode.c_str(), nranks, rc == 0 ? "OK" : "FAILED");
  return rc;
}
