/* A C client of libnccl.so.2 for the NCCL 2.2x additions, on host buffers
 * with the NULL stream (the call blocks until done). Sees only nccl.h.
 *
 *   nccl_c_client procs N   N forked ranks (rank 0 makes the ids and hands
 *                           them out over pipes): ncclBcast, ncclGather and
 *                           ncclScatter (out of place, in place, grouped),
 *                           ncclCommInitRankScalable with a 2.14-sized
 *                           config, window registration, ncclCommFinalize,
 *                           and the functions weft lacks failing cleanly
 *   nccl_c_client env       one rank: init, an all-reduce, destroy; exit 0,
 *                           or 2 when init fails (its error printed). For
 *                           check_nccl_env.sh, which sets NCCL_* variables.
 *   nccl_c_client late      2 ranks; rank 1 joins an all-reduce 2.5 s late
 *   nccl_c_client dead      2 ranks; rank 1 exits without destroying its
 *                           communicator, rank 0 then all-reduces
 *                           (late, dead: rank 0 prints "rank 0: <result>
 *                           after <s> s"; check_nccl_env.sh judges it)
 *
 * Exit status 0 when every check held; each failure prints a line. Built
 * against weft's nccl.h and, where one is installed, NVIDIA's. */
#include <nccl.h>

/* Built a second time against NVIDIA's nccl.h (tests/clients/CMakeLists.txt):
 * make sure that is the header it got. */
#if defined(EXPECT_NVIDIA_NCCL_H) && (defined(WEFT_NCCL_API) || NCCL_MINOR < 28)
#error "expected NVIDIA's nccl.h 2.28 or later, got weft's or an older one"
#endif

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
      fprintf(stderr, __VA_ARGS__);                                       \
      fprintf(stderr, "\n");                                              \
      failures++;                                                         \
    }                                                                     \
  } while (0)

#define NCCL_OK(call)                                                                                  \
  do {                                                                                                 \
    ncclResult_t r_ = (call);                                                                          \
    if (r_ != ncclSuccess) {                                                                           \
      fprintf(stderr, "FAIL %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
              ncclGetLastError(NULL));                                                                 \
      failures++;                                                                                      \
      return;                                                                                          \
    }                                                                                                  \
  } while (0)

enum { kCount = 1000 };

static float value(int rank, size_t i) { return (float)(rank * 10000 + (int)i); }

/* Every element of buf[0..n) is value(rank, offset + i). */
static int holds(const float* buf, size_t n, int rank, size_t offset) {
  for (size_t i = 0; i < n; i++)
    if (buf[i] != value(rank, offset + i)) return 0;
  return 1;
}

static void fill(float* buf, size_t n, int rank, size_t offset) {
  for (size_t i = 0; i < n; i++) buf[i] = value(rank, offset + i);
}

static void checkBcast(ncclComm_t comm, int rank, int nranks) {
  const int root = nranks - 1;
  float* buf = malloc(kCount * sizeof(float));
  if (rank == root) fill(buf, kCount, root, 0);
  else memset(buf, 0xff, kCount * sizeof(float));
  NCCL_OK(ncclBcast(buf, kCount, ncclFloat, root, comm, NULL));
  CHECK(holds(buf, kCount, root, 0), "rank %d: ncclBcast from %d", rank, root);
  free(buf);
}

/* Out of place (root 0) and in place (root nranks-1). */
static void checkGather(ncclComm_t comm, int rank, int nranks) {
  float* mine = malloc(kCount * sizeof(float));
  float* all = malloc((size_t)nranks * kCount * sizeof(float));
  fill(mine, kCount, rank, 0);
  memset(all, 0xff, (size_t)nranks * kCount * sizeof(float));
  NCCL_OK(ncclGather(mine, rank == 0 ? all : NULL, kCount, ncclFloat, 0, comm, NULL));
  for (int r = 0; rank == 0 && r < nranks; r++)
    CHECK(holds(all + (size_t)r * kCount, kCount, r, 0), "ncclGather: block of rank %d at root 0", r);
  const int root = nranks - 1;
  memset(all, 0xff, (size_t)nranks * kCount * sizeof(float));
  if (rank == root) fill(all + (size_t)root * kCount, kCount, root, 0);
  const float* send = rank == root ? all + (size_t)root * kCount : mine;
  NCCL_OK(ncclGather(send, rank == root ? all : NULL, kCount, ncclFloat, root, comm, NULL));
  for (int r = 0; rank == root && r < nranks; r++)
    CHECK(holds(all + (size_t)r * kCount, kCount, r, 0), "in-place ncclGather: block of rank %d", r);
  free(mine);
  free(all);
}

