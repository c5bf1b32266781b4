// Makes a CUDA device current for the lifetime of the guard and restores the
// caller's device afterwards (runtime and driver calls act on the current
// device's context).
#pragma once

#include <cuda_runtime_api.h>

#include "src/cuda/cuda_check.h"

namespace weft::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    WEFT_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) WEFT_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { (void)cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace weft::cuda
