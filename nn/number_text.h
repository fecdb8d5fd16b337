// How the nn library writes a number in a description ("Dropout(0.1)", "lr=0.001"): printf's %g.
#pragma once

#include <cstdio>
#include <string>

namespace fluxion::nn::detail {

inline std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace fluxion::nn::detail
