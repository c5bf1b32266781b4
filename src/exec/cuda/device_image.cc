#include "src/exec/cuda/device_image.h"

#include <map>
#include <tuple>

#include "src/util/error.h"

namespace weft::cuda {

DeviceImage buildDeviceImage(const plan::Plan& p, const DevFifoResolver& resolve) {
  if (p.wire != plan::Wire::Native)
    raise(weftInvalidUsage, "device executor: plans with a %s wire format run on host buffers only",
          plan::wireName(p.wire));
  DeviceImage img;
  std::map<std::tuple<int, int, int>, int32_t> index;  // (direction, peer, conn) -> table slot
  auto lookup = [&](bool send, int peer, int conn) -> int32_t {
    auto key = std::make_tuple(send ? 1 : 0, peer, conn);
    auto it = index.find(key);
    if (it != index.end()) return it->second;
    img.fifos.push_back(resolve(send, peer, conn));
    return index[key] = static_cast<int32_t>(img.fifos.size() - 1);
  };
  for (const auto& ch : p.channels) {
    img.channels.push_back({static_cast<uint32_t>(img.steps.size()), static_cast<uint32_t>(ch.steps.size())});
    for (const plan::Step& s : ch.steps) {
      if (s.kind != plan::StepKind::Fifo)
        raise(weftInvalidUsage, "device executor: %s steps run on host buffers only: %s",
              s.kind == plan::StepKind::Direct ? "direct" : "barrier", plan::describe(s).c_str());
      if ((s.nRecv || s.nSend) && s.count && s.src == plan::Buf::None && !s.nRecv)
        raise(weftInternalError, "device executor: step has no input: %s", plan::describe(s).c_str());
      DevStep d{};
      d.nRecv = s.nRecv;
      d.nSend = s.nSend;
      d.flags = s.flags;
      d.src = static_cast<uint8_t>(s.src);
      d.dst = static_cast<uint8_t>(s.dst);
      d.bind = s.bind;
      d.in[0] = d.in[1] = d.out[0] = d.out[1] = -1;
      for (int i = 0; i < s.nRecv; i++) d.in[i] = lookup(false, s.recvPeer[i], s.conn);
      for (int i = 0; i < s.nSend; i++) d.out[i] = lookup(true, s.sendPeer[i], s.conn);
      d.peerIn0 = s.nRecv ? s.recvPeer[0] : -1;
      d.srcOff = s.srcOff;
      d.dstOff = s.dstOff;
      d.count = s.count;
      img.steps.push_back(d);
    }
  }
  if (img.fifos.empty()) img.fifos.push_back(DevFifo{});  // keep every table non-empty
  if (img.steps.empty()) img.steps.push_back(DevStep{});
  return img;
}

}  // namespace weft::cuda
