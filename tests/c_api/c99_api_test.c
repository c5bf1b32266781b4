/* The public header compiles as strict C99 and the shared library is
 * usable from C: one rank (threads mode) runs an AllReduce and a few API
 * queries. Exit status 0 means every check passed. */
#include <stdio.h>
#include <string.h>

#include <weft/weft.h>

#define CHECK(cond)                                            \
  do {                                                         \
    if (!(cond)) {                                             \
      fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #cond); \
      return 1;                                                \
    }                                                          \
  } while (0)

int main(void) {
  int version = 0;
  weftComm_t comm = NULL;
  float in[5] = {1.5f, -2.0f, 3.25f, 4.0f, 0.5f};
  float out[5];
  int n = 0, rank = -1, i;
  char report[512];
  weftResult_t async = weftInternalError;

  CHECK(weftGetVersion(&version) == weftSuccess && version == WEFT_VERSION_CODE);
  CHECK(weftGetErrorString(weftInvalidArgument) != NULL);
  CHECK(weftCommInitAll(&comm, 1, NULL) == weftSuccess);
  CHECK(weftCommCount(comm, &n) == weftSuccess && n == 1);
  CHECK(weftCommUserRank(comm, &rank) == weftSuccess && rank == 0);
  memset(out, 0xff, sizeof(out));
  CHECK(weftAllReduce(in, out, 5, weftFloat32, weftSum, comm, NULL) == weftSuccess);
  for (i = 0; i < 5; i++) CHECK(out[i] == in[i]);
  CHECK(weftAllReduce(in, out, 5, (weftDataType_t)99, weftSum, comm, NULL) == weftInvalidArgument);
  CHECK(weftCommGetAsyncError(comm, &async) == weftSuccess && async == weftSuccess);
  /* One rank, no call in progress: the report says so. */
  CHECK(weftCommDiagnose(comm, report, sizeof(report)) == weftSuccess);
  CHECK(strstr(report, "no rank is inside a collective") != NULL);
  CHECK(weftCommDiagnose(comm, NULL, sizeof(report)) == weftInvalidArgument);
  CHECK(weftCommDestroy(comm) == weftSuccess);
  printf("c99 api test passed\n");
  return 0;
}
