// C API: compressors and the compressed AllReduce. Every argument is
// checked before anything is queued or written: a bad one returns its code
// with a WARN line naming the problem, and the user's buffers are untouched.
#include "src/compress/compressor.h"
#include "src/compress/device_compress.h"
#include "src/core/api_guard.h"
#include "src/core/group.h"
#include "src/exec/cuda/device_route.h"
#include "src/util/abi_enum.h"

using namespace weft;
using namespace weft::compress;

namespace {

// A message for the log and weftGetLastError, and its code.
weftResult_t refuse(weftResult_t code, const char* fn, const std::string& what) {
  WEFT_WARN("%s: %s", fn, what.c_str());
  setLastError(std::string(fn) + ": " + what);
  return code;
}

// A live compressor whose communicator is live and has not failed.
weftResult_t checkCompressor(weftCompressor_t c, const char* fn) {
  if (!c) return refuse(weftInvalidArgument, fn, "compressor is NULL");
  if (!isLiveCompressor(c))
    return refuse(weftInvalidUsage, fn, "compressor is not a live compressor (destroyed or never created)");
  if (!isLiveComm(c->comm))
    return refuse(weftInvalidUsage, fn, "the compressor's communicator was destroyed; create a compressor on a live one");
  return weftSuccess;
}

const char* memoryName(BufferMemory m) { return m == BufferMemory::Device ? "device" : "host"; }

// Binds the compressor to the buffer kind of its first call; a later call
// with the other kind is refused.
weftResult_t bindMemory(weftCompressor* c, BufferMemory wanted, const char* fn) {
  BufferMemory current = BufferMemory::Unbound;
  if (c->memory.compare_exchange_strong(current, wanted) || current == wanted) return weftSuccess;
  return refuse(weftInvalidUsage, fn,
                std::string("this compressor serves ") + memoryName(current) + " buffers (its first call's), not " +
                    memoryName(wanted) + " buffers: create one compressor per buffer kind");
}

// Device buffers: the kernels and the inner collectives are queued on the
// caller's CUDA stream, now, on this thread.
weftResult_t compressOnDevice(weftCompressor* c, const void* sendbuff, void* recvbuff, weftStream_t stream,
                              const char* fn) {
  if (c->kind != weftCompressTopK && c->kind != weftCompressSign)
    return refuse(weftInvalidUsage, fn,
                  std::string(kindName(c->kind)) + " compression of device buffers needs the device interpreter's "
                  "narrow wire format, which it does not have yet; use TopK or Sign, or host buffers");
  if (weftResult_t r = bindMemory(c, BufferMemory::Device, fn)) return r;
  return submitTask(fn, c->comm, stream, [c, sendbuff, recvbuff, stream] {
    return guarded([&] {
      runCompressedOnDevice(c, sendbuff, recvbuff, stream);
      return weftSuccess;
    });
  });
}

}  // namespace

