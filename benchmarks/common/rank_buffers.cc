#include "benchmarks/common/rank_buffers.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "benchmarks/common/device.h"
#include "benchmarks/common/runner.h"

namespace weft::bench {

RankBuffers::RankBuffers(size_t bytes, bool device, weftComm_t registerWith)
    : bytes_(std::max<size_t>(bytes, 64)), device_(device), comm_(device ? nullptr : registerWith) {
  if (device_) {
    send_ = static_cast<char*>(gpu::alloc(bytes_));
    recv_ = static_cast<char*>(gpu::alloc(bytes_));
    sendMirror_.assign(bytes_, 0);
    recvMirror_.assign(bytes_, 0);
    return;
  }
  send_ = allocHost(comm_, &sendHandle_);
  recv_ = allocHost(comm_, &recvHandle_);
}

char* RankBuffers::allocHost(weftComm_t registerWith, void** handle) {
  char* data = nullptr;
  if (registerWith) {
    void* p = nullptr;
    if (weftMemAlloc(&p, bytes_) != weftSuccess || weftCommRegister(registerWith, p, bytes_, handle) != weftSuccess)
      fatal(std::string("-R 1: weftMemAlloc/weftCommRegister failed: ") + weftGetLastError(registerWith));
    data = static_cast<char*>(p);
  } else {
    data = static_cast<char*>(std::aligned_alloc(4096, (bytes_ + 4095) / 4096 * 4096));
  }
  if (!data) fatal("out of host memory for " + std::to_string(bytes_) + " bytes");
  std::memset(data, 0, bytes_);  // fault the pages in before timing
  return data;
}

RankBuffers::~RankBuffers() {
  if (device_) {
    gpu::release(send_);
    gpu::release(recv_);
    return;
  }
  for (auto [p, h] : {std::pair{send_, sendHandle_}, std::pair{recv_, recvHandle_}}) {
    if (!comm_) {
      std::free(p);
      continue;
    }
    weftCommDeregister(comm_, h);
    weftMemFree(p);
  }
}

char* RankBuffers::hostView(const char* p) {
  if (!device_) return const_cast<char*>(p);
  if (p >= send_ && p < send_ + bytes_) return sendMirror_.data() + (p - send_);
  return recvMirror_.data() + (p - recv_);
}

void RankBuffers::upload() {
  if (!device_) return;
  gpu::toDevice(send_, sendMirror_.data(), bytes_);
  gpu::toDevice(recv_, recvMirror_.data(), bytes_);
}

void RankBuffers::download() {
  if (!device_) return;
  gpu::toHost(recvMirror_.data(), recv_, bytes_);
  gpu::toHost(sendMirror_.data(), send_, bytes_);  // in-place results live in the send buffer too
}

}  // namespace weft::bench
