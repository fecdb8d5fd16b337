// Reading Compiled::kernels(): which code path each kernel of a compiled program takes, the
// "kind[strategy]" word of its line, so that a test of one path fails when a moved threshold
// sends its cases down another.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace fluxion::testing {

// "matmul[sliding]", "loop[flat]", ... for every kernel line of `listing`, in order.
inline std::vector<std::string> kernel_strategies(const std::string& listing) {
  std::vector<std::string> out;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find("kernel ");
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(at));
    std::string kernel, index, kind;
    words >> kernel >> index >> kind;
    out.push_back(kind);
  }
  return out;
}

// How many times op `op` is among the kernels' own nodes in `listing` (the ops after a kernel
// line's colon, not those it recomputes from other kernels' values).
inline int own_ops(const std::string& listing, const std::string& op) {
  int count = 0;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find("kernel "), colon = line.find(':', at);
    if (at == std::string::npos || colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1, line.find_first_of("(|", colon) - colon - 1));
    for (std::string w; words >> w;) count += w == op;
  }
  return count;
}

}  // namespace fluxion::testing
