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
std::vector<Array> take_checked(const std::map<std::string, Array>& file, const std::vector<Expected>& want,
                                std::vector<std::string>& problems) {
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

namespace {

constexpr const char* kStepName = "trainer.step";
constexpr const char* kKeyName = "trainer.key";

// Every tensor of a training state with its checkpoint name and, from a fresh state, its type:
// the parameters and the model state under their own names (a torch state_dict's parameters
// and buffers), the optimizer state under "optimizer.", the step and the key under "trainer.".
std::vector<Expected> checkpoint_entries(const Model& model, const Optimizer& optimizer) {
  std::vector<Expected> out = expected_params(model);
  std::vector<Array> zero_params;
  for (const Expected& e : out) zero_params.emplace_back(e.type.dtype, e.type.shape);
  std::vector<Array> fresh = optimizer.init(zero_params);
  std::vector<std::string> names = optimizer.state_names(model.param_names());
  for (size_t i = 0; i < names.size(); ++i) out.push_back({kOptimizerPrefix + names[i], fresh[i].type()});
  for (const ParamSpec& s : model.state_specs()) out.push_back({s.name, {f32, s.shape}});
  out.push_back({kStepName, {DType::i32, {}}});
  out.push_back({kKeyName, {DType::i32, {2}}});
  return out;
}

std::vector<Array> flat_state(const TrainState& state) {
  std::vector<Array> out = state.params;
  out.insert(out.end(), state.opt_state.begin(), state.opt_state.end());
  out.insert(out.end(), state.model_state.begin(), state.model_state.end());
  out.push_back(state.step);
  out.push_back(state.key);
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, const TrainState& state) {
  std::vector<Expected> entries = checkpoint_entries(model, optimizer);
  std::vector<Array> arrays = flat_state(state);
  std::vector<std::string> problems;
  if (arrays.size() != entries.size()) {
    problems.push_back("the state holds " + std::to_string(state.params.size()) + " parameters, " +
                       std::to_string(state.opt_state.size()) + " optimizer tensors and " +
                       std::to_string(state.model_state.size()) + " model state tensors; the model has " +
                       std::to_string(model.param_specs().size()) + " and " +
                       std::to_string(model.state_specs().size()) + ", the optimizer " +
                       std::to_string(entries.size() - model.param_specs().size() - model.state_specs().size() - 2));
  }
  for (size_t i = 0; problems.empty() && i < entries.size(); ++i) {
    if (arrays[i].type() != entries[i].type)
      problems.push_back("'" + entries[i].name + "' is " + arrays[i].type().str() + ", expected " +
                         entries[i].type.str());
  }
  if (!problems.empty()) mismatch("nn::save_checkpoint", path, problems);
  NamedArrays tensors;
  for (size_t i = 0; i < entries.size(); ++i) tensors.emplace_back(entries[i].name, arrays[i]);
  save_safetensors(path, tensors,
                   {{"format", "fluxion"}, {"model", model.summary()}, {"optimizer", optimizer.describe()}});
}

void load_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, TrainState& state) {
  std::map<std::string, Array> file = by_name(load_safetensors(path));
  std::vector<Expected> want = checkpoint_entries(model, optimizer);
  std::vector<std::string> problems;
  std::vector<Array> loaded = take_checked(file, want, problems);
  for (const auto& [name, a] : file) {
    bool known = false;
    for (const Expected& e : want) known = known || e.name == name;
    if (!known) problems.push_back("unexpected '" + name + "' " + a.type().str());
  }
  if (!problems.empty()) mismatch("nn::load_checkpoint", path, problems);
  auto next = loaded.begin();
  auto take = [&](size_t n) {
    std::vector<Array> part(next, next + static_cast<std::ptrdiff_t>(n));
    next += static_cast<std::ptrdiff_t>(n);
    return part;
  };
  state.params = take(model.param_specs().size());
  state.opt_state = take(optimizer.state_names(model.param_names()).size());
  state.model_state = take(model.state_specs().size());
  state.step = *next++;
  state.key = *next;
}

std::vector<Array> load_parameters(const std::string& path, const Model& model) {
  std::map<std::string, Array> file = by_name(load_safetensors(path));
  std::vector<std::string> problems;
  std::vector<Array> params = take_checked(file, expected_params(model), problems);
  for (const auto& [name, a] : file) {
    bool known = name.rfind(kOptimizerPrefix, 0) == 0 || name == kStepName || name == kKeyName;
    for (const std::string& n : model.state_names()) known = known || n == name;
    for (const std::string& n : model.param_names()) known = known || n == name;
    if (!known) problems.push_back("unexpected '" + name + "' " + a.type().str());
  }
  if (!problems.empty()) mismatch("nn::load_parameters", path, problems);
  return params;
}

}  // namespace fluxion::nn
