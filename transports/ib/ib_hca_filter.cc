#include "transports/ib/ib_hca_filter.h"

#include <cerrno>
#include <cstdlib>

#include "src/util/error.h"

namespace weft::ib {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

int parsePort(const std::string& text, const std::string& spec) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    raise(weftInvalidArgument, "WEFT_IB_HCA=\"%s\": port \"%s\" is not a number", spec.c_str(), text.c_str());
  errno = 0;
  long v = std::strtol(text.c_str(), nullptr, 10);
  // Verbs port numbers are 1-based and fit in a uint8_t.
  if (errno || v < 1 || v > 255)
    raise(weftInvalidArgument, "WEFT_IB_HCA=\"%s\": port %s is out of range 1..255", spec.c_str(), text.c_str());
  return static_cast<int>(v);
}

}  // namespace

HcaFilter parseHcaFilter(const std::string& spec) {
  HcaFilter f;
  f.spec = spec;
  std::string rest = trim(spec);
  if (rest.empty()) return f;
  if (rest[0] == '^') {
    f.exclude = true;
    rest = trim(rest.substr(1));
  }
  if (!rest.empty() && rest[0] == '=') {
    f.exact = true;
    rest = trim(rest.substr(1));
  }
  if (rest.empty()) raise(weftInvalidArgument, "WEFT_IB_HCA=\"%s\": no device named", spec.c_str());

  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string::npos) comma = rest.size();
    std::string item = trim(rest.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) raise(weftInvalidArgument, "WEFT_IB_HCA=\"%s\": empty entry in the list", spec.c_str());
    HcaFilterEntry e;
    size_t colon = item.find(':');
    e.name = trim(item.substr(0, colon));
    if (e.name.empty()) raise(weftInvalidArgument, "WEFT_IB_HCA=\"%s\": entry \"%s\" has no device name", spec.c_str(), item.c_str());
    if (e.name.find_first_of("^= ") != std::string::npos)
      raise(weftInvalidArgument, "WEFT_IB_HCA=\"%s\": bad device name \"%s\" ('^' and '=' go before the whole list)",
            spec.c_str(), e.name.c_str());
    if (colon != std::string::npos) {
      std::string portText = trim(item.substr(colon + 1));
      // NCCL accepts rail/plane fields after the port; weft does not use
      // them, and silently ignoring them would hide a typo.
      if (portText.find(':') != std::string::npos)
        raise(weftInvalidArgument, "WEFT_IB_HCA=\"%s\": entry \"%s\" has fields after the port (only dev[:port])",
              spec.c_str(), item.c_str());
      e.port = parsePort(portText, spec);
    }
    f.entries.push_back(e);
    if (comma == rest.size()) break;
  }
  return f;
}

bool hcaFilterAccepts(const HcaFilter& filter, const std::string& dev, int port) {
  if (filter.empty()) return true;
  bool listed = false;
  for (const auto& e : filter.entries) {
    bool nameMatches = filter.exact ? dev == e.name : dev.compare(0, e.name.size(), e.name) == 0;
    if (nameMatches && (e.port < 0 || e.port == port)) {
      listed = true;
      break;
    }
  }
  return filter.exclude ? !listed : listed;
}

}  // namespace weft::ib
