// The send and receive buffers of one rank: host memory (aligned, or from
// weftMemAlloc and registered for -R), or device memory with host mirrors
// that the correctness check fills and reads.
#pragma once

#include <cstddef>
#include <vector>

#include "weft/weft.h"

namespace weft::bench {

class RankBuffers {
 public:
  // device: cudaMalloc'd buffers on the current device. registerWith: -R
  // (host only), memory peers can map, registered with that communicator.
  RankBuffers(size_t bytes, bool device, weftComm_t registerWith);
  ~RankBuffers();
  RankBuffers(const RankBuffers&) = delete;
  RankBuffers& operator=(const RankBuffers&) = delete;

  char* send() { return send_; }
  char* recv() { return recv_; }
  // Where the check reads and writes: the buffers themselves (host), or
  // their mirrors (device).
  char* hostView(const char* p);
  // Device buffers: copy the mirrors in before the checked call, and the
  // receive buffer out after it. No-ops for host buffers.
  void upload();
  void download();

 private:
  char* allocHost(weftComm_t registerWith, void** handle);
  size_t bytes_;
  bool device_;
  weftComm_t comm_;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  void* sendHandle_ = nullptr;
  void* recvHandle_ = nullptr;
  std::vector<char> sendMirror_, recvMirror_;
};

}  // namespace weft::bench
