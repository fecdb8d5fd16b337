// value_and_grad on traced functions: trace f as a region, differentiate the region, and inline
// the result into the enclosing trace.
#include "fluxion/autodiff.h"

#include <string>

#include "dsl/src/trace.h"
#include "fluxion/error.h"
#include "jit/autodiff/autodiff.h"

namespace fluxion::detail {
namespace {

// Records r into the current frame with r's parameters bound to `args`; returns its results.
std::vector<Tensor> inline_region(const ir::Region& r, const std::vector<Tensor>& args, const std::source_location& loc) {
  const std::shared_ptr<Frame>& f = current_frame("grad", loc);
  std::vector<ir::ValueId> ids;
  for (const Tensor& a : args) ids.push_back(use(*f, a, "grad", loc));
  std::vector<Tensor> out;
  for (ir::ValueId v : ir::inline_region(f->region, r, ids)) out.push_back(TensorAccess::make(f, v));
  return out;
}

}  // namespace

void check_wrt(const std::vector<int>& wrt, size_t n, const std::source_location& loc) {
  for (int w : wrt) {
    if (w < 0 || static_cast<size_t>(w) >= n) {
      fail("grad", "wrt index " + std::to_string(w) + " is out of range for a function of " + std::to_string(n) +
                       " argument(s)", &loc);
    }
  }
}

std::vector<Tensor> value_and_grad_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                        const std::vector<Tensor>& args, const std::vector<bool>& wrt,
                                        const std::source_location& loc) {
  std::shared_ptr<Frame> outer = current_frame("grad", loc);
  ir::Region region;
  std::vector<Tensor> operands = args;
  {
    FrameScope scope(false);
    std::vector<Tensor> params;
    for (const Tensor& a : args) {
      require_valid(a, "grad", loc);
      params.push_back(scope.add_param(a.type()));
    }
    std::vector<Tensor> outs = fn(params);
    auto [r, captures] = scope.finish(outs, "grad", loc);
    region = std::move(r);
    // Captured Tensors of the enclosing function are constants of the differentiation.
    for (auto [outer_id, param] : captures) operands.push_back(TensorAccess::make(outer, outer_id));
  }
  std::vector<bool> mask = wrt;
  mask.resize(region.params.size(), false);
  try {
    return inline_region(autodiff::value_and_grad(region, mask), operands, loc);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (differentiating at " + loc.file_name() + ":" + std::to_string(loc.line()) + ")");
  }
}

}  // namespace fluxion::detail
