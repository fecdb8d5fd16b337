// Compiled's calls and its export, the same for a program compiled in this process and a loaded
// one.
#include <string>

#include "fluxion/compiled.h"
#include "fluxion/error.h"
#include "fluxion/version.h"
#include "runtime/artifact.h"
#include "runtime/compiled_impl.h"
#include "support/files.h"

namespace fluxion {
namespace {

std::string types_str(const std::vector<TensorType>& ts) {
  std::string out = "(";
  for (size_t i = 0; i < ts.size(); ++i) out += (i ? ", " : "") + ts[i].str();
  return out + ")";
}

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

// The names to record: `given` when it names every array (without newlines, which the file
// format separates names with), "" each when empty.
std::vector<std::string> names_to_save(const std::vector<std::string>& given, size_t n, const char* what) {
  if (given.empty()) return std::vector<std::string>(n);
  if (given.size() != n) {
    detail::fail("save", std::to_string(given.size()) + " " + what + " names for a program with " + std::to_string(n) +
                             " " + what + "s");
  }
  for (const std::string& name : given) {
    if (name.find('\n') != std::string::npos)
      detail::fail("save", std::string(what) + " name '" + name + "' holds a newline");
  }
  return given;
}

}  // namespace

Compiled::Compiled(std::shared_ptr<const detail::CompiledImpl> impl) : impl_(std::move(impl)) {}

std::vector<Array> Compiled::run(const std::vector<Array>& inputs, std::source_location loc) const {
  detail::CallSite site(loc, /*covers=*/false);
  check_types(inputs, impl_->inputs, "input");
  std::vector<Array> outputs = impl_->executable().run(inputs);
  if (impl_->checks_numerics()) impl_->check_results(inputs, outputs);
  return outputs;
}

void Compiled::run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs, std::source_location loc) const {
  detail::CallSite site(loc, /*covers=*/false);
  check_types(inputs, impl_->inputs, "input");
  check_types(outputs, impl_->outputs, "output");
  if (!impl_->checks_numerics()) {
    impl_->executable().run_into(inputs, outputs);
    return;
  }
  // Outputs may overwrite inputs (an in-place update): the replay needs the inputs as they were.
  std::vector<Array> before;
  for (const Array& a : inputs) before.push_back(a.clone());
  impl_->executable().run_into(inputs, outputs);
  impl_->check_results(before, outputs);
}

const std::vector<TensorType>& Compiled::input_types() const { return impl_->inputs; }
const std::vector<TensorType>& Compiled::output_types() const { return impl_->outputs; }
const std::vector<std::string>& Compiled::input_names() const { return impl_->input_names; }
const std::vector<std::string>& Compiled::output_names() const { return impl_->output_names; }
Backend Compiled::backend() const { return impl_->backend; }
std::string Compiled::ir() const { return impl_->ir(); }
std::string Compiled::traced_ir() const { return impl_->traced_ir(); }
std::string Compiled::kernels() const { return impl_->executable().describe(); }
uint64_t Compiled::hash() const { return impl_->hash; }

void Compiled::save(const std::string& path, const SaveOptions& options) const {
  runtime::Artifact a;
  a.backend = impl_->backend;
  a.compiled = impl_->executable().export_to(a);
  a.fluxion_version = FLUXION_VERSION_STRING;
  a.hash = impl_->hash;
  a.inputs = impl_->inputs;
  a.outputs = impl_->outputs;
  a.input_names =
      names_to_save(options.input_names.empty() ? impl_->input_names : options.input_names, a.inputs.size(), "input");
  a.output_names = names_to_save(options.output_names.empty() ? impl_->output_names : options.output_names,
                                 a.outputs.size(), "output");
  a.traced_ir = impl_->traced_ir();
  a.ir = impl_->ir();
  a.kernels = impl_->executable().describe();
  support::write_file_atomically(path, runtime::encode_artifact(a), "save");
}

}  // namespace fluxion
