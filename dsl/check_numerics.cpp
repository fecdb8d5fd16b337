#include "dsl/check_numerics.h"

#include <atomic>
#include <cmath>
#include <string>

#include "eval/interpreter.h"
#include "fluxion/error.h"
#include "fluxion/runtime.h"
#include "support/communicator.h"
#include "support/settings.h"

namespace fluxion {

namespace {

std::atomic<bool>& enabled() {
  static std::atomic<bool> on = support::enabled(support::Setting::check_numerics);
  return on;
}

const char* kind(double v) { return std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf"; }

// The first non-finite element of a float array: its index, or -1.
int64_t first_bad(const Array& a, double* value) {
  if (!is_float(a.dtype())) return -1;
  std::vector<double> v = a.to_doubles();
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      *value = v[i];
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

const ir::Node& node_at(const ir::Region& body, const std::vector<size_t>& path) {
  const ir::Region* r = &body;
  for (size_t j = 0; j + 2 < path.size(); j += 2) r = &r->nodes[path[j]].regions[path[j + 1]];
  return r->nodes[path.back()];
}

const ir::Region& region_at(const ir::Region& body, const std::vector<size_t>& path) {
  const ir::Region* r = &body;
  for (size_t j = 0; j + 2 < path.size(); j += 2) r = &r->nodes[path[j]].regions[path[j + 1]];
  return *r;
}

}  // namespace

void set_check_numerics(bool on) { enabled().store(on); }
bool check_numerics() { return enabled().load(); }

namespace detail {

void check_call_numerics(const driver::CompiledProgram& program, const std::vector<Array>& inputs,
                         const std::vector<Array>& outputs) {
  if (!check_numerics()) return;
  double value = 0;
  size_t bad_output = outputs.size();
  int64_t bad_element = -1;
  for (size_t i = 0; i < outputs.size() && bad_element < 0; ++i) {
    bad_element = first_bad(outputs[i], &value);
    if (bad_element >= 0) bad_output = i;
  }
  if (bad_element < 0) return;
  std::string what = "result " + std::to_string(bad_output) + " (" + outputs[bad_output].type().str() + ") holds " +
                     kind(value) + " at element " + std::to_string(bad_element) + ". ";
  for (size_t i = 0; i < inputs.size(); ++i) {
    double in_value = 0;
    int64_t e = first_bad(inputs[i], &in_value);
    if (e >= 0) {
      fail("check_numerics", what + "Input " + std::to_string(i) + " (" + inputs[i].type().str() + ") already holds " +
                                 kind(in_value) + " at element " + std::to_string(e) + ".");
    }
  }
  // Replaying a program with collectives in a job of several ranks would run them again on this
  // rank alone, where the others do not: the check stops at the results.
  if (ir::has_collectives(program.optimized.body) && support::communicator()->size() > 1) {
    fail("check_numerics", what +
                               "The program exchanges values with the other ranks of its job, so the op that produced "
                               "it is not searched for; check each rank's inputs.");
  }
  std::optional<eval::NonFinite> origin = eval::first_non_finite(program.optimized, inputs);
  if (!origin) {
    double ref_value = 0;
    bool reference_too = first_bad(eval::run(program.optimized, inputs)[bad_output], &ref_value) >= 0;
    fail("check_numerics",
         what + (reference_too ? "It comes from an infinite constant of the program (no op produces it)."
                               : "The reference interpreter computes a finite value here from the same "
                                 "inputs: the backend differs from it."));
  }
  const ir::Node& n = node_at(program.optimized.body, origin->path);
  const ir::Region& r = region_at(program.optimized.body, origin->path);
  std::string op = std::string("'") + ir::op_name(n.op) + "' -> " + r.type(n.results[0]).str();
  if (n.line) op += " at " + std::string(n.file) + ":" + std::to_string(n.line);
  std::string kernel = program.executable->kernel_containing(origin->path);
  fail("check_numerics", what + "The first op to produce a non-finite value is " + op +
                             (kernel.empty() ? std::string() : ", in " + kernel) + " (its element " +
                             std::to_string(origin->element) + " is " + kind(origin->value) + ").");
}

}  // namespace detail
}  // namespace fluxion
