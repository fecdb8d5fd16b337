#include "fluxion/nn/checkpoint.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>

#include "fluxion/error.h"
#include "fluxion/safetensors.h"

namespace fluxion::nn {

namespace {

constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kStepName = "trainer.step";
constexpr const char* kKeyName = "trainer.key";
// Dynamic loss scaling's state (TrainState::loss_scale), when the run scales its loss.
constexpr const char* kLossScaleNames[] = {"trainer.loss_scale", "trainer.loss_scale_good_steps",
                                           "trainer.skipped_steps"};

struct Expected {
  std::string name;
  TensorType type;
};

std::vector<Expected> expected(const std::vector<ParamSpec>& specs) {
  std::vector<Expected> out;
  for (const ParamSpec& s : specs) out.push_back({s.name, {f32, s.shape}});
  return out;
}

// A checkpoint's training state beside the model's tensors: the optimizer's, the step, the key,
// the loss scale.
bool is_training_entry(const std::string& name) {
  return name.starts_with(kOptimizerPrefix) || name == kStepName || name == kKeyName ||
         std::find(std::begin(kLossScaleNames), std::end(kLossScaleNames), name) != std::end(kLossScaleNames);
}

// A 16-bit float tensor read into a wider float parameter: every value converts exactly.
bool widens(const TensorType& file, const TensorType& want) {
  return is_half(file.dtype) && (want.dtype == DType::f32 || want.dtype == DType::f64) && file.shape == want.shape;
}

Array widened(const Array& a, DType to) {
  std::vector<double> v = a.to_doubles();
  if (to == DType::f64) return Array(v, a.shape());
  return Array(std::vector<float>(v.begin(), v.end()), a.shape());
}

[[noreturn]] void mismatch(const std::string& op, const std::string& path, const std::vector<std::string>& problems) {
  std::string msg = "'" + path + "' does not match the model:";
  for (const std::string& p : problems) msg += "\n  " + p;
  fluxion::detail::fail(op, msg);
}

// A file's tensor under the name it is read as.
struct FileTensor {
  std::string file_name;
  Array value;
  bool taken = false;
};

// The name a file's tensor is read as: the first pair of `renames` whose prefix it starts with
// applies.
std::string read_as(const std::string& name, const std::vector<std::pair<std::string, std::string>>& renames) {
  for (const auto& [from, to] : renames)
    if (name.starts_with(from)) return to + name.substr(from.size());
  return name;
}

[[noreturn]] void read_twice(const std::string& op, const std::string& path, const std::string& first,
                             const std::string& second, const std::string& as) {
  fluxion::detail::fail(op, "'" + path + "': '" + first + "' and '" + second + "' are both read as '" + as + "'");
}

// Matches a file's tensors to the expected names, shapes and dtypes, collecting every problem
// (for the strict Error) and the report (for the non-strict loader).
class Matcher {
 public:
  Matcher(const std::string& op, const std::string& path, const LoadOptions& options) : op_(op), path_(path) {
    for (auto& [name, a] : load_safetensors(path)) {
      std::string as = read_as(name, options.rename_prefixes);
      auto [it, fresh] = file_.emplace(as, FileTensor{name, a});
      if (!fresh) read_twice(op, path, it->second.file_name, name, as);
    }
  }

  // The file's array for `e`, or nothing (a missing or mismatched entry, recorded).
  std::optional<Array> take(const Expected& e) {
    auto it = file_.find(e.name);
    if (it == file_.end()) {
      report_.missing.push_back(e.name);
      problems_.push_back("missing '" + e.name + "' " + e.type.str());
      return std::nullopt;
    }
    FileTensor& t = it->second;
    t.taken = true;
    if (widens(t.value.type(), e.type)) return widened(t.value, e.type.dtype);
    if (t.value.type() != e.type) {
      std::string what = "'" + e.name + "'" + (t.file_name == e.name ? "" : " (in the file '" + t.file_name + "')") +
                         " is " + t.value.type().str() + ", expected " + e.type.str();
      report_.mismatched.push_back(what);
      problems_.push_back(what);
      return std::nullopt;
    }
    return t.value;
  }

  // Records every tensor not taken as unexpected, except those `ignored(read-as name, file name)`
  // accepts; then gives the report and, in strict mode, raises the Error listing every problem.
  template <class Ignored>
  void finish(Ignored ignored, bool strict, LoadReport* report) {
    for (const auto& [as, t] : file_) {
      if (t.taken || ignored(as, t.file_name)) continue;
      report_.unexpected.push_back(t.file_name);
      problems_.push_back("unexpected '" + t.file_name + "' " + t.value.type().str());
    }
    if (report) *report = report_;
    if (strict && !problems_.empty()) mismatch(op_, path_, problems_);
  }

