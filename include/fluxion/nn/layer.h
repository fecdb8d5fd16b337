// Layers and models: a layer describes its parameters (names, shapes, initialisers) and how it
// maps an input Tensor to an output Tensor given those parameters. Parameters are not stored
// in the layer: they are a std::vector<Array> the user owns (JAX/Flax style), passed to a
// compiled program as its inputs and returned updated by a training step, so the same model
// runs on any backend and its parameters stay wherever that backend keeps them.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/nn/init.h"
#include "fluxion/tensor.h"

namespace fluxion::nn {

struct ParamSpec {
  std::string name;  // PyTorch's state_dict name: "weight", "0.bias", "weight_ih_l0"
  Shape shape;
  Initializer init;
};

// What a layer's apply() sees besides its parameters and its input.
struct Context {
  bool training = false;          // training mode: dropout drops, batch norm uses batch statistics
  Tensor key;                     // this layer's random key (i32[2], random::key); empty when the
                                  // caller gave none
  std::span<const Tensor> state;  // this layer's state, in state() order
  std::vector<Tensor> new_state;  // set by the layer when it updates its state (same order and
                                  // types); left empty, the state stays as it was
  // The key, or an Error naming `layer` when the caller gave none.
  const Tensor& require_key(const std::string& layer) const;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // This layer's parameters, in the order forward() and apply() take them.
  virtual std::vector<ParamSpec> params() const { return {}; }
  // Its mutable state (PyTorch's buffers: batch norm's running statistics), not trained but
  // updated by apply() in training mode and saved in checkpoints.
  virtual std::vector<ParamSpec> state() const { return {}; }
  // The output for input `x` in evaluation mode; `p` holds one Tensor per params() entry with
  // its shape. Raises Error (naming the layer, the input's shape and what it expected) when x
  // does not fit. A layer implements forward() or apply() (or both): by default, forward() is
  // apply() in evaluation mode without a key (an Error for a layer with state), and apply() is
  // forward().
  virtual Tensor forward(std::span<const Tensor> p, const Tensor& x) const;
  // The output in the mode, with the key and the state, of `ctx`; a layer with state writes its
  // updated state into ctx.new_state.
  virtual Tensor apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const;
  // "Dense(784 -> 32)".
  virtual std::string describe() const = 0;
};

struct ApplyOptions {
  bool training = false;
  Tensor key;  // the step's random key (i32[2]): each layer gets fold_in(key, its index)
};

// A model's output and its updated state.
struct Applied {
  Tensor output;
  std::vector<Tensor> state;
};

// A handle to a layer (copies share it): what users pass around and call.
class Model {
 public:
  template <class L>
  requires std::derived_from<L, Layer> Model(L layer) : layer_(std::make_shared<L>(std::move(layer))) {}
  explicit Model(std::shared_ptr<const Layer> layer);

  std::vector<ParamSpec> param_specs() const { return layer_->params(); }
  std::vector<std::string> param_names() const;
  // (name, spec) of every parameter, in order (torch's named_parameters()).
  std::vector<std::pair<std::string, ParamSpec>> named_parameters() const;
  int64_t param_count() const;  // number of scalar parameters
  // Fresh parameters drawn from each spec's initialiser; the same seed gives the same values. In
  // `dtype` (a float dtype): an f64 model's values are its f32 model's widened, an f16 or bf16
  // model's its f32 model's rounded.
  std::vector<Array> init(uint64_t seed, DType dtype = DType::f32) const;
  // The state's names ("1.running_mean", as a torch state_dict's buffers) and specs.
  std::vector<ParamSpec> state_specs() const { return layer_->state(); }
  std::vector<std::string> state_names() const;
  // A fresh state from each spec's initialiser, in `dtype` (a float dtype; the model's inputs').
  std::vector<Array> init_state(DType dtype = DType::f32) const;
  // The forward pass in evaluation mode inside a trace (a model without state). Raises Error
  // when `params` do not match param_specs().
  Tensor operator()(std::span<const Tensor> params, const Tensor& x,
                    std::source_location loc = std::source_location::current()) const;
  // The forward pass in training or evaluation mode with the model's state (state_specs()
  // order): the output and the updated state.
  Applied apply(std::span<const Tensor> params, std::span<const Tensor> state, const Tensor& x,
                const ApplyOptions& options, std::source_location loc = std::source_location::current()) const;
  // One line per layer with its parameter shapes, and the total count.
  std::string summary() const;
  const Layer& layer() const { return *layer_; }

 private:
  std::shared_ptr<const Layer> layer_;
};

// Named access to a model's parameters, or to anything laid out like them (gradients, Adam's
// moments): view["0.weight"]. Holds a reference to the list; raises Error naming the model's
// parameters for an unknown name. T is Array (host side) or Tensor (inside a trace).
template <class T>
class Named {
 public:
  Named(const Model& model, std::vector<T>& values);
  T& operator[](const std::string& name) const;
  // The entries whose names start with `prefix` ("1." for a Sequential's second layer), in
  // order: the parameter list of that sub-model.
  std::vector<T> with_prefix(const std::string& prefix) const;
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::vector<T>* values_;
};

// Layers applied in order; parameter and state names are prefixed with the layer's index
// ("0.weight"), as in PyTorch's nn.Sequential, and layer i's key is fold_in(key, i).
class Sequential : public Layer {
 public:
  Sequential(std::initializer_list<Model> layers) : layers_(layers) {}
  explicit Sequential(std::vector<Model> layers) : layers_(std::move(layers)) {}
  std::vector<ParamSpec> params() const override;
  std::vector<ParamSpec> state() const override;
  Tensor apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const override;
  std::string describe() const override;
  const std::vector<Model>& layers() const { return layers_; }

 private:
  std::vector<Model> layers_;
};

// Checks that `x` has rank `rank` (or at least `rank` when `at_least`) and that its dimension
// `axis` is `size` (skipped when size < 0); raises Error naming `layer` otherwise.
void expect_input(const std::string& layer, const Tensor& x, int64_t rank, int64_t axis, int64_t size,
                  bool at_least = false);

}  // namespace fluxion::nn