/* Out of place (root nranks-1) and in place (root 0); block r is
 * value(r, ...), so each rank can check its own. */
static void checkScatter(ncclComm_t comm, int rank, int nranks) {
  float* all = malloc((size_t)nranks * kCount * sizeof(float));
  float* mine = malloc(kCount * sizeof(float));
  for (int r = 0; r < nranks; r++) fill(all + (size_t)r * kCount, kCount, r, 0);
  memset(mine, 0xff, kCount * sizeof(float));
  const int root = nranks - 1;
  NCCL_OK(ncclScatter(rank == root ? all : NULL, mine, kCount, ncclFloat, root, comm, NULL));
  CHECK(holds(mine, kCount, rank, 0), "rank %d: ncclScatter from %d", rank, root);
  memset(mine, 0xff, kCount * sizeof(float));
  float* recv = rank == 0 ? all : mine;  /* root 0's own block is all + 0 */
  NCCL_OK(ncclScatter(rank == 0 ? all : NULL, recv, kCount, ncclFloat, 0, comm, NULL));
  CHECK(holds(recv, kCount, rank, 0), "rank %d: in-place ncclScatter from 0", rank);
  free(all);
  free(mine);
}

/* A Gather and a Scatter in one group, as a framework batching them would. */
static void checkGrouped(ncclComm_t comm, int rank, int nranks) {
  float* mine = malloc(kCount * sizeof(float));
  float* all = malloc((size_t)nranks * kCount * sizeof(float));
  float* got = malloc(kCount * sizeof(float));
  float* parts = malloc((size_t)nranks * kCount * sizeof(float));
  fill(mine, kCount, rank, 0);
  for (int r = 0; r < nranks; r++) fill(parts + (size_t)r * kCount, kCount, r, 0);
  memset(got, 0xff, kCount * sizeof(float));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclGather(mine, all, kCount, ncclFloat, 0, comm, NULL));
  NCCL_OK(ncclScatter(parts, got, kCount, ncclFloat, 0, comm, NULL));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; rank == 0 && r < nranks; r++)
    CHECK(holds(all + (size_t)r * kCount, kCount, r, 0), "grouped ncclGather: block of rank %d", r);
  CHECK(holds(got, kCount, rank, 0), "rank %d: grouped ncclScatter", rank);
  free(mine);
  free(all);
  free(got);
  free(parts);
}

static void checkBadArguments(ncclComm_t comm, int nranks) {
  float x = 0;
  CHECK(ncclGather(&x, &x, 1, ncclFloat, nranks, comm, NULL) == ncclInvalidArgument, "root out of range");
  CHECK(ncclScatter(&x, &x, 1, (ncclDataType_t)99, 0, comm, NULL) == ncclInvalidArgument, "bad type");
  /* Any int where nccl.h says an enum, as C allows: refused, never used. */
  CHECK(ncclAllReduce(&x, &x, 1, (ncclDataType_t)99, ncclSum, comm, NULL) == ncclInvalidArgument, "type 99");
  CHECK(ncclAllReduce(&x, &x, 1, (ncclDataType_t)-1, ncclSum, comm, NULL) == ncclInvalidArgument, "type -1");
  CHECK(ncclAllReduce(&x, &x, 1, ncclFloat, (ncclRedOp_t)-1, comm, NULL) == ncclInvalidArgument, "op -1");
  CHECK(ncclReduce(&x, &x, 1, ncclFloat, (ncclRedOp_t)99, 0, comm, NULL) == ncclInvalidArgument, "op 99");
  CHECK(ncclSend(&x, 1, (ncclDataType_t)12, 0, comm, NULL) == ncclInvalidArgument, "type ncclNumTypes");
  CHECK(ncclGather(&x, &x, 1, (ncclDataType_t)-5, 0, comm, NULL) == ncclInvalidArgument, "type -5");
  CHECK(ncclRedOpDestroy((ncclRedOp_t)-1, comm) == ncclInvalidArgument, "destroy op -1");
  {
    ncclRedOp_t op;
    CHECK(ncclRedOpCreatePreMulSum(&op, &x, (ncclDataType_t)42, ncclScalarHostImmediate, comm) ==
              ncclInvalidArgument, "PreMulSum type 42");
    CHECK(ncclRedOpCreatePreMulSum(&op, &x, ncclFloat, (ncclScalarResidence_t)7, comm) == ncclInvalidArgument,
          "PreMulSum residence 7");
  }
  CHECK(strcmp(ncclGetErrorString((ncclResult_t)99), "unknown result code") == 0, "error string of 99");
  CHECK(strcmp(ncclGetErrorString((ncclResult_t)-1), "unknown result code") == 0, "error string of -1");
  ncclUniqueId id;
  ncclComm_t none = NULL;
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  memset(&id, 0, sizeof(id));
  CHECK(ncclCommInitRankConfig(&none, 1, id, 0, &bad) == ncclInvalidArgument, "config without the magic");
  CHECK(ncclCommInitRankScalable(&none, 1, 0, 0, &id, NULL) == ncclInvalidArgument, "nId 0");
}

