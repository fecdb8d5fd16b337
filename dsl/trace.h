// The tracing machinery behind Tensor: a stack of frames, one per function being recorded
// (the top-level function, then one per loop body or branch inside it).
#pragma once

#include <functional>
#include <memory>
#include <source_location>
#include <utility>
#include <vector>

#include "fluxion/error.h"
#include "fluxion/tensor.h"
#include "ir/ir.h"

namespace fluxion::detail {

struct EagerValues;  // dsl/eager.h

// One region being recorded. A Tensor of an enclosing frame used here is captured: it becomes
// an extra parameter of this region, and the op that owns the region passes it as an operand.
struct Frame {
  ir::Region region;
  Frame* parent = nullptr;
  bool active = true;
  // (parent's value id, this region's parameter id) for each captured value, in capture order.
  std::vector<std::pair<ir::ValueId, ir::ValueId>> captures;
  // The values of an eager trace's top-level frame (fluxion::eager), else null.
  std::shared_ptr<EagerValues> eager;
};

struct TensorAccess {
  static const std::shared_ptr<Frame>& frame(const Tensor& t) { return t.frame_; }
  static ir::ValueId id(const Tensor& t) { return t.id_; }
  static Tensor make(std::shared_ptr<Frame> f, ir::ValueId id) {
    Tensor t;
    t.type_ = f->region.type(id);
    t.frame_ = std::move(f);
    t.id_ = id;
    return t;
  }
};

// Starts recording a new region nested in the current one (or a top-level one when no trace is
// active); ends it when destroyed.
class FrameScope {
 public:
  // A top-level scope starts a fresh trace even inside another one (the enclosing frames are
  // set aside until it ends); a nested scope records a region of the current trace.
  explicit FrameScope(bool top_level);
  ~FrameScope();
  FrameScope(const FrameScope&) = delete;
  FrameScope& operator=(const FrameScope&) = delete;
  Frame& frame() { return *frame_; }
  Tensor add_param(const TensorType& t);
  // Makes the region return `outs` and closes it; returns the region and its captures as
  // (value id in the enclosing frame, parameter id in the region) pairs.
  std::pair<ir::Region, std::vector<std::pair<ir::ValueId, ir::ValueId>>> finish(const std::vector<Tensor>& outs,
                                                                                 const char* op,
                                                                                 const std::source_location& loc);

 private:
  std::shared_ptr<Frame> frame_;
  std::vector<std::shared_ptr<Frame>> saved_;  // the enclosing trace, set aside by a top-level scope
};

// The innermost active frame; Error naming `op` when no trace is active.
const std::shared_ptr<Frame>& current_frame(const char* op, const std::source_location& loc);
// The id of `t` in frame `f`, capturing it from enclosing frames as needed. Error when `t` is
// empty or belongs to a trace that is not `f` or one of its ancestors.
ir::ValueId use(Frame& f, const Tensor& t, const char* op, const std::source_location& loc);

// Records op on the innermost frame and returns its results as Tensors.
std::vector<Tensor> emit(ir::Op op, const std::vector<Tensor>& operands, ir::Attrs attrs,
                         std::vector<TensorType> declared, std::vector<ir::Region> regions,
                         const std::source_location& loc);
// The common single-result case.
Tensor emit1(ir::Op op, const std::vector<Tensor>& operands, const std::source_location& loc, ir::Attrs attrs = {},
             std::vector<TensorType> declared = {});

// ---- Regions of loops, branches and differentiated functions.
struct TracedRegion {
  ir::Region region;
  std::vector<std::pair<ir::ValueId, ir::ValueId>> captures;  // (enclosing value, region param)
  size_t declared = 0;                                        // params before the captures
};
// Traces fn as a region nested in the current trace, on parameters of the given types.
TracedRegion trace_region(const std::vector<TensorType>& params,
                          const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn, const char* op,
                          const std::source_location& loc);
// Gives every region one parameter per value captured by any of them, in one shared order,
// and returns those values (as Tensors of the enclosing frame) to append to the operands.
std::vector<Tensor> unify_captures(std::vector<TracedRegion*> regions, const char* op, const std::source_location& loc);
// Records r into the current frame with r's parameters bound to `args`; returns its results.
std::vector<Tensor> inline_traced(const ir::Region& r, const std::vector<Tensor>& args, const char* op,
                                  const std::source_location& loc);
// Rethrows an Error raised by a transform (differentiation, batching) with the transformed
// call's location: "(<doing> at FILE:LINE)".
[[noreturn]] void rethrow_at(const Error& e, const char* doing, const std::source_location& loc);
// The types of ts; Error naming op for an empty Tensor.
std::vector<TensorType> types_of(const std::vector<Tensor>& ts, const char* op, const std::source_location& loc);

// ---- Helpers shared by the op files.
// Error naming op when t is an empty (default-constructed) Tensor.
void require_valid(const Tensor& t, const char* op, const std::source_location& loc);
// Normalises a possibly negative axis; Error naming op when out of range.
int64_t norm_axis(int64_t axis, int64_t rank, const char* op, const std::source_location& loc);
// The NumPy broadcast of two shapes; Error naming op and both types when impossible.
Shape broadcast_shapes(const TensorType& a, const TensorType& b, const char* op, const std::source_location& loc);
// x broadcast to `shape` (no op when already equal).
Tensor broadcast_as(const Tensor& x, const Shape& shape, const std::source_location& loc);
// A splat constant of the given type.
Tensor splat(double value, const TensorType& t, const std::source_location& loc);
// A scalar mixed into an op with a Tensor of dtype `dt`, checked for representability.
Tensor scalar_like(double value, const TensorType& like, const char* op, const std::source_location& loc);

}  // namespace fluxion::detail