 private:
  std::string op_, path_;
  std::map<std::string, FileTensor> file_;
  LoadReport report_;
  std::vector<std::string> problems_;
};

// Each of `want` from the file, else (not strict) from `fresh()`, called once when needed; strict,
// the Error comes later and an empty Array holds the place.
template <class Fresh>
std::vector<Array> take_or(Matcher& m, const std::vector<Expected>& want, bool strict, Fresh fresh) {
  std::vector<Array> out;
  std::vector<Array> initial;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::optional<Array> a = m.take(want[i])) {
      out.push_back(*a);
      continue;
    }
    if (strict) {
      out.emplace_back();
      continue;
    }
    if (initial.empty()) initial = fresh();
    out.push_back(initial[i]);
  }
  return out;
}

LoadedModel load(const std::string& op, const std::string& path, const Model& model, const LoadOptions& options,
                 LoadReport* report, bool with_state) {
  Matcher m(op, path, options);
  LoadedModel out;
  out.params = take_or(m, expected(model.param_specs()), options.strict, [&] { return model.init(options.seed); });
  std::vector<std::string> state_names = model.state_names();
  if (with_state)
    out.state = take_or(m, expected(model.state_specs()), options.strict, [&] { return model.init_state(); });
  m.finish(
      [&](const std::string& as, const std::string& file_name) {
        return is_training_entry(file_name) ||
               (!with_state && std::find(state_names.begin(), state_names.end(), as) != state_names.end());
      },
      options.strict, report);
  return out;
}

// Every tensor of a training state with its checkpoint name and, from a fresh state, its type:
// the parameters and the model state under their own names (a torch state_dict's parameters
// and buffers), the optimizer state under "optimizer.", the step, the key and the loss scale
// (as `loss_scale` has it: a run without loss scaling has none) under "trainer.".
std::vector<Expected> checkpoint_entries(const Model& model, const Optimizer& optimizer,
                                         const std::vector<Array>& loss_scale) {
  std::vector<Expected> out = expected(model.param_specs());
  std::vector<Array> zero_params;
  for (const Expected& e : out) zero_params.emplace_back(e.type.dtype, e.type.shape);
  std::vector<Array> fresh = optimizer.init(zero_params);
  std::vector<std::string> names = optimizer.state_names(model.param_names());
  for (size_t i = 0; i < names.size(); ++i) out.push_back({kOptimizerPrefix + names[i], fresh[i].type()});
  for (const Expected& e : expected(model.state_specs())) out.push_back(e);
  out.push_back({kStepName, {DType::i32, {}}});
  out.push_back({kKeyName, {DType::i32, {2}}});
  for (size_t i = 0; i < loss_scale.size() && i < std::size(kLossScaleNames); ++i)
    out.push_back({kLossScaleNames[i], loss_scale[i].type()});
  return out;
}

std::vector<Array> flat_state(const TrainState& state) {
  std::vector<Array> out = state.params;
  out.insert(out.end(), state.opt_state.begin(), state.opt_state.end());
  out.insert(out.end(), state.model_state.begin(), state.model_state.end());
  out.push_back(state.step);
  out.push_back(state.key);
  out.insert(out.end(), state.loss_scale.begin(), state.loss_scale.end());
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, const TrainState& state) {
  std::vector<Expected> entries = checkpoint_entries(model, optimizer, state.loss_scale);
  std::vector<Array> arrays = flat_state(state);
  std::vector<std::string> problems;
  if (arrays.size() != entries.size()) {
    problems.push_back("the state holds " + std::to_string(state.params.size()) + " parameters, " +
                       std::to_string(state.opt_state.size()) + " optimizer tensors and " +
                       std::to_string(state.model_state.size()) + " model state tensors; the model has " +
                       std::to_string(model.param_specs().size()) + " and " +
                       std::to_string(model.state_specs().size()) + ", the optimizer " +
                       std::to_string(entries.size() - model.param_specs().size() - model.state_specs().size() - 2 -
                                      state.loss_scale.size()));
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
  Matcher m("nn::load_checkpoint", path, LoadOptions{});
  std::vector<Array> loaded;
  for (const Expected& e : checkpoint_entries(model, optimizer, state.loss_scale))
    if (std::optional<Array> a = m.take(e)) loaded.push_back(*a);
  m.finish([](const std::string&, const std::string&) { return false; }, /*strict=*/true, nullptr);
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
  state.key = *next++;
  state.loss_scale = take(state.loss_scale.size());
}

std::vector<Array> load_parameters(const std::string& path, const Model& model, const LoadOptions& options,
                                   LoadReport* report) {
  return load("nn::load_parameters", path, model, options, report, /*with_state=*/false).params;
}

LoadedModel load_model(const std::string& path, const Model& model, const LoadOptions& options, LoadReport* report) {
  return load("nn::load_model", path, model, options, report, /*with_state=*/true);
}

}  // namespace fluxion::nn