/* What weft lacks fails with ncclInvalidUsage and says why; windows are
 * tokens. */
static void checkNotInWeft(ncclComm_t comm, int rank) {
  ncclComm_t shrunk = (ncclComm_t)&shrunk;
  int exclude = 0;
  CHECK(ncclCommShrink(comm, &exclude, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT) == ncclInvalidUsage, "shrink");
  CHECK(shrunk == NULL, "shrink must clear *newcomm");
  CHECK(strstr(ncclGetLastError(NULL), "ncclCommShrink") != NULL, "last error: %s", ncclGetLastError(NULL));
  CHECK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) == ncclInvalidUsage, "revoke");
#ifndef EXPECT_NVIDIA_NCCL_H /* NVIDIA declares these in nccl_device.h (C++ only) */
  {
    char opaque[64];
    CHECK(ncclDevCommCreate(comm, (const struct ncclDevCommRequirements*)opaque, (struct ncclDevComm*)opaque) ==
              ncclInvalidUsage, "device communicator");
    CHECK(strstr(ncclGetLastError(NULL), "no NCCL device API") != NULL, "last error: %s", ncclGetLastError(NULL));
    CHECK(ncclDevCommDestroy(comm, (const struct ncclDevComm*)opaque) == ncclInvalidUsage, "device comm destroy");
    CHECK(ncclDevCommCreate(comm, NULL, (struct ncclDevComm*)opaque) == ncclInvalidArgument, "no requirements");
  }
#endif
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  NCCL_OK(ncclGroupStart());
  CHECK(ncclGroupSimulateEnd(&sim) == ncclInvalidUsage, "simulate");
  NCCL_OK(ncclGroupEnd()); /* the group stayed open */
  sim.magic = 0;
  CHECK(ncclGroupSimulateEnd(&sim) == ncclInvalidArgument, "simulate without the magic");
  float* buf = malloc(4096);
  ncclWindow_t win = NULL;
  NCCL_OK(ncclCommWindowRegister(comm, buf, 4096, &win, NCCL_WIN_COLL_SYMMETRIC));
  void* handle = NULL;
  NCCL_OK(ncclCommRegister(comm, buf, 4096, &handle));
  CHECK(ncclCommWindowDeregister(comm, (ncclWindow_t)handle) == ncclInvalidArgument, "buffer token as window");
  NCCL_OK(ncclCommDeregister(comm, handle));
  NCCL_OK(ncclCommWindowDeregister(comm, win));
  free(buf);
  ncclResetDebugInit();
  (void)rank;
}

/* A second communicator through ncclCommInitRankScalable and a config of
 * NCCL 2.14's size: the fields past its size hold garbage that must not be
 * read (a commName of (char*)1 would crash the first log line naming it). */
static void checkScalable(const ncclUniqueId* ids, int rank, int nranks) {
  ncclConfig_t old = NCCL_CONFIG_INITIALIZER;
  old.size = offsetof(ncclConfig_t, netName) + sizeof(old.netName);
  old.splitShare = 77;
  old.trafficClass = -5;
  old.commName = (const char*)1;
  ncclUniqueId copy[2];
  memcpy(copy, ids, sizeof(copy));
  ncclComm_t comm = NULL;
  NCCL_OK(ncclCommInitRankScalable(&comm, nranks, rank, 2, copy, &old));
  checkBcast(comm, rank, nranks);
  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
}

