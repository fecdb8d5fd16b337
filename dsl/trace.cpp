#include "dsl/trace.h"

#include <algorithm>
#include <string>

#include "dsl/eager.h"
#include "fluxion/error.h"

namespace fluxion::detail {
namespace {

// The frames being recorded on this thread, innermost last. Tracing is per thread: several
// threads may trace at once.
thread_local std::vector<std::shared_ptr<Frame>> g_stack;

}  // namespace

FrameScope::FrameScope(bool top_level) : frame_(std::make_shared<Frame>()) {
  if (top_level) saved_.swap(g_stack);
  frame_->parent = g_stack.empty() ? nullptr : g_stack.back().get();
  g_stack.push_back(frame_);
}

FrameScope::~FrameScope() {
  frame_->active = false;
  auto it = std::find(g_stack.begin(), g_stack.end(), frame_);
  if (it != g_stack.end()) g_stack.erase(it, g_stack.end());
  if (!saved_.empty()) saved_.swap(g_stack);
}

Tensor FrameScope::add_param(const TensorType& t) { return TensorAccess::make(frame_, frame_->region.add_param(t)); }

std::pair<ir::Region, std::vector<std::pair<ir::ValueId, ir::ValueId>>> FrameScope::finish(
    const std::vector<Tensor>& outs, const char* op, const std::source_location& loc) {
  for (const Tensor& t : outs) frame_->region.results.push_back(use(*frame_, t, op, loc));
  frame_->active = false;
  return {std::move(frame_->region), std::move(frame_->captures)};
}

const std::shared_ptr<Frame>& current_frame(const char* op, const std::source_location& loc) {
  if (g_stack.empty()) {
    fail(op, "no trace is active: Tensor ops run inside a function given to fluxion::jit", &loc);
  }
  return g_stack.back();
}

void require_valid(const Tensor& t, const char* op, const std::source_location& loc) {
  if (!t.valid()) fail(op, "an empty Tensor (default-constructed) was used as an operand", &loc);
}

ir::ValueId use(Frame& f, const Tensor& t, const char* op, const std::source_location& loc) {
  require_valid(t, op, loc);
  const auto& owner = TensorAccess::frame(t);
  if (owner.get() == &f) return TensorAccess::id(t);
  if (!owner->active || !f.parent) {
    fail(op,
         "a Tensor of type " + t.type().str() +
             " is used outside the trace that created it (it escaped from a traced function or loop body)",
         &loc);
  }
  ir::ValueId outer = use(*f.parent, t, op, loc);
  for (auto [parent_id, param] : f.captures) {
    if (parent_id == outer) return param;
  }
  ir::ValueId param = f.region.add_param(t.type());
  f.captures.emplace_back(outer, param);
  return param;
}

std::vector<Tensor> emit(ir::Op op, const std::vector<Tensor>& operands, ir::Attrs attrs,
                         std::vector<TensorType> declared, std::vector<ir::Region> regions,
                         const std::source_location& loc) {
  const std::shared_ptr<Frame>& f = current_frame(ir::op_name(op), loc);
  std::vector<ir::ValueId> ids;
  ids.reserve(operands.size());
  for (const Tensor& t : operands) ids.push_back(use(*f, t, ir::op_name(op), loc));
  const std::vector<ir::ValueId>& res =
      f->region.add(op, std::move(ids), std::move(attrs), std::move(declared), std::move(regions), &loc);
  if (f->eager) evaluate_recorded(*f);
  std::vector<Tensor> out;
  for (ir::ValueId v : res) out.push_back(TensorAccess::make(f, v));
  return out;
}

Tensor emit1(ir::Op op, const std::vector<Tensor>& operands, const std::source_location& loc, ir::Attrs attrs,
             std::vector<TensorType> declared) {
  return emit(op, operands, std::move(attrs), std::move(declared), {}, loc)[0];
}

int64_t norm_axis(int64_t axis, int64_t rank, const char* op, const std::source_location& loc) {
  if (axis < -rank || axis >= rank) {
    fail(op,
         "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) + " (expected -" +
             std::to_string(rank) + " <= axis < " + std::to_string(rank) + ")",
         &loc);
  }
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const TensorType& a, const TensorType& b, const char* op, const std::source_location& loc) {
  size_t n = std::max(a.shape.size(), b.shape.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < a.shape.size() ? a.shape[a.shape.size() - 1 - i] : 1;
    int64_t db = i < b.shape.size() ? b.shape[b.shape.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      fail(op,
           "shapes " + a.str() + " and " + b.str() +
               " are not broadcastable (expected equal dimensions or 1, aligned from the right)",
           &loc);
    }
    out[n - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Tensor broadcast_as(const Tensor& x, const Shape& shape, const std::source_location& loc) {
  if (x.shape() == shape) return x;
  return emit1(ir::Op::Broadcast, {x}, loc, {}, {TensorType{x.dtype(), shape}});
}

Tensor splat(double value, const TensorType& t, const std::source_location& loc) {
  ir::Attrs a;
  a.data = {value};
  return emit1(ir::Op::Constant, {}, loc, std::move(a), {t});
}

Tensor scalar_like(double value, const TensorType& like, const char* op, const std::source_location& loc) {
  current_frame(op, loc);  // a Tensor kept past its trace is reported as the op it was used in
  if (like.dtype == DType::i32 && (value != static_cast<double>(static_cast<int32_t>(value)))) {
    fail(op,
         "the scalar " + std::to_string(value) + " cannot be mixed with an i32 operand " + like.str() +
             " (expected an integral value in i32 range; cast the Tensor first)",
         &loc);
  }
  if (like.dtype == DType::boolean) {
    fail(op, "a number cannot be mixed with a bool operand " + like.str() + " (cast it first)", &loc);
  }
  return splat(value, TensorType{like.dtype, {}}, loc);
}

TracedRegion trace_region(const std::vector<TensorType>& params,
                          const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn, const char* op,
                          const std::source_location& loc) {
  FrameScope scope(false);
  std::vector<Tensor> args;
  for (const TensorType& t : params) args.push_back(scope.add_param(t));
  std::vector<Tensor> outs = fn(args);
  auto [region, captures] = scope.finish(outs, op, loc);
  return {std::move(region), std::move(captures), params.size()};
}

std::vector<Tensor> unify_captures(std::vector<TracedRegion*> regions, const char* op,
                                   const std::source_location& loc) {
  std::vector<ir::ValueId> all;
  for (TracedRegion* r : regions) {
    for (auto [outer, param] : r->captures) {
      if (std::find(all.begin(), all.end(), outer) == all.end()) all.push_back(outer);
    }
  }
  const std::shared_ptr<Frame>& f = current_frame(op, loc);
  for (TracedRegion* r : regions) {
    std::vector<ir::ValueId> params(r->region.params.begin(),
                                    r->region.params.begin() + static_cast<long>(r->declared));
    for (ir::ValueId outer : all) {
      ir::ValueId p = -1;
      for (auto [o, param] : r->captures) {
        if (o == outer) p = param;
      }
      if (p < 0) p = r->region.new_value(f->region.type(outer));
      params.push_back(p);
    }
    r->region.params = std::move(params);
  }
  std::vector<Tensor> out;
  for (ir::ValueId v : all) out.push_back(TensorAccess::make(f, v));
  return out;
}

void rethrow_at(const Error& e, const char* doing, const std::source_location& loc) {
  throw Error(std::string(e.what()) + " (" + doing + " at " + loc.file_name() + ":" + std::to_string(loc.line()) + ")");
}

std::vector<Tensor> inline_traced(const ir::Region& r, const std::vector<Tensor>& args, const char* op,
                                  const std::source_location& loc) {
  const std::shared_ptr<Frame>& f = current_frame(op, loc);
  std::vector<ir::ValueId> ids;
  for (const Tensor& a : args) ids.push_back(use(*f, a, op, loc));
  std::vector<Tensor> out;
  for (ir::ValueId v : ir::inline_region(f->region, r, ids)) out.push_back(TensorAccess::make(f, v));
  return out;
}

std::vector<TensorType> types_of(const std::vector<Tensor>& ts, const char* op, const std::source_location& loc) {
  std::vector<TensorType> out;
  for (const Tensor& t : ts) {
    if (!t.valid()) fail(op, "an empty Tensor (default-constructed) was given as an argument", &loc);
    out.push_back(t.type());
  }
  return out;
}

}  // namespace fluxion::detail

namespace fluxion {

int64_t Tensor::dim(int64_t axis, std::source_location loc) const {
  return shape()[static_cast<size_t>(detail::norm_axis(axis, rank(), "dim", loc))];
}

}  // namespace fluxion
