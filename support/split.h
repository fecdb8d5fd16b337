// Splitting a list written in one string ("float64,timestamps", "native|avx512|avx2").
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace fluxion::support {

// The non-empty items of `s` between `sep`s.
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace fluxion::support
