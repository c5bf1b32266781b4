// Helpers shared by the GPU tests and the sweep: checked CUDA calls, a skip
// when no GPU is visible, and N ranks of one process on one GPU.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "weft/weft.h"

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorName(e_) << " " << cudaGetErrorString(e_); \
  } while (0)

inline int visibleGpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

#define SKIP_WITHOUT_GPU()                                                                       \
  do {                                                                                           \
    if (visibleGpus() == 0) GTEST_SKIP() << "no GPU visible (cudaGetDeviceCount == 0 or no driver)"; \
  } while (0)
