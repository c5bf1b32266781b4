// weftMemAlloc / weftMemFree / weftCommRegister / weftCommDeregister: the C
// boundary of src/core/registration.h.
#include "src/core/api_guard.h"
#include "src/core/registration.h"

using namespace weft;

WEFT_API weftResult_t weftMemAlloc(void** ptr, size_t size) {
  return guarded([&] {
    if (!ptr) raise(weftInvalidArgument, "weftMemAlloc: ptr is NULL");
    *ptr = nullptr;
    *ptr = memAlloc(size);
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftMemFree(void* ptr) {
  return guarded([&] {
    if (ptr) memFree(ptr);
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size, void** handle) {
  if (weftResult_t r = checkComm(comm, "weftCommRegister")) return r;
  return guarded([&] {
    if (!handle) raise(weftInvalidArgument, "weftCommRegister: handle is NULL");
    *handle = nullptr;
    *handle = comm->registrations->add(buff, size);
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCommDeregister(const weftComm_t comm, void* handle) {
  if (weftResult_t r = checkComm(comm, "weftCommDeregister")) return r;
  return guarded([&] {
    comm->registrations->remove(handle);
    return weftSuccess;
  });
}
