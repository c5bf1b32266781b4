// The few CUDA driver API calls weft needs, looked up through the runtime
// (cudaGetDriverEntryPointByVersion) so that libweft never links libcuda:
// the library still loads on a machine without a driver, and the calls are
// simply unavailable there.
#pragma once

#include <cuda.h>

#include <string>

namespace weft::cuda {

struct DriverApi {
  CUresult (*deviceGet)(CUdevice* dev, int ordinal) = nullptr;
  CUresult (*deviceGetAttribute)(int* value, CUdevice_attribute attr, CUdevice dev) = nullptr;
  CUresult (*memGetHandleForAddressRange)(void* handle, CUdeviceptr dptr, size_t size,
                                          CUmemRangeHandleType type, unsigned long long flags) = nullptr;
  CUresult (*pointerSetAttribute)(const void* value, CUpointer_attribute attr, CUdeviceptr ptr) = nullptr;
  CUresult (*getErrorString)(CUresult err, const char** text) = nullptr;
};

// The table, or nullptr when the driver (or one of these entry points) is
// missing; *why then says what. Looked up once per process.
const DriverApi* driverApi(std::string* why);

// "CUDA_ERROR_NOT_SUPPORTED (operation not supported)" style text.
std::string driverErrorText(const DriverApi& api, CUresult err);

}  // namespace weft::cuda
