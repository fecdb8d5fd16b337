// The differential fuzzer's oracle: a program from generator.h must give the same values on
// every backend as on the reference interpreter (exactly, for its i32 and bool values), and its
// reverse-mode gradient and forward-mode derivative with respect to its float inputs, on every
// backend, must match central finite differences of the interpreter's values (all in f64);
// vmapped, it must equal a loop of single calls. A failing program is shrunk (its shortest
// failing prefix of steps, then operand by operand) and reported with its IR text, which
// replay() runs again on every backend.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "difffuzz/generator.h"

namespace fluxion::difffuzz {

// "" when every check passes on every backend, else what failed first.
std::string check(const Spec& spec, const std::vector<Backend>& backends);
// The same program vmapped over 3 examples along one axis of one input (both chosen by the seed):
// on every backend, equal to a loop of single calls on the interpreter, with the gradient of the
// examples' summed loss matching finite differences. "" when every check passes.
std::string check_vmap(const Spec& spec, const std::vector<Backend>& backends);

// What check_vmap batches: Batch::kExamples examples of input `input` (chosen by the seed)
// stacked along `axis` (also chosen by it) into `batched`, the other inputs unbatched as in
// `inputs`; `axes` is what vmap is given.
struct Batch {
  static constexpr int64_t kExamples = 3;
  size_t input = 0;
  int64_t axis = 0;
  std::vector<Array> inputs, examples, batched;
  std::vector<std::optional<int>> axes;
};
Batch batch_of(const Spec& spec);

// The same for a program in f16 or bf16 (in_dtype): on every backend its results, its
// value_and_grad's value and its gradients have the interpreter's dtypes and are within a
// tolerance of the f64 program's (or of the interpreter's 16-bit ones), the tolerance estimated
// per element from runs of the f64 program perturbed by the 16-bit rounding error at every step
// (halves_check.cpp); and the same again for the program vmapped as check_vmap batches it (the
// gradient of the examples' summed loss). "" when every check passes.
std::string check_halves(const Spec& spec, const std::vector<Backend>& backends);

// check, check_vmap, or (in the shrinker's test) a stand-in.
using Check = std::function<std::string(const Spec&, const std::vector<Backend>&)>;
// What makes two failures alike for shrinking: which check failed, on which backend (a result,
// a gradient, the jvp; for an exception, the op its message names), without the numbers, which
// change as the program shrinks.
std::string failure_kind(const std::string& failure);
// `spec` made smaller while it still fails alike: its shortest failing prefix of steps, then
// simplifications() (a step replaced by one of its operands or taken out, an operand replaced
// by an earlier value of its type or a constant), each kept when the failure persists, until
// none is. `spec` itself when it passes.
Spec shrink(const Spec& spec, const std::vector<Backend>& backends, const Check& check);
// What a failure prints: seed, steps, the failure, and the IR text of the program with its
// gradient (value_and_grad, as traced), to paste into a regression test.
std::string report(const Spec& spec, const std::string& failure);
// The IR text of `spec`'s value_and_grad program (its parameters are spec's inputs, in order).
std::string gradient_ir(const Spec& spec);
// Runs IR text on every backend with inputs from `input_seed` (make_inputs of its parameters'
// types), and compares every result with the interpreter's; "" when all agree.
std::string replay(const std::string& ir_text, uint64_t input_seed, const std::vector<Backend>& backends);

}  // namespace fluxion::difffuzz
