// Recording of scan, while and cond: each traces its regions in nested frames, then gathers
// the Tensors the regions captured from the enclosing function into extra operands.
#include "fluxion/control.h"

#include <algorithm>
#include <string>

#include "dsl/src/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion::detail {
namespace {

using ir::ValueId;

struct TracedRegion {
  ir::Region region;
  std::vector<std::pair<ValueId, ValueId>> captures;  // (enclosing value, region param)
  size_t declared = 0;                                // params before the captures
};

TracedRegion trace_region(const std::vector<TensorType>& params, const RegionFn& fn, const char* op,
                          const std::source_location& loc) {
  FrameScope scope(false);
  std::vector<Tensor> args;
  for (const TensorType& t : params) args.push_back(scope.add_param(t));
  std::vector<Tensor> outs = fn(args);
  auto [region, captures] = scope.finish(outs, op, loc);
  return {std::move(region), std::move(captures), params.size()};
}

// Gives every region one parameter per value captured by any of them, in one shared order,
// and returns those values (as Tensors of the enclosing frame) to append to the operands.
std::vector<Tensor> unify_captures(std::vector<TracedRegion*> regions, const char* op,
                                   const std::source_location& loc) {
  std::vector<ValueId> all;
  for (TracedRegion* r : regions) {
    for (auto [outer, param] : r->captures) {
      if (std::find(all.begin(), all.end(), outer) == all.end()) all.push_back(outer);
    }
  }
  const std::shared_ptr<Frame>& f = current_frame(op, loc);
  for (TracedRegion* r : regions) {
    std::vector<ValueId> params(r->region.params.begin(), r->region.params.begin() + static_cast<long>(r->declared));
    for (ValueId outer : all) {
      ValueId p = -1;
      for (auto [o, param] : r->captures) {
        if (o == outer) p = param;
      }
      if (p < 0) p = r->region.new_value(f->region.type(outer));
      params.push_back(p);
    }
    r->region.params = std::move(params);
  }
  std::vector<Tensor> out;
  for (ValueId v : all) out.push_back(TensorAccess::make(f, v));
  return out;
}

std::vector<TensorType> types_of(const std::vector<Tensor>& ts, const char* op, const std::source_location& loc) {
  std::vector<TensorType> out;
  for (const Tensor& t : ts) {
    if (!t.valid()) fail(op, "an empty Tensor (default-constructed) was given as a loop value", &loc);
    out.push_back(t.type());
  }
  return out;
}

}  // namespace

std::vector<Tensor> emit_scan(int64_t length, bool reverse, const std::vector<Tensor>& carries,
                              const std::vector<Tensor>& xs, const RegionFn& body,
                              const std::source_location& loc) {
  if (length < 0) fail("scan", "the trip count is unknown: give ScanOptions::length when there are no xs", &loc);
  std::vector<TensorType> params{TensorType{DType::i32, {}}};
  for (const TensorType& t : types_of(carries, "scan", loc)) params.push_back(t);
  for (const TensorType& t : types_of(xs, "scan", loc)) {
    if (t.rank() == 0 || t.shape[0] != length) {
      fail("scan", "per-step input " + t.str() + " must have leading dimension " + std::to_string(length), &loc);
    }
    TensorType slice = t;
    slice.shape.erase(slice.shape.begin());
    params.push_back(slice);
  }
  TracedRegion r = trace_region(params, body, "scan", loc);
  std::vector<Tensor> operands = carries;
  operands.insert(operands.end(), xs.begin(), xs.end());
  for (const Tensor& c : unify_captures({&r}, "scan", loc)) operands.push_back(c);
  ir::Attrs a;
  a.length = length;
  a.carries = static_cast<int64_t>(carries.size());
  a.xs = static_cast<int64_t>(xs.size());
  a.reverse = reverse;
  std::vector<ir::Region> regions;
  regions.push_back(std::move(r.region));
  return emit(ir::Op::Scan, operands, std::move(a), {}, std::move(regions), loc);
}

std::vector<Tensor> emit_while(const std::vector<Tensor>& carries, const RegionFn& cond, const RegionFn& body,
                               int64_t max_iters, const std::source_location& loc) {
  if (max_iters < -1) fail("while", "max_iters must be >= 0, or -1 for no bound", &loc);
  std::vector<TensorType> params = types_of(carries, "while", loc);
  TracedRegion c = trace_region(params, cond, "while", loc);
  TracedRegion b = trace_region(params, body, "while", loc);
  std::vector<Tensor> operands = carries;
  for (const Tensor& t : unify_captures({&c, &b}, "while", loc)) operands.push_back(t);
  ir::Attrs a;
  a.carries = static_cast<int64_t>(carries.size());
  a.max_iters = max_iters;
  std::vector<ir::Region> regions;
  regions.push_back(std::move(c.region));
  regions.push_back(std::move(b.region));
  return emit(ir::Op::While, operands, std::move(a), {}, std::move(regions), loc);
}

std::vector<Tensor> emit_cond(const Tensor& pred, const RegionFn& then_fn, const RegionFn& else_fn,
                              const std::source_location& loc) {
  if (!pred.valid() || pred.type() != TensorType{DType::boolean, {}}) {
    fail("cond", "the predicate " + pred.type().str() + " must be a bool scalar Tensor", &loc);
  }
  TracedRegion t = trace_region({}, then_fn, "cond", loc);
  TracedRegion e = trace_region({}, else_fn, "cond", loc);
  std::vector<Tensor> operands{pred};
  for (const Tensor& c : unify_captures({&t, &e}, "cond", loc)) operands.push_back(c);
  std::vector<ir::Region> regions;
  regions.push_back(std::move(t.region));
  regions.push_back(std::move(e.region));
  return emit(ir::Op::Cond, operands, {}, {}, std::move(regions), loc);
}

Tensor offset_index(const Tensor& i, int64_t offset, const std::source_location& loc) {
  if (offset == 0) return i;
  return add(i, scalar(static_cast<double>(offset), DType::i32, loc), loc);
}

}  // namespace fluxion::detail