static void runRank(int rank, int nranks, int readFd, int* writeFds) {
  ncclUniqueId ids[3];
  if (rank == 0) {
    for (int i = 0; i < 3; i++) NCCL_OK(ncclGetUniqueId(&ids[i]));
    for (int r = 1; r < nranks; r++)
      CHECK(write(writeFds[r], ids, sizeof(ids)) == (ssize_t)sizeof(ids), "hand out ids");
  } else {
    CHECK(read(readFd, ids, sizeof(ids)) == (ssize_t)sizeof(ids), "read ids");
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "c-client";
  config.CTAPolicy = NCCL_CTA_POLICY_DEFAULT;
  ncclComm_t comm = NULL;
  NCCL_OK(ncclCommInitRankConfig(&comm, nranks, ids[0], rank, &config));
  checkBcast(comm, rank, nranks);
  checkGather(comm, rank, nranks);
  checkScatter(comm, rank, nranks);
  checkGrouped(comm, rank, nranks);
  checkBadArguments(comm, nranks);
  checkNotInWeft(comm, rank);
  checkScalable(&ids[1], rank, nranks);
  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Rank 1 is late (mode "late") or gone (mode "dead") for rank 0's
 * all-reduce; rank 0 says what it got and how long that took. */
static const char* peerMode = "late";

static void runLateOrDeadRank(int rank, int nranks, int readFd, int* writeFds) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    CHECK(write(writeFds[1], &id, sizeof(id)) == (ssize_t)sizeof(id), "hand out the id");
  } else {
    CHECK(read(readFd, &id, sizeof(id)) == (ssize_t)sizeof(id), "read the id");
  }
  ncclComm_t comm = NULL;
  NCCL_OK(ncclCommInitRank(&comm, nranks, id, rank));
  float x = 1;
  if (rank == 1 && strcmp(peerMode, "dead") == 0) _exit(0);
  if (rank == 1) usleep(2500 * 1000);
  const double start = seconds();
  ncclResult_t r = ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, NULL);
  if (rank == 0) printf("rank 0: %s after %.1f s\n", r == ncclSuccess ? "success" : ncclGetErrorString(r), seconds() - start);
  fflush(stdout);
  if (r == ncclSuccess) ncclCommDestroy(comm);
  else ncclCommAbort(comm);
}

static int procs(int nranks, void (*run)(int, int, int, int*)) {
  int fds[64][2];
  int writeFds[64];
  if (nranks < 1 || nranks > 64) return 1;
  for (int r = 0; r < nranks; r++) {
    if (pipe(fds[r]) != 0) return 1;
    writeFds[r] = fds[r][1];
  }
  for (int r = 0; r < nranks; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      run(r, nranks, fds[r][0], writeFds);
      if (failures) fprintf(stderr, "rank %d: %d failures\n", r, failures);
      _exit(failures ? 1 : 0);
    }
  }
  int bad = 0, status = 0;
  for (int r = 0; r < nranks; r++)
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) bad++;
  if (bad) fprintf(stderr, "%d of %d ranks failed\n", bad, nranks);
  else printf("OK: %d ranks\n", nranks);
  return bad ? 1 : 0;
}

static int oneRank(void) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r == ncclSuccess) r = ncclCommInitRank(&comm, 1, id, 0);
  if (r != ncclSuccess) {
    printf("init: %s: %s\n", ncclGetErrorString(r), ncclGetLastError(NULL));
    return 2;
  }
  float x = 3;
  r = ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, NULL);
  ncclCommDestroy(comm);
  printf("allreduce: %s\n", ncclGetErrorString(r));
  return r == ncclSuccess && x == 3 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "procs") == 0) return procs(atoi(argv[2]), runRank);
  if (argc == 2 && (strcmp(argv[1], "late") == 0 || strcmp(argv[1], "dead") == 0)) {
    peerMode = argv[1];
    procs(2, runLateOrDeadRank);
    return 0; /* the caller judges rank 0's line */
  }
  if (argc == 2 && strcmp(argv[1], "env") == 0) return oneRank();
  fprintf(stderr, "usage: nccl_c_client procs N | env | late | dead\n");
  return 64;
}
