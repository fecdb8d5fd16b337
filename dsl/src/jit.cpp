// compile_flat and Compiled: tracing a function into a Program, and running the result.
#include "fluxion/jit.h"

#include <string>

#include "driver/pipeline.h"
#include "dsl/src/check_numerics.h"
#include "dsl/src/trace.h"
#include "fluxion/error.h"
#include "fluxion/runtime.h"

namespace fluxion {

namespace detail {
struct CompiledImpl {
  std::vector<TensorType> inputs;
  std::vector<TensorType> outputs;
  Backend backend;
  uint64_t hash = 0;
  compiler::CompiledProgram program;
};
}  // namespace detail

namespace {

std::string types_str(const std::vector<TensorType>& ts) {
  std::string out = "(";
  for (size_t i = 0; i < ts.size(); ++i) out += (i ? ", " : "") + ts[i].str();
  return out + ")";
}

}  // namespace

Compiled compile_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                      const std::vector<TensorType>& inputs, Backend backend, std::source_location loc) {
  ir::Program traced;
  {
    detail::FrameScope scope(true);
    std::vector<Tensor> params;
    for (const TensorType& t : inputs) params.push_back(scope.add_param(t));
    std::vector<Tensor> outs = fn(params);
    traced.body = scope.finish(outs, "return", loc).first;
  }
  auto impl = std::make_shared<detail::CompiledImpl>();
  impl->inputs = inputs;
  impl->outputs = traced.body.result_types();
  impl->backend = backend;
  impl->hash = ir::structural_hash(traced);
  impl->program = compiler::compile(std::move(traced), backend);
  Compiled c;
  c.impl_ = std::move(impl);
  return c;
}

namespace {

// Raises Error unless `arrays` have exactly the types `want` (`what`: "input" or "output").
void check_types(const std::vector<Array>& arrays, const std::vector<TensorType>& want, const char* what) {
  bool ok = arrays.size() == want.size();
  for (size_t i = 0; ok && i < arrays.size(); ++i) ok = arrays[i].type() == want[i];
  if (!ok) {
    std::vector<TensorType> got;
    for (const Array& a : arrays) got.push_back(a.type());
    detail::fail("call", std::string("the program takes ") + std::to_string(want.size()) + " " + what + "(s) " +
                             types_str(want) + ", got " + std::to_string(arrays.size()) + " " + types_str(got));
  }
}

}  // namespace

std::vector<Array> Compiled::run(const std::vector<Array>& inputs) const {
  check_types(inputs, impl_->inputs, "input");
  std::vector<Array> outputs = impl_->program.executable->run(inputs);
  detail::check_call_numerics(impl_->program, inputs, outputs);
  return outputs;
}

void Compiled::run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const {
  check_types(inputs, impl_->inputs, "input");
  check_types(outputs, impl_->outputs, "output");
  if (!check_numerics()) {
    impl_->program.executable->run_into(inputs, outputs);
    return;
  }
  // Outputs may overwrite inputs (an in-place update): the replay needs the inputs as they were.
  std::vector<Array> before;
  for (const Array& a : inputs) before.push_back(a.clone());
  impl_->program.executable->run_into(inputs, outputs);
  detail::check_call_numerics(impl_->program, before, outputs);
}

const std::vector<TensorType>& Compiled::input_types() const { return impl_->inputs; }
const std::vector<TensorType>& Compiled::output_types() const { return impl_->outputs; }
Backend Compiled::backend() const { return impl_->backend; }
std::string Compiled::ir() const { return ir::print(impl_->program.optimized); }
std::string Compiled::traced_ir() const { return ir::print(impl_->program.traced); }
std::string Compiled::kernels() const { return impl_->program.executable->describe(); }
uint64_t Compiled::hash() const { return impl_->hash; }

}  // namespace fluxion
