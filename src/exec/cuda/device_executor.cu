// The device executor: one kernel that interprets any plan.
//
// Semantics mirror src/exec/host/host_executor.cc exactly: each channel (one
// CTA here) runs its steps in order; a step that touches FIFOs is streamed in
// pieces of min(slotBytes / elemSize, remaining) elements; for each piece,
// thread 0 waits until every input slot is posted and every output slot is
// free, all threads compute ((in0 OP in1) OP pre(local)) [post] into every
// output, then thread 0 posts the outputs and frees the inputs. Waits are
// bounded by the communicator's timeout and end on the abort flag, on a
// failed connection, or when another channel already stopped.
#include "src/exec/cuda/device_plan.h"

#include "src/exec/cuda/device_compute.cuh"
#include "src/exec/cuda/runtime.h"
#include "src/util/error.h"

namespace weft::cuda {
namespace {

// Mirrors plan::Buf (Buf::None = 0, Send, Recv, Scratch) and StepFlags.
constexpr uint8_t kBufSend = 1, kBufRecv = 2, kBufScratch = 3;
constexpr uint8_t kFlagPre = 1, kFlagPost = 2;
constexpr uint32_t kCodeTimeout = weftTimeout, kCodeRemote = weftRemoteError, kCodeInternal = weftInternalError;

__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ char* bufferBase(const DevLaunch& L, uint8_t which, uint16_t bind) {
  switch (which) {
    case kBufSend: return static_cast<char*>(const_cast<void*>(L.bindings[bind].send));
    case kBufRecv: return static_cast<char*>(L.bindings[bind].recv);
    case kBufScratch: return static_cast<char*>(L.scratch);
    default: return nullptr;
  }
}

__device__ void reportStop(const DevLaunch& L, uint32_t code, int step, int detail) {
  volatile DevStatus* s = L.status;
  s->channel = blockIdx.x;
  s->step = step;
  s->detail = detail;
  __threadfence_system();
  s->code = code;
  __threadfence_system();
}

// Thread 0 only. Returns 0 when every input is posted and every output slot
// free, else the reason to stop.
__device__ uint32_t waitPiece(const DevLaunch& L, const DevStep& st, int stepIdx, uint64_t bytes, char** in,
                              char** out) {
  const uint64_t start = globalTimerNs();
  uint32_t spins = 0;
  for (;;) {
    bool ready = true;
    for (int i = 0; i < st.nRecv && ready; i++) {
      const DevFifo& f = L.fifos[st.in[i]];
      uint32_t c = *reinterpret_cast<volatile uint32_t*>(f.consumed);
      uint32_t p = *reinterpret_cast<volatile uint32_t*>(f.posted);
      if (p == c) {
        ready = false;
      } else {
        __threadfence_system();
        uint64_t got = *reinterpret_cast<volatile uint64_t*>(&f.sizes[c % f.nSlots]);
        if (got != bytes) {
          reportStop(L, kCodeInternal, stepIdx, static_cast<int>(got));
          return kCodeInternal;
        }
        in[i] = f.data + (c % f.nSlots) * f.slotBytes;
      }
    }
    for (int i = 0; i < st.nSend && ready; i++) {
      const DevFifo& f = L.fifos[st.out[i]];
      uint32_t p = *reinterpret_cast<volatile uint32_t*>(f.posted);
      uint32_t c = *reinterpret_cast<volatile uint32_t*>(f.consumed);
      if (p - c >= f.nSlots) ready = false;
      else out[i] = f.data + (p % f.nSlots) * f.slotBytes;
    }
    if (ready) return 0;
    if ((++spins & 63) == 0) {
      if (*L.abortFlag) {
        reportStop(L, kCodeRemote, stepIdx, -1);
        return kCodeRemote;
      }
      if (*reinterpret_cast<volatile uint32_t*>(&L.status->code) != 0) return kCodeRemote;  // another channel
      for (int i = 0; i < st.nRecv; i++)
        if (*reinterpret_cast<volatile uint32_t*>(L.fifos[st.in[i]].failed)) {
          reportStop(L, kCodeRemote, stepIdx, -1);
          return kCodeRemote;
        }
      for (int i = 0; i < st.nSend; i++)
        if (*reinterpret_cast<volatile uint32_t*>(L.fifos[st.out[i]].failed)) {
          reportStop(L, kCodeRemote, stepIdx, -1);
          return kCodeRemote;
        }
      if (L.timeoutNs && globalTimerNs() - start > L.timeoutNs) {
        reportStop(L, kCodeTimeout, stepIdx, -1);
        return kCodeTimeout;
      }
    }
    __nanosleep(spins < 1024 ? 32 : 1000);
  }
}

// Thread 0 only: publish the piece's outputs, free its inputs.
__device__ void finishPiece(const DevLaunch& L, const DevStep& st, uint64_t bytes) {
  __threadfence_system();  // the CTA's writes (ordered by __syncthreads) reach every observer first
  for (int i = 0; i < st.nSend; i++) {
    const DevFifo& f = L.fifos[st.out[i]];
    uint32_t p = *reinterpret_cast<volatile uint32_t*>(f.posted);
    *reinterpret_cast<volatile uint64_t*>(&f.sizes[p % f.nSlots]) = bytes;
    __threadfence_system();
    *reinterpret_cast<volatile uint32_t*>(f.posted) = p + 1;
  }
  for (int i = 0; i < st.nRecv; i++) {
    const DevFifo& f = L.fifos[st.in[i]];
    uint32_t c = *reinterpret_cast<volatile uint32_t*>(f.consumed);
    *reinterpret_cast<volatile uint32_t*>(f.consumed) = c + 1;
  }
  __threadfence_system();
}

template <class E, class Op>
__global__ void __launch_bounds__(kInterpreterThreads) interpretPlan(const __grid_constant__ DevLaunch L) {
  using S = typename E::Store;
  __shared__ char* inSlot[2];
  __shared__ char* outSlot[2];
  __shared__ uint32_t stop;
  const DevChannel ch = L.channels[blockIdx.x];
  typename E::Acc scale{};
  if (L.opKind == kOpPreMulSum) {
    S s;
    memcpy(&s, L.scalar, sizeof(S));
    scale = weft::kernels::loadElem<E>(s);
  }
  for (uint32_t si = 0; si < ch.nSteps; si++) {
    const int stepIdx = static_cast<int>(si);
    const DevStep st = L.steps[ch.firstStep + si];
    if (st.count == 0) continue;
    const bool usesFifo = st.nRecv || st.nSend;
    uint64_t piece = st.count;
    if (usesFifo) {
      const DevFifo& f = L.fifos[st.nRecv ? st.in[0] : st.out[0]];
      const uint64_t slice = L.sliceBytes && L.sliceBytes < f.slotBytes ? L.sliceBytes : f.slotBytes;
      piece = slice / L.elemSize;
      if (piece == 0) piece = 1;
    }
    char* srcBase = bufferBase(L, st.src, st.bind);
    char* dstBase = bufferBase(L, st.dst, st.bind);
    for (uint64_t done = 0; done < st.count;) {
      const uint64_t n = st.count - done < piece ? st.count - done : piece;
      const uint64_t bytes = n * L.elemSize;
      if (threadIdx.x == 0) stop = usesFifo ? waitPiece(L, st, stepIdx, bytes, inSlot, outSlot) : 0;
      __syncthreads();
      if (stop) return;
      PieceIo<E> io;
      io.nIn = st.nRecv;
      io.in[0] = reinterpret_cast<const S*>(inSlot[0]);
      io.in[1] = reinterpret_cast<const S*>(inSlot[1]);
      io.local = srcBase ? reinterpret_cast<const S*>(srcBase + (st.srcOff + done) * L.elemSize) : nullptr;
      io.nOut = 0;
      for (int i = 0; i < st.nSend; i++) io.out[io.nOut++] = reinterpret_cast<S*>(outSlot[i]);
      if (dstBase) io.out[io.nOut++] = reinterpret_cast<S*>(dstBase + (st.dstOff + done) * L.elemSize);
      io.pre = (st.flags & kFlagPre) && L.opKind == kOpPreMulSum && (io.local != nullptr);
      io.post = (st.flags & kFlagPost) && L.opKind == kOpAvg;
      io.scale = scale;
      io.nranks = L.nranks;
      computePiece<E, Op>(io, n, threadIdx.x, blockDim.x);
      __syncthreads();
      if (threadIdx.x == 0 && usesFifo) finishPiece(L, st, bytes);
      done += n;
    }
  }
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
  void* args[] = {const_cast<DevLaunch*>(&launch)};
  WEFT_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(nChannels), dim3(kInterpreterThreads),
                                   args, 0, stream));
}

}  // namespace weft::cuda
