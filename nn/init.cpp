#include "fluxion/nn/init.h"

#include <cstdio>

namespace fluxion::nn {

Fans fans_of(const Shape& shape) {
  if (shape.empty()) return {};
  if (shape.size() == 1) return {shape[0], shape[0]};
  int64_t window = 1;
  for (size_t i = 2; i < shape.size(); ++i) window *= shape[i];
  return {shape[1] * window, shape[0] * window};
}

std::string Initializer::str() const {
  char buf[96];
  switch (kind) {
    case Kind::Constant: std::snprintf(buf, sizeof buf, "constant(%g)", a); break;
    case Kind::Uniform: std::snprintf(buf, sizeof buf, "uniform(%g, %g)", a, b); break;
    case Kind::Normal: std::snprintf(buf, sizeof buf, "normal(%g, %g)", a, b); break;
    case Kind::GlorotUniform: return "glorot_uniform";
    case Kind::GlorotNormal: return "glorot_normal";
    case Kind::HeUniform: return "he_uniform";
    case Kind::HeNormal: return "he_normal";
    case Kind::FanInUniform:
      if (fan_in > 0) std::snprintf(buf, sizeof buf, "fan_in_uniform(%lld)", static_cast<long long>(fan_in));
      else return "fan_in_uniform";
      break;
  }
  return buf;
}

}  // namespace fluxion::nn
