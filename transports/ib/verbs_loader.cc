#include "transports/ib/verbs_loader.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "src/util/log.h"
#include "src/util/settings.h"

namespace weft::ib {

namespace {

template <typename Fn>
bool bind(void* lib, const char* symbol, Fn*& slot, std::string* missing) {
  slot = reinterpret_cast<Fn*>(dlsym(lib, symbol));
  if (!slot && missing) *missing += (missing->empty() ? "" : ", ") + std::string(symbol);
  return slot != nullptr;
}

}  // namespace

VerbsLoad loadVerbsFrom(const std::string& name) {
  VerbsLoad l;
  // Never dlclose'd: providers register themselves into the library and
  // contexts may outlive any one communicator.
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = e ? e : ("dlopen(" + name + ") failed");
    return l;
  }
  Verbs& v = l.verbs;
  std::string missing;
  bind(lib, "ibv_get_device_list", v.getDeviceList, &missing);
  bind(lib, "ibv_free_device_list", v.freeDeviceList, &missing);
  bind(lib, "ibv_get_device_name", v.getDeviceName, &missing);
  bind(lib, "ibv_open_device", v.openDevice, &missing);
  bind(lib, "ibv_close_device", v.closeDevice, &missing);
  bind(lib, "ibv_query_device", v.queryDevice, &missing);
  bind(lib, "ibv_query_port", v.queryPort, &missing);
  bind(lib, "ibv_query_gid", v.queryGid, &missing);
  bind(lib, "ibv_alloc_pd", v.allocPd, &missing);
  bind(lib, "ibv_dealloc_pd", v.deallocPd, &missing);
  bind(lib, "ibv_reg_mr", v.regMr, &missing);
  bind(lib, "ibv_dereg_mr", v.deregMr, &missing);
  bind(lib, "ibv_create_cq", v.createCq, &missing);
  bind(lib, "ibv_destroy_cq", v.destroyCq, &missing);
  bind(lib, "ibv_create_qp", v.createQp, &missing);
  bind(lib, "ibv_modify_qp", v.modifyQp, &missing);
  bind(lib, "ibv_destroy_qp", v.destroyQp, &missing);
  bind(lib, "ibv_wc_status_str", v.wcStatusStr, &missing);
  bind(lib, "ibv_port_state_str", v.portStateStr, &missing);
  bind(lib, "ibv_reg_dmabuf_mr", v.regDmabufMr, nullptr);
  bind(lib, "ibv_query_pkey", v.queryPkey, nullptr);
  bind(lib, "ibv_get_async_event", v.getAsyncEvent, nullptr);
  bind(lib, "ibv_ack_async_event", v.ackAsyncEvent, nullptr);
  bind(lib, "ibv_event_type_str", v.eventTypeStr, nullptr);
  bind(lib, "ibv_fork_init", v.forkInit, nullptr);
  bind(lib, "_ibv_query_gid_ex", v.queryGidEx, nullptr);
  bind(lib, "ibv_is_fork_initialized", v.isForkInitialized, nullptr);
  bind(lib, "ibv_resize_cq", v.resizeCq, nullptr);
  if (!missing.empty()) {
    l.why = name + " lacks " + missing;
    return l;
  }
  l.ok = true;
  return l;
}

ForkSupport prepareFork(const Verbs& v, const char* rdmavForkSafe, std::string* line) {
  if (!v.isForkInitialized || !v.forkInit) {
    *line = "fork support unknown: libibverbs lacks ibv_is_fork_initialized; do not fork() after init";
    return ForkSupport::Unknown;
  }
  switch (v.isForkInitialized()) {
    case IBV_FORK_UNNEEDED:
      *line = "fork support not needed: the kernel copies registered pages at fork()";
      return ForkSupport::Unneeded;
    case IBV_FORK_ENABLED:
      *line = "fork support already on (RDMAV_FORK_SAFE)";
      return ForkSupport::AlreadyOn;
    default: break;
  }
  if (rdmavForkSafe && std::strcmp(rdmavForkSafe, "0") == 0) {
    *line = "fork support off (RDMAV_FORK_SAFE=0): a fork() after init may corrupt IB transfers";
    return ForkSupport::Off;
  }
  if (int rc = v.forkInit()) {
    *line = std::string("ibv_fork_init failed (") + std::strerror(rc < 0 ? errno : rc) +
            "): a fork() after init may corrupt IB transfers";
    return ForkSupport::Failed;
  }
  *line = "fork support enabled (ibv_fork_init): registered memory is not shared with fork()ed children";
  return ForkSupport::Enabled;
}

const Verbs* loadVerbs(std::string* why) {
  static const VerbsLoad loaded = [] {
    std::string name = *settings::get(settings::kIbVerbsLib);
    VerbsLoad l = loadVerbsFrom(name);
    if (l.ok) {
      WEFT_INFO(kNet, "NET/IB: loaded %s (%s)", name.c_str(),
                l.verbs.regDmabufMr ? "dma-buf registration available"
                                    : "no ibv_reg_dmabuf_mr: GPU memory only through peer memory");
      // Before any device is opened or memory registered.
      std::string line;
      ForkSupport f = prepareFork(l.verbs, std::getenv("RDMAV_FORK_SAFE"), &line);
      if (f == ForkSupport::Failed || f == ForkSupport::Off) WEFT_WARN("NET/IB: %s", line.c_str());
      else WEFT_INFO(kNet | kInit, "NET/IB: %s", line.c_str());
    }
    return l;
  }();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.verbs;
}

}  // namespace weft::ib
