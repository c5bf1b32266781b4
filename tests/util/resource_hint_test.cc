// Errors that come from a process limit say which limit and how to raise it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>

#include "src/util/error.h"
#include "transports/shm/shm_segment.h"

namespace weft {
namespace {

TEST(ResourceHint, NamesTheLimitAndItsValue) {
  EXPECT_NE(resourceHint(EMFILE).find("ulimit -n is "), std::string::npos) << resourceHint(EMFILE);
  EXPECT_NE(resourceHint(EAGAIN, "thread").find("ulimit -u"), std::string::npos);
  EXPECT_NE(resourceHint(ENOMEM, "pin").find("ulimit -l"), std::string::npos);
  EXPECT_NE(resourceHint(ENOSPC, "shm").find("/dev/shm"), std::string::npos);
  EXPECT_EQ(resourceHint(EAGAIN), "");  // an EAGAIN from I/O is no limit
  EXPECT_EQ(resourceHint(ECONNRESET), "");
}

// Runs `shmCall` in a child whose descriptors are used up (limit 32) and
// expects the weft::Error it throws to name that limit.
void expectOutOfDescriptorsNamesUlimit(const std::function<void()>& shmCall) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // UBSan's vptr check reads an object's vtable through a pipe() when the
    // (vtable, type) pair is not in its cache yet; with no descriptor left
    // that fails and the object is reported as not of its type (a false
    // "invalid vptr", seen on the settings' shared_ptr control block that
    // an error's log line reads). The call once while descriptors remain,
    // and one error raised and caught (an Error, its log line), put the
    // types the failing call touches in the cache.
    shmCall();
    try {
      raise(weftSystemError, "filling UBSan's type cache");
    } catch (const Error&) {
    }
    rlimit r{32, 32};
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(3);
    while (open("/dev/null", O_RDONLY) >= 0) {
    }
    try {
      shmCall();
      _exit(4);
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("ulimit -n is 32") != std::string::npos ? 0 : 5);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: setrlimit failed, 4: no error, 5: the error does not name the limit";
}

// Creating a shm segment then fails with the open-file limit named (it used
// to blame the size of /dev/shm).
TEST(ResourceHint, ShmSegmentOutOfDescriptorsNamesUlimit) {
  expectOutOfDescriptorsNamesUlimit([] { ShmSegment::create("weft-test", 4096); });
}

// The same when the segment is a peer's (the fault campaign's ulimit -n sweep
// found this error without the limit named).
TEST(ResourceHint, PeerShmSegmentOutOfDescriptorsNamesUlimit) {
  ShmSegment peer = ShmSegment::create("weft-test", 4096);
  expectOutOfDescriptorsNamesUlimit([&] { ShmSegment::open(peer.name(), 4096); });
}

}  // namespace
}  // namespace weft
