// The differential fuzzer's oracle: a program from generator.h must give the same values on
// every backend as on the reference interpreter, and its reverse-mode gradient and forward-mode
// derivative on every backend must match central finite differences of the interpreter's
// values (all in f64); vmapped, it must equal a loop of single calls. A failing program is shrunk to its shortest
// failing prefix of steps and reported with its IR text, which replay() runs again on every backend.
#pragma once

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
// The shortest prefix of spec's steps that still fails (spec itself when none shorter does).
// `check` is check or check_vmap.
using Check = std::string (*)(const Spec&, const std::vector<Backend>&);
Spec shrink(const Spec& spec, const std::vector<Backend>& backends, Check check);
// What a failure prints: seed, steps, the failure, and the IR text of the program with its
// gradient (value_and_grad, as traced), to paste into a regression test.
std::string report(const Spec& spec, const std::string& failure);
// The IR text of `spec`'s value_and_grad program.
std::string gradient_ir(const Spec& spec);
// Runs IR text (a program over f64 inputs) on every backend with inputs from `input_seed`, and
// compares every result with the interpreter's; "" when all agree.
std::string replay(const std::string& ir_text, uint64_t input_seed, const std::vector<Backend>& backends);

}  // namespace fluxion::difffuzz
