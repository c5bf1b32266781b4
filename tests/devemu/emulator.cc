#include "tests/devemu/emulator.h"

#include <barrier>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "src/exec/cuda/interpreter.cuh"

namespace weft::devemu {
namespace {

using CtaFn = void (*)(const cuda::DevLaunch&, cuda::interp::CtaShared&, const cuda::CtaCtx&);

template <class E, class Op>
struct HostInterpreterFamily {
  static constexpr CtaFn fn = &cuda::interp::interpretCta<E, Op>;
};

}  // namespace

int ctasFor(int nChannels, const EmuShape& shape) { return nChannels < shape.maxCtas ? nChannels : shape.maxCtas; }

void runLaunch(const cuda::DevLaunch& launch, int nChannels, const EmuShape& shape) {
  CtaFn fn = cuda::kernelFor<HostInterpreterFamily>(launch.type, launch.opKind);
  if (!fn) throw std::invalid_argument("devemu: no interpreter for this (type, op)");
  const int nCtas = ctasFor(nChannels, shape);
  if (nCtas < 1 || (nChannels + nCtas - 1) / nCtas > cuda::kMaxChannelsPerCta)
    throw std::invalid_argument("devemu: " + std::to_string(nChannels) + " channels on " + std::to_string(nCtas) +
                                " CTAs");
  cuda::DevLaunch L = launch;
  L.nChannels = nChannels;
  std::vector<std::unique_ptr<cuda::interp::CtaShared>> shared;
  std::vector<std::unique_ptr<std::barrier<>>> barriers;
  for (int c = 0; c < nCtas; c++) {
    shared.push_back(std::make_unique<cuda::interp::CtaShared>());
    barriers.push_back(std::make_unique<std::barrier<>>(shape.threadsPerCta));
  }
  std::vector<std::thread> threads;
  for (int c = 0; c < nCtas; c++)
    for (int t = 0; t < shape.threadsPerCta; t++)
      threads.emplace_back([&, c, t] {
        const cuda::CtaCtx ctx{c, nCtas, t, shape.threadsPerCta, barriers[c].get()};
        fn(L, *shared[c], ctx);
      });
  for (auto& t : threads) t.join();
}

}  // namespace weft::devemu