extern "C" {

WEFT_API weftResult_t weftCompressorCreate(weftComm_t comm, size_t count, weftDataType_t datatype,
                                           const weftCompressConfig* config, weftCompressor_t* compressor) {
  const char* fn = "weftCompressorCreate";
  if (weftResult_t r = checkComm(comm, fn)) return r;
  return guarded([&] {
    if (!compressor) return refuse(weftInvalidArgument, fn, "compressor (the output) is NULL");
    if (weftResult_t e = comm->getAsyncError())
      return refuse(e, fn, std::string("communicator already failed: ") + weftGetErrorString(e));
    const int rawType = abiInt(datatype);
    if (std::string why = notADataType(rawType); !why.empty()) return refuse(weftInvalidArgument, fn, why);
    weftCompressor* c = createCompressor(comm, count, static_cast<weftDataType_t>(rawType), config);
    registerCompressor(c);
    WEFT_INFO(kColl, "%s: %s compressor for %zu elements, ratio %g, error feedback %d", fn, kindName(c->kind), count,
              c->ratio, int(c->errorFeedback));
    *compressor = c;
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCompressedAllReduce(const void* sendbuff, void* recvbuff, weftCompressor_t compressor,
                                              weftStream_t stream) {
  const char* fn = "weftCompressedAllReduce";
  return guarded([&] {
    if (weftResult_t r = checkCompressor(compressor, fn)) return r;
    weftCompressor* c = compressor;
    setLogRank(c->comm->rank);
    if (weftResult_t e = c->comm->getAsyncError())
      return refuse(e, fn, std::string("communicator already failed: ") + weftGetErrorString(e));
    if (c->count > 0 && (!sendbuff || !recvbuff))
      return refuse(weftInvalidArgument, fn, std::string(!sendbuff ? "sendbuff" : "recvbuff") + " is NULL with count " +
                                                 std::to_string(c->count));
    bool device = false;
    if (weftResult_t r = cuda::checkCallBuffers(fn, sendbuff, recvbuff, stream, &device)) return r;
    if (device) return compressOnDevice(c, sendbuff, recvbuff, stream, fn);
    if (weftResult_t r = bindMemory(c, BufferMemory::Host, fn)) return r;
    if (stream) c->queued++;
    weftResult_t r = submitTask(fn, c->comm, stream, [c, sendbuff, recvbuff, queued = stream != nullptr] {
      weftResult_t result = guarded([&] {
        runCompressed(c, sendbuff, recvbuff);
        return weftSuccess;
      });
      if (queued) c->queued--;
      return result;
    });
    if (r != weftSuccess && stream) c->queued--;
    return r;
  });
}

WEFT_API weftResult_t weftCompressorResidual(weftCompressor_t compressor, float** residual, size_t* count) {
  const char* fn = "weftCompressorResidual";
  return guarded([&] {
    if (weftResult_t r = checkCompressor(compressor, fn)) return r;
    if (!residual || !count) return refuse(weftInvalidArgument, fn, "residual or count is NULL");
    std::lock_guard<std::mutex> lock(compressor->mutex);
    if (compressor->device) {
      *residual = deviceResidual(compressor, count);
      return weftSuccess;
    }
    *residual = compressor->residual.empty() ? nullptr : compressor->residual.data();
    *count = compressor->residual.size();
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCompressorReset(weftCompressor_t compressor) {
  const char* fn = "weftCompressorReset";
  return guarded([&] {
    if (weftResult_t r = checkCompressor(compressor, fn)) return r;
    std::lock_guard<std::mutex> lock(compressor->mutex);
    if (compressor->device) resetDeviceResidual(compressor);
    std::fill(compressor->residual.begin(), compressor->residual.end(), 0.0f);
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCompressorBytesSent(weftCompressor_t compressor, uint64_t* bytes) {
  const char* fn = "weftCompressorBytesSent";
  return guarded([&] {
    if (weftResult_t r = checkCompressor(compressor, fn)) return r;
    if (!bytes) return refuse(weftInvalidArgument, fn, "bytes is NULL");
    *bytes = compressor->bytesSent.load();
    return weftSuccess;
  });
}

WEFT_API weftResult_t weftCompressorDestroy(weftCompressor_t compressor) {
  const char* fn = "weftCompressorDestroy";
  if (!compressor) return refuse(weftInvalidArgument, fn, "compressor is NULL");
  if (isLiveCompressor(compressor) && compressor->queued.load() > 0)
    return refuse(weftInvalidUsage, fn,
                  std::to_string(compressor->queued.load()) +
                      " call(s) of this compressor are still queued on a host stream; synchronize it first");
  if (!unregisterCompressor(compressor))
    return refuse(weftInvalidUsage, fn, "compressor is not a live compressor (destroyed or never created)");
  // A call still running on a host stream holds the mutex.
  { std::lock_guard<std::mutex> lock(compressor->mutex); }
  delete compressor;
  return weftSuccess;
}

}  // extern "C"
