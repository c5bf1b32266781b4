// libibverbs, loaded with dlopen so that libweft has no link dependency on
// rdma-core: a machine without it still runs weft (over sockets).
//
// Only the exported entry points go through this table. The data-path calls
// (ibv_post_send, ibv_post_recv, ibv_poll_cq) are static inline in verbs.h
// and jump through the ops of the ibv_context the provider filled in, so
// they work unchanged on contexts opened through the table.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace weft::ib {

// Member names differ from the verbs names on purpose: several of those are
// macros in verbs.h (ibv_get_device_list, ibv_query_port, ibv_reg_mr).
struct Verbs {
  ibv_device** (*getDeviceList)(int* num) = nullptr;
  void (*freeDeviceList)(ibv_device** list) = nullptr;
  const char* (*getDeviceName)(ibv_device* dev) = nullptr;
  ibv_context* (*openDevice)(ibv_device* dev) = nullptr;
  int (*closeDevice)(ibv_context* ctx) = nullptr;
  int (*queryDevice)(ibv_context* ctx, ibv_device_attr* attr) = nullptr;
  int (*queryPort)(ibv_context* ctx, uint8_t port, ibv_port_attr* attr) = nullptr;
  int (*queryGid)(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) = nullptr;
  // Optional: the partition key at an index, in network byte order.
  int (*queryPkey)(ibv_context* ctx, uint8_t port, int index, __be16* pkey) = nullptr;
  ibv_pd* (*allocPd)(ibv_context* ctx) = nullptr;
  int (*deallocPd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  // Optional (rdma-core >= 34): GPU memory exported as a dma-buf.
  ibv_mr* (*regDmabufMr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) = nullptr;
  int (*deregMr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*createCq)(ibv_context* ctx, int cqe, void* cqContext, ibv_comp_channel* channel, int vector) = nullptr;
  int (*destroyCq)(ibv_cq* cq) = nullptr;
  // Optional: a rank's shared completion queue grows with its connections
  // (shared_cq.h); without it the first queue's size is the limit.
  int (*resizeCq)(ibv_cq* cq, int cqe) = nullptr;
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) = nullptr;
  int (*destroyQp)(ibv_qp* qp) = nullptr;
  const char* (*wcStatusStr)(ibv_wc_status status) = nullptr;
  const char* (*portStateStr)(ibv_port_state state) = nullptr;
  // Optional (a stand-in library may lack them): async events and fork
  // support. Without the first, no async-event thread; without the second,
  // no fork protection.
  int (*getAsyncEvent)(ibv_context* ctx, ibv_async_event* event) = nullptr;
  void (*ackAsyncEvent)(ibv_async_event* event) = nullptr;
  const char* (*eventTypeStr)(ibv_event_type type) = nullptr;
  int (*forkInit)() = nullptr;
  // Optional (rdma-core >= 32): a GID with its type, without sysfs (which
  // many containers cannot read).
  int (*queryGidEx)(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry* entry, uint32_t flags,
                    size_t entrySize) = nullptr;
  ibv_fork_status (*isForkInitialized)() = nullptr;
};

// The loaded table, or nullptr when libibverbs (or one of its required
// symbols) is missing; *why then says what failed. Loaded once per process;
// WEFT_IB_VERBS_LIB overrides the library name (tests, odd installs).
// Before any other verbs call it sets up fork support (prepareFork).
const Verbs* loadVerbs(std::string* why);

// Fork safety. Registered pages are pinned; a fork() after registration
// (data-loader workers, subprocess) leaves them copy-on-write in the
// parent on kernels before 5.13, and the HCA goes on writing the pages the
// child got: the parent's FIFO and credit words go stale (a hang or stale
// data). ibv_fork_init marks registered memory MADV_DONTFORK. Skipped when
// ibv_is_fork_initialized says it is already on (RDMAV_FORK_SAFE /
// IBV_FORK_SAFE, read by libibverbs itself) or unneeded (the kernel copies
// pinned pages at fork), and when RDMAV_FORK_SAFE=0 turns it off.
// Returns the log line saying which.
enum class ForkSupport { Unneeded, AlreadyOn, Enabled, Off, Failed, Unknown };
ForkSupport prepareFork(const Verbs& v, const char* rdmavForkSafe, std::string* line);

// One load of `libName`, not cached (loadVerbs caches the one it makes;
// tests load stand-in libraries). A missing optional entry point (dma-buf)
// leaves its slot null; a missing required one makes ok false.
struct VerbsLoad {
  Verbs verbs;
  bool ok = false;
  std::string why;  // when !ok: the dlopen error or the missing symbols
};
VerbsLoad loadVerbsFrom(const std::string& libName);

}  // namespace weft::ib
