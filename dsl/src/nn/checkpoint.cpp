#include "fluxion/nn/checkpoint.h"

#include <map>

#include "fluxion/error.h"
#include "fluxion/safetensors.h"

namespace fluxion::nn {

namespace {

constexpr const char* kOptimizerPrefix = "optimizer.";

struct Expected {
  std::string name;
  TensorType type;
};

std::vector<Expected> expected_params(const Model& model) {
  std::vector<Expected> out;
  for (const ParamSpec& s : model.param_specs()) out.push_back({s.name, {f32, s.shape}});
  return out;
}

// Checks every expected name, shape and dtype against the file's tensors; lists every problem.
std::vector<Array> take_checked(const std::map<std::string, Array>& file,
                                const std::vector<Expected>& want, std::vector<std::string>& problems) {
  std::vector<Array> out;
  for (const Expected& e : want) {
    auto it = file.find(e.name);
    if (it == file.end()) {
      problems.push_back("missing '" + e.name + "' " + e.type.str());
    } else if (it->second.type() != e.type) {
      problems.push_back("'" + e.name + "' is " + it->second.type().str() + ", expected " + e.type.str());
    } else {
      out.push_back(it->second);
    }
  }
  return out;
}

std::map<std::string, Array> by_name(const NamedArrays& arrays) {
  std::map<std::string, Array> m;
  for (const auto& [k, v] : arrays) m.emplace(k, v);
  return m;
}

[[noreturn]] void mismatch(const std::string& op, const std::string& path, const std::vector<std::string>& problems) {
  std::string msg = "'" + path + "' does not match the model:";
  for (const std::string& p : problems) msg += "\n  " + p;
  fluxion::detail::fail(op, msg);
}

}  // namespace

void save_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, const TrainState& state) {
  std::vector<std::string> names = model.param_names();
  std::vector<std::string> state_names = optimizer.state_names(names);
  if (state.params.size() != names.size() || state.opt_state.size() != state_names.size()) {
    fluxion::detail::fail("nn::save_checkpoint", "the state holds " + std::to_string(state.params.size()) + " parameters and " +
                                            std::to_string(state.opt_state.size()) + " optimizer tensors; the model has " +
                                            std::to_string(names.size()) + " and the optimizer " +
                                            std::to_string(state_names.size()));
  }
  NamedArrays tensors;
  for (size_t i = 0; i < names.size(); ++i) tensors.emplace_back(names[i], state.params[i]);
  for (size_t i = 0; i < state_names.size(); ++i) tensors.emplace_back(kOptimizerPrefix + state_names[i], state.opt_state[i]);
  std::string summary = model.summary();
  save_safetensors(path, tensors, {{"format", "fluxion"}, {"model", summary}, {"optimizer", optimizer.describe()}});
}

void load_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, TrainState& state) {
  std::map<std::string, Array> file = by_name(load_safetensors(path));
  std::vector<Expected> want = expected_params(model);
  std::vector<std::string> names = model.param_names();
  std::vector<Array> zero_params;
  for (const Expected& e : want) zero_params.emplace_back(e.type.dtype, e.type.shape);
  std::vector<Array> fresh_state = optimizer.init(zero_params);
  std::vector<std::string> state_names = optimizer.state_names(names);
  size_t n_params = want.size();
  for (size_t i = 0; i < state_names.size(); ++i)
    want.push_back({kOptimizerPrefix + state_names[i], fresh_state[i].type()});
  std::vector<std::string> problems;
  std::vector<Array> loaded = take_checked(file, want, problems);
  for (const auto& [name, a] : file) {
    bool known = false;
    for (const Expected& e : want) known = known || e.name == name;
    if (!known) problems.push_back("unexpected '" + name + "' " + a.type().str());
  }
  if (!problems.empty()) mismatch("nn::load_checkpoint", path, problems);
  state.params.assign(loaded.begin(), loaded.begin() + static_cast<std::ptrdiff_t>(n_params));
  state.opt_state.assign(loaded.begin() + static_cast<std::ptrdiff_t>(n_params), loaded.end());
}

std::vector<Array> load_parameters(const std::string& path, const Model& model) {
  std::map<std::string, Array> file = by_name(load_safetensors(path));
  std::vector<std::string> problems;
  std::vector<Array> params = take_checked(file, expected_params(model), problems);
  for (const auto& [name, a] : file) {
    bool known = name.rfind(kOptimizerPrefix, 0) == 0;
    for (const std::string& n : model.param_names()) known = known || n == name;
    if (!known) problems.push_back("unexpected '" + name + "' " + a.type().str());
  }
  if (!problems.empty()) mismatch("nn::load_parameters", path, problems);
  return params;
}

}  // namespace fluxion::nn
