// WEFT_IB_HCA: which HCAs (and ports) the IB transport may use.
//
// Syntax (as NCCL_IB_HCA): a comma list of `name[:port]`. Names match by
// prefix ("mlx5" takes mlx5_0..mlx5_17, "mlx5_1" also takes mlx5_10..) unless
// the list starts with '=' (exact names). A leading '^' turns the list into
// an exclusion list ("^=mlx5_2" drops exactly mlx5_2). Order "^=" only.
// Pure: no verbs, testable anywhere.
#pragma once

#include <string>
#include <vector>

namespace weft::ib {

struct HcaFilterEntry {
  std::string name;
  int port = -1;  // -1: every port of the device
};

struct HcaFilter {
  std::string spec;  // the text it came from, for log lines
  bool exclude = false;
  bool exact = false;
  std::vector<HcaFilterEntry> entries;

  bool empty() const { return entries.empty(); }
};

// Throws weftInvalidArgument naming the bad part (empty name, bad port,
// extra ':' fields). An empty or all-blank spec gives an empty filter,
// which accepts everything.
HcaFilter parseHcaFilter(const std::string& spec);

// Whether port `port` of device `dev` passes the filter.
bool hcaFilterAccepts(const HcaFilter& filter, const std::string& dev, int port);

}  // namespace weft::ib
