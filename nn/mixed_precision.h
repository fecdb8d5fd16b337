// The pieces of a mixed-precision training step (MixedPrecision, fluxion/nn/trainer.h): the
// casts into and out of the compute dtype, and dynamic loss scaling's skip and scale update.
#pragma once

#include <optional>
#include <vector>

#include "fluxion/f16_sums.h"
#include "fluxion/nn/trainer.h"
#include "fluxion/tensor.h"

namespace fluxion::nn::detail {

using Tensors = std::vector<Tensor>;

// The casts of one step under `policy`, for parameters of `param_dtype`, and the policy's
// permission to sum products in f16 while the step is traced.
class Autocast {
 public:
  Autocast(const MixedPrecision& policy, DType param_dtype);
  // x in the compute dtype when x is a float tensor of another dtype and the policy is on.
  // (Model state is not cast: batch norm keeps its statistics in their own dtype.)
  Tensor down(const Tensor& x) const;
  Tensors down(const Tensors& xs) const;
  // x back in `dtype` (an output in the parameters' dtype, a state in its own).
  Tensor up(const Tensor& x, DType dtype) const;
  DType param_dtype() const { return param_dtype_; }

 private:
  bool on_;
  DType compute_;
  DType param_dtype_;
  std::optional<F16Sums> f16_sums_;
};

// Whether every element of every gradient is finite (a bool scalar).
Tensor all_finite(const Tensors& grads);

// `updated` where `ok`, else `kept` (a skipped step), tensor by tensor.
Tensors unless_skipped(const Tensor& ok, const Tensors& updated, const Tensors& kept);

// The next (scale, finite steps, skipped steps) from this step's: the scale halved and the
// finite steps reset after a non-finite step, the scale doubled after growth_interval finite
// steps in a row.
Tensors next_loss_scale(const MixedPrecision& policy, const Tensors& scale, const Tensor& ok);

}  // namespace fluxion::nn::detail
