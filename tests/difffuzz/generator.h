// The differential fuzzer's random programs: well-typed f64 programs built from a seed, mixing
// elementwise chains with broadcasting, reductions, matmul, views, conv2d, loops (fori_loop and
// scan with small trip counts) and cond. A program is a list of steps over a pool of values
// (the inputs first); every step appends one value, and the program returns
// (sum(sin(last value)), last value). Shapes are known while generating, so every step fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>

namespace fluxion::difffuzz {

enum class StepKind {
  Unary, Binary, Reduce, MatMul, Transpose, Flatten, Slice, ExpandBroadcast, Conv, Loop, Scan, Cond,
};

struct Step {
  StepKind kind = StepKind::Unary;
  int result = 0;     // the pool index it writes
  int a = 0, b = 0;   // operand pool indices (b: the second operand or the weight input)
  int op = 0;         // which unary/binary/reduction
  int axis = 0;       // reduction, slice, expand axis
  int64_t count = 0;  // loop trip count, broadcast size, conv padding
};

struct Spec {
  uint64_t seed = 0;
  std::vector<Shape> inputs;  // f64 inputs, in order
  std::vector<Shape> pool;    // every value's shape, in creation order
  std::vector<int> source;    // per pool value: the input index it is, or -1 for a step result
  std::vector<Step> steps;
  // The program's steps end at `steps.size()`; shrinking lowers it (a prefix of the steps).
  size_t length = 0;
  std::string describe() const;  // one line per step
};

// A random program of up to `max_steps` steps.
Spec generate(uint64_t seed, int max_steps = 8);

// The program as a function of its inputs: returns {loss, last value}.
std::vector<Tensor> trace(const Spec& spec, const std::vector<Tensor>& inputs);

// Inputs for `spec`: uniform in [-1, 1), drawn from `seed`.
std::vector<Array> make_inputs(const std::vector<Shape>& shapes, uint64_t seed);

}  // namespace fluxion::difffuzz
