#include "src/cuda/driver_api.h"

#include <cuda_runtime_api.h>

#include <mutex>

namespace weft::cuda {
namespace {

// Every entry point used here exists since CUDA 11.7; asking for the 12.0
// ABI keeps working with any driver the static runtime accepts.
constexpr unsigned kAbiVersion = 12000;

struct Loaded {
  DriverApi api;
  bool ok = false;
  std::string why;
};

template <typename Fn>
bool lookUp(const char* symbol, Fn*& slot, std::string* missing) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &fn, kAbiVersion, cudaEnableDefault, &found);
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) {
    (void)cudaGetLastError();
    *missing += (missing->empty() ? "" : ", ") + std::string(symbol);
    if (err != cudaSuccess) *missing += std::string(" (") + cudaGetErrorString(err) + ")";
    return false;
  }
  slot = reinterpret_cast<Fn*>(fn);
  return true;
}

Loaded load() {
  Loaded l;
  std::string missing;
  lookUp("cuDeviceGet", l.api.deviceGet, &missing);
  lookUp("cuDeviceGetAttribute", l.api.deviceGetAttribute, &missing);
  lookUp("cuMemGetHandleForAddressRange", l.api.memGetHandleForAddressRange, &missing);
  lookUp("cuPointerSetAttribute", l.api.pointerSetAttribute, &missing);
  lookUp("cuGetErrorString", l.api.getErrorString, &missing);
  if (!missing.empty()) {
    l.why = "CUDA driver entry points not available: " + missing;
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

const DriverApi* driverApi(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

std::string driverErrorText(const DriverApi& api, CUresult err) {
  const char* text = nullptr;
  if (api.getErrorString) api.getErrorString(err, &text);
  return "CUDA driver error " + std::to_string(static_cast<int>(err)) + (text ? std::string(" (") + text + ")" : "");
}

}  // namespace weft::cuda
