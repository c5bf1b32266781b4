// The device executor: one kernel that interprets any plan. Its body is
// interpreter.cuh, shared with the host-compiled emulation (tests/devemu).
#include "src/exec/cuda/device_plan.h"

#include "src/exec/cuda/interpreter.cuh"
#include "src/exec/cuda/runtime.h"
#include "src/util/error.h"

namespace weft::cuda {
namespace {

template <class E, class Op>
__global__ void __launch_bounds__(kInterpreterThreads) interpretPlan(const __grid_constant__ DevLaunch L) {
  __shared__ interp::CtaShared sh;
  const CtaCtx c{static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), static_cast<int>(threadIdx.x),
                 static_cast<int>(blockDim.x)};
  interp::interpretCta<E, Op>(L, sh, c);
}

template <class E, class Op>
struct InterpretPlanFamily {
  static constexpr void (*fn)(DevLaunch) = &interpretPlan<E, Op>;
};

}  // namespace

void launchInterpreter(const DevLaunch& launch, int nChannels, cudaStream_t stream) {
  auto fn = kernelFor<InterpretPlanFamily>(launch.type, launch.opKind);
  if (!fn) raise(weftInvalidArgument, "device executor: no kernel for type %d op %d", launch.type, launch.opKind);
  if (nChannels < 1 || nChannels > kMaxDeviceChannels)
    raise(weftInvalidArgument, "device executor: %d channels (1..%d)", nChannels, kMaxDeviceChannels);
  DevLaunch L = launch;
  L.nChannels = nChannels;
  const int nCtas = nChannels < kMaxDeviceCtas ? nChannels : kMaxDeviceCtas;
  void* args[] = {&L};
  WEFT_CUDA_CHECK(
      cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(nCtas), dim3(kInterpreterThreads), args, 0, stream));
}

namespace {

// Every (type, op) instantiation of the interpreter, once each.
template <class F>
void forEachInterpreterKernel(F&& f) {
  for (int type = 0; type < weftNumTypes; type++)
    for (int op = 0; op <= kOpPreMulSum; op++)
      if (op == baseFunctor(op))  // Avg and PreMulSum run Sum's kernel
        if (auto fn = kernelFor<InterpretPlanFamily>(type, op)) f(reinterpret_cast<const void*>(fn));
}

}  // namespace

void preloadInterpreterKernels() {
  forEachInterpreterKernel([](const void* fn) {
    cudaFuncAttributes a{};
    WEFT_CUDA_CHECK(cudaFuncGetAttributes(&a, fn));
  });
}

int residentInterpreterCtas(int device) {
  DeviceGuard guard(device);
  int sms = 0;
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int fewest = -1;  // CTAs per multiprocessor of the kernel that keeps fewest
  forEachInterpreterKernel([&](const void* fn) {
    int blocks = 0;
    WEFT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, kInterpreterThreads, 0));
    if (fewest < 0 || blocks < fewest) fewest = blocks;
  });
  return fewest < 0 ? 0 : sms * fewest;
}

}  // namespace weft::cuda
