// The differential fuzzer's random programs: well-typed programs over f64, i32 and bool values,
// built from a seed, and the same programs in f16 or bf16 (in_dtype()). They mix elementwise
// chains with broadcasting, integer arithmetic, comparisons, select and casts, reductions,
// matmul, views, conv2d, gather, take and scatter_add (indices in range), loops (fori_loop and
// scan with small trip counts, and a data-dependent while_loop), cond, and custom_vjp /
// custom_jvp functions whose rules are the true derivatives. A program is a list of steps over a
// pool of values (the inputs first); every step appends one value. The program returns the loss,
// sum(sin(v)) summed over its float sinks (the values no later step reads; input 0 when there is
// none), then every sink. Types are known while generating, so every step fits; shrinking
// (simplifications()) keeps them so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>

namespace fluxion::difffuzz {

enum class StepKind {
  Unary,
  Binary,
  Reduce,
  MatMul,
  Transpose,
  Flatten,
  Slice,
  ExpandBroadcast,
  Conv,
  Loop,
  Scan,
  Cond,
  Compare,
  Select,
  Cast,
  ArgReduce,
  Gather,
  Take,
  ScatterAdd,
  While,
  CustomVjp,
  CustomJvp,
};
inline constexpr int kStepKinds = static_cast<int>(StepKind::CustomJvp) + 1;

// An operand: the pool value `value`, or, when `constant`, a constant of that value's type
// (what shrinking puts in place of a value).
struct Operand {
  int value = 0;
  bool constant = false;
};

struct Step {
  StepKind kind = StepKind::Unary;
  int result = 0;           // the pool index it writes
  std::vector<Operand> in;  // operands, in the order the step's rule reads them
  int op = 0;               // which op of the step's family (or custom function, or cast target)
  int axis = 0;             // reduction, slice, expand, gather, take or scatter axis
  int64_t count = 0;        // loop trip count, broadcast size, conv padding, scatter rows
  bool removed = false;     // shrinking took the step out
};

struct Spec {
  uint64_t seed = 0;
  DType floats = DType::f64;       // the dtype of its float values
  std::vector<TensorType> inputs;  // the float inputs first, then the i32 and bool ones
  std::vector<TensorType> pool;    // every value's type, in creation order
  std::vector<int> source;         // per pool value: the input index it is, or -1 for a step result
  std::vector<Step> steps;
  // The program's steps end at `steps.size()`; shrinking lowers it (a prefix of the steps).
  size_t length = 0;

  bool live(size_t step) const { return step < length && !steps[step].removed; }
  size_t live_steps() const;
  size_t float_inputs() const;     // how many of the inputs are float (they come first)
  std::vector<int> sinks() const;  // the live step results no live step reads, in order
  std::string describe() const;    // one line per input and live step
};

// A random program of up to `max_steps` steps.
Spec generate(uint64_t seed, int max_steps = 8);

// The same program with its float values in `floats` (f16, bf16): every float input and step
// result has that dtype, and casts to float give it.
Spec in_dtype(const Spec& spec, DType floats);

// A model of rounding for an f64 program: every float step result, and every term of the loss,
// multiplied by 1 + size * u, u uniform in [-1, 1) per element, drawn from `seed`.
struct Perturbation {
  double size = 0;
  uint64_t seed = 0;
};

// The program as a function of its inputs: returns {loss, the sinks...}. With `noise` (f64
// programs only), each float step result is perturbed as it says.
std::vector<Tensor> trace(const Spec& spec, const std::vector<Tensor>& inputs, const Perturbation* noise = nullptr);

// Inputs of the given types, drawn from `seed`: floats uniform in [-1, 1) (rounded to their
// dtype), i32 in [-8, 8), bools either way.
std::vector<Array> make_inputs(const std::vector<TensorType>& types, uint64_t seed);
// An Array of `dtype` holding `values` (each representable in it).
Array array_of(DType dtype, const std::vector<double>& values, const Shape& shape);

// Well-typed smaller variants of `spec`, the most promising first: a step taken out, its uses
// reading one of its operands of its type instead; an operand replaced by the earliest value of
// its type or by a constant. Each is smaller by a measure that every variant lowers, so repeated
// simplification ends.
std::vector<Spec> simplifications(const Spec& spec);

}  // namespace fluxion::difffuzz
