// The loopback verbs provider's own parsing (tests/ib/loopback_verbs/
// lbv_settings.cc): the LOOPBACK_VERBS_DEVICES, _FAULTS, _EXPECT and
// _PKEYS texts a test sets. The provider stands in for libibverbs, so what
// it builds from them must fit verbs' own types: at least one port per
// device and port numbers that fit the uint8_t of ibv_device_attr's
// phys_port_cnt and of every port_num, subnets of one byte, at most 64
// partition keys. Input: four texts separated by NUL bytes.
#include <cstdio>
#include <string>

#include "tests/fuzz/fuzz_common.h"
#include "tests/ib/loopback_verbs/lbv_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  std::string text[4];
  size_t at = 0;
  for (int i = 0; i < 4 && at <= all.size(); ++i) {
    const size_t end = std::min(all.find('\0', at), all.size());
    text[i] = all.substr(at, end - at);
    at = end + 1;
  }
  for (const lbv::DevConf& d : lbv::parseDevices(text[0].c_str())) {
    WEFT_FUZZ_CHECK(!d.ports.empty() && d.ports.size() <= 255);
    for (const lbv::PortConf& p : d.ports) {
      WEFT_FUZZ_CHECK(p.linkLayer == IBV_LINK_LAYER_INFINIBAND || p.linkLayer == IBV_LINK_LAYER_ETHERNET);
      WEFT_FUZZ_CHECK(p.subnet >= 0 && p.subnet <= 0xff);
    }
  }
  const lbv::Faults f = lbv::parseFaults(text[1].c_str());
  WEFT_FUZZ_CHECK(f.wcStatus < 0 || f.wcAfter >= 0);  // a status is given at some completion
  (void)lbv::parseExpect(text[2].c_str());
  const std::vector<uint16_t> keys = lbv::parsePkeys(text[3].c_str());
  WEFT_FUZZ_CHECK(!keys.empty() && keys.size() <= 64);
  return 0;
}
