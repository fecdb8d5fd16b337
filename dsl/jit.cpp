// compile_flat: tracing a function into a Program and compiling it (Compiled runs it:
// runtime/compiled.cpp).
#include "fluxion/jit.h"

#include <string>

#include "dsl/check_numerics.h"
#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/runtime.h"
#include "jit/pipeline.h"
#include "runtime/compiled_impl.h"
#include "runtime/counters.h"
#include "runtime/load.h"

namespace fluxion {

namespace {

// A program traced and compiled in this process.
struct JitImpl final : detail::CompiledImpl {
  const runtime::Executable& executable() const override { return *program.executable; }
  std::string ir() const override { return ir::print(program.optimized); }
  std::string traced_ir() const override { return ir::print(program.traced); }
  bool checks_numerics() const override { return check_numerics(); }
  void check_results(const std::vector<Array>& inputs, const std::vector<Array>& outputs) const override {
    detail::check_call_numerics(program, inputs, outputs);
  }

  driver::CompiledProgram program;
};

}  // namespace

namespace {

// `names`: the inputs' then the outputs' names given to save, or none.
Compiled compile_traced(ir::Program traced, Backend backend, std::vector<std::string> input_names = {},
                        std::vector<std::string> output_names = {}) {
  auto impl = std::make_shared<JitImpl>();
  impl->inputs = traced.body.param_types();
  impl->outputs = traced.body.result_types();
  impl->input_names = std::move(input_names);
  impl->output_names = std::move(output_names);
  impl->input_names.resize(impl->inputs.size());
  impl->output_names.resize(impl->outputs.size());
  impl->backend = backend;
  impl->hash = ir::structural_hash(traced);
  impl->program = driver::compile(std::move(traced), backend);
  return Compiled(std::move(impl));
}

}  // namespace

Compiled compile_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                      const std::vector<TensorType>& inputs, Backend backend, std::source_location loc) {
  runtime::counters().traces++;
  ir::Program traced;
  {
    detail::FrameScope scope(true);
    std::vector<Tensor> params;
    for (const TensorType& t : inputs) params.push_back(scope.add_param(t));
    std::vector<Tensor> outs = fn(params);
    traced.body = scope.finish(outs, "return", loc).first;
  }
  return compile_traced(std::move(traced), backend);
}

Compiled load_or_compile(const std::string& path) {
  runtime::Artifact a = runtime::read_artifact(path);
  if (runtime::incompatibility(a).empty()) return runtime::loaded_program(std::move(a), path);
  ir::Program traced;
  try {
    traced = ir::parse(a.traced_ir);
  } catch (const Error& e) {
    detail::fail("load", path + ": its IR does not parse: " + e.what());
  }
  if (traced.body.param_types() != a.inputs || traced.body.result_types() != a.outputs) {
    detail::fail("load", path + ": its IR's signature differs from the one it records");
  }
  return compile_traced(std::move(traced), a.backend, std::move(a.input_names), std::move(a.output_names));
}

}  // namespace fluxion
