// Parameter initialisers: how a layer's parameters get their first values. Every initialiser
// draws from Fluxion's counter-based generator, so the same seed gives the same parameters on
// every backend and every machine.
#pragma once

#include <cstdint>
#include <string>

#include "fluxion/dtype.h"

namespace fluxion::nn {

// fan_in and fan_out of a weight shape: [out, in] for a dense weight, [out, in, kh, kw] for a
// convolution (both fans times the window), [n] for a vector (fan_in = fan_out = n).
struct Fans {
  int64_t in = 1, out = 1;
};
Fans fans_of(const Shape& shape);

struct Initializer {
  enum class Kind {
    Constant,       // every element `a`
    Uniform,        // uniform in [a, b)
    Normal,         // mean a, standard deviation b
    GlorotUniform,  // uniform in +-sqrt(6 / (fan_in + fan_out))   (Xavier)
    GlorotNormal,   // normal, std sqrt(2 / (fan_in + fan_out))
    HeUniform,      // uniform in +-sqrt(6 / fan_in)                (Kaiming, for ReLU)
    HeNormal,       // normal, std sqrt(2 / fan_in)
    FanInUniform,   // uniform in +-1/sqrt(fan_in): PyTorch's default for Linear, Conv2d, LSTM, GRU
  };
  Kind kind = Kind::Constant;
  double a = 0, b = 0;
  // When > 0, the fan_in used instead of the one computed from the shape (a bias takes its
  // weight's fan_in, as in PyTorch).
  int64_t fan_in = 0;

  static Initializer zeros() { return {Kind::Constant, 0, 0, 0}; }
  static Initializer ones() { return {Kind::Constant, 1, 0, 0}; }
  static Initializer constant(double v) { return {Kind::Constant, v, 0, 0}; }
  static Initializer uniform(double lo, double hi) { return {Kind::Uniform, lo, hi, 0}; }
  static Initializer normal(double mean, double stddev) { return {Kind::Normal, mean, stddev, 0}; }
  static Initializer glorot_uniform() { return {Kind::GlorotUniform, 0, 0, 0}; }
  static Initializer glorot_normal() { return {Kind::GlorotNormal, 0, 0, 0}; }
  static Initializer he_uniform() { return {Kind::HeUniform, 0, 0, 0}; }
  static Initializer he_normal() { return {Kind::HeNormal, 0, 0, 0}; }
  static Initializer fan_in_uniform(int64_t fan_in = 0) { return {Kind::FanInUniform, 0, 0, fan_in}; }

  // "glorot_uniform", "uniform(-0.1, 0.1)", ...
  std::string str() const;
};

}  // namespace fluxion::nn
