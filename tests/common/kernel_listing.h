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

}  // namespace fluxion::testing
