// The array operations of the DSL. Each records one or a few graph-IR ops (docs/ir.md) and
// raises fluxion::Error at trace time, naming the op, the shapes and dtypes and the caller's
// source location, when its operands do not fit.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <utility>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/collectives.h"
#include "fluxion/f16_sums.h"
#include "fluxion/tensor.h"

namespace fluxion {

using Loc = std::source_location;

// A set of axes for a reduction; negative axes count from the end. Default: all axes.
class Axes {
 public:
  Axes() = default;
  Axes(int64_t axis) : all_(false), axes_{axis} {}
  Axes(std::initializer_list<int64_t> axes) : all_(axes.size() == 0), axes_(axes) {}
  Axes(std::vector<int64_t> axes) : all_(false), axes_(std::move(axes)) {}
  // No axis at all (a reduction that keeps every dimension).
  static Axes none() { return Axes(std::vector<int64_t>{}); }
  bool all() const { return all_; }
  const std::vector<int64_t>& list() const { return axes_; }

 private:
  bool all_ = true;
  std::vector<int64_t> axes_;
};

// ---- Elementwise unary. Float-only ops raise Error on i32/bool operands.
Tensor neg(const Tensor& x, Loc loc = Loc::current());
Tensor abs(const Tensor& x, Loc loc = Loc::current());
Tensor sign(const Tensor& x, Loc loc = Loc::current());
Tensor square(const Tensor& x, Loc loc = Loc::current());
Tensor relu(const Tensor& x, Loc loc = Loc::current());
Tensor exp(const Tensor& x, Loc loc = Loc::current());
Tensor expm1(const Tensor& x, Loc loc = Loc::current());
Tensor log(const Tensor& x, Loc loc = Loc::current());
Tensor log1p(const Tensor& x, Loc loc = Loc::current());
Tensor sqrt(const Tensor& x, Loc loc = Loc::current());
Tensor rsqrt(const Tensor& x, Loc loc = Loc::current());
Tensor sin(const Tensor& x, Loc loc = Loc::current());
Tensor cos(const Tensor& x, Loc loc = Loc::current());
Tensor tanh(const Tensor& x, Loc loc = Loc::current());
Tensor sigmoid(const Tensor& x, Loc loc = Loc::current());
Tensor softplus(const Tensor& x, Loc loc = Loc::current());
Tensor erf(const Tensor& x, Loc loc = Loc::current());
Tensor floor(const Tensor& x, Loc loc = Loc::current());
Tensor logical_not(const Tensor& x, Loc loc = Loc::current());
// x, but differentiation treats it as a constant (no gradient flows through it).
Tensor stop_gradient(const Tensor& x, Loc loc = Loc::current());

// ---- Elementwise binary with broadcasting (see operators in tensor.h).
Tensor add(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor sub(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor mul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor div(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor pow(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor pow(const Tensor& a, double b, Loc loc = Loc::current());
Tensor pow(double a, const Tensor& b, Loc loc = Loc::current());
// Elementwise maximum / minimum (NaN propagates). The reductions are max / min.
Tensor maximum(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor maximum(const Tensor& a, double b, Loc loc = Loc::current());
Tensor minimum(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor minimum(const Tensor& a, double b, Loc loc = Loc::current());
Tensor atan2(const Tensor& y, const Tensor& x, Loc loc = Loc::current());
Tensor atan2(const Tensor& y, double x, Loc loc = Loc::current());
Tensor logical_and(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor logical_or(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor eq(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor ne(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor lt(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor le(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor gt(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor ge(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

// where(cond, a, b): a where cond is true, else b; all three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor where(const Tensor& cond, const Tensor& a, double b, Loc loc = Loc::current());
Tensor where(const Tensor& cond, double a, const Tensor& b, Loc loc = Loc::current());
// Converts to `dtype` (float to i32 truncates toward zero; to bool: x != 0).
Tensor cast(const Tensor& x, DType dtype, Loc loc = Loc::current());

// ---- Reductions. `keepdims` keeps reduced axes as size 1.
Tensor sum(const Tensor& x, Axes axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor mean(const Tensor& x, Axes axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor max(const Tensor& x, Axes axes = {}, bool keepdims = false, Loc loc = Loc::current());
Tensor min(const Tensor& x, Axes axes = {}, bool keepdims = false, Loc loc = Loc::current());
// Index (i32) of the first maximum / minimum along `axis`.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims = false, Loc loc = Loc::current());
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims = false, Loc loc = Loc::current());

// ---- Linear algebra. matmul follows NumPy: 1-D operands are promoted (and the added dim
// removed), batch dimensions broadcast. dot is the inner product of two 1-D vectors.
Tensor matmul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor dot(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

struct Conv2dOptions {
  std::vector<int64_t> stride{1, 1};
  // {p} (all sides), {ph, pw} (symmetric) or {top, bottom, left, right}; zeros.
  std::vector<int64_t> padding{0, 0};
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
};
// x [N, C, H, W], w [O, C/groups, KH, KW] -> [N, O, OH, OW] (cross-correlation, as PyTorch).
Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dOptions& opt = {}, Loc loc = Loc::current());

struct Pool2dOptions {
  std::vector<int64_t> window{2, 2};
  std::vector<int64_t> stride{};  // empty: equal to the window
  std::vector<int64_t> padding{0, 0};
};
// Max pooling ignores padding; average pooling counts it (divides by the window size).
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt = {}, Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt = {}, Loc loc = Loc::current());

// ---- Views and data movement.
// One dimension may be -1 (inferred).
Tensor reshape(const Tensor& x, std::vector<int64_t> shape, Loc loc = Loc::current());
Tensor flatten(const Tensor& x, int64_t start_axis = 0, Loc loc = Loc::current());
Tensor squeeze(const Tensor& x, int64_t axis, Loc loc = Loc::current());
Tensor expand_dims(const Tensor& x, int64_t axis, Loc loc = Loc::current());
// Reverses the dimensions.
Tensor transpose(const Tensor& x, Loc loc = Loc::current());
// Result dimension i is x's dimension perm[i].
Tensor permute(const Tensor& x, std::vector<int64_t> perm, Loc loc = Loc::current());
Tensor broadcast_to(const Tensor& x, std::vector<int64_t> shape, Loc loc = Loc::current());
// Per-dimension [start, stop) with step >= 1; negative indices count from the end and are
// clamped into range like Python slices.
Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> stops,
             std::vector<int64_t> steps = {}, Loc loc = Loc::current());
// The same on one axis.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1,
                  Loc loc = Loc::current());
// Zero padding: widths[d] = {before, after} for every dimension (numpy.pad, constant 0).
Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& widths, Loc loc = Loc::current());
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0, Loc loc = Loc::current());
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0, Loc loc = Loc::current());
// take_along_axis: picks x's elements along `axis` at `indices` (i32). `indices` has x's rank,
// or one less (then the axis is added and removed again: logits [B, C], labels [B] -> [B]).
// Out-of-range indices are clamped.
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis, Loc loc = Loc::current());
// index_select: rows of x along `axis` for each index; result x.shape[:axis] + indices.shape +
// x.shape[axis+1:]. Out-of-range indices are clamped.
Tensor take(const Tensor& x, const Tensor& indices, int64_t axis = 0, Loc loc = Loc::current());
// index_add, the transpose of take: the rows of `updates` added into `dim` rows along `axis`
// (segment sums). updates has shape S[:axis] + indices.shape + S[axis+1:] and the result S, with
// S[axis] = dim: result[a, c, b] is the sum of updates[a, i, b] over the i whose index, clamped
// into [0, dim - 1] as take clamps, is c (0 for a row no index reaches). The sums run in
// increasing i, without atomics: the result is the same bits on every backend and in every run.
// Gradient: take of the adjoint at the indices (the indices get none).
Tensor scatter_add(const Tensor& updates, const Tensor& indices, int64_t dim, int64_t axis = 0,
                   Loc loc = Loc::current());
// [..., depth] with 1 at the index, 0 elsewhere (all zeros for an index outside [0, depth)).
Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype = DType::f32, Loc loc = Loc::current());

// ---- Creation (inside a trace).
Tensor zeros(std::vector<int64_t> shape, DType dtype = DType::f32, Loc loc = Loc::current());
Tensor ones(std::vector<int64_t> shape, DType dtype = DType::f32, Loc loc = Loc::current());
Tensor full(std::vector<int64_t> shape, double value, DType dtype = DType::f32, Loc loc = Loc::current());
Tensor zeros_like(const Tensor& x, Loc loc = Loc::current());
Tensor ones_like(const Tensor& x, Loc loc = Loc::current());
// [start, stop) by step (step != 0), like numpy.arange.
Tensor arange(int64_t stop, DType dtype = DType::i32, Loc loc = Loc::current());
Tensor arange(double start, double stop, double step = 1, DType dtype = DType::i32, Loc loc = Loc::current());
// A constant holding a copy of `a`'s data.
Tensor constant(const Array& a, Loc loc = Loc::current());
// A scalar constant.
Tensor scalar(double value, DType dtype = DType::f32, Loc loc = Loc::current());

// ---- Random numbers: counter-based (Philox-4x32-10). A key is an i32[2] Tensor; the same key
// gives the same numbers. fold_in derives a new key from a key and a counter (a loop index), so
// a loop needs no key splitting on the host.
namespace random {
Tensor key(uint64_t seed, Loc loc = Loc::current());
Tensor fold_in(const Tensor& key, const Tensor& data, Loc loc = Loc::current());
Tensor fold_in(const Tensor& key, int32_t data, Loc loc = Loc::current());
// Uniform in [lo, hi).
Tensor uniform(const Tensor& key, std::vector<int64_t> shape, DType dtype = DType::f32, double lo = 0,
               double hi = 1, Loc loc = Loc::current());
Tensor normal(const Tensor& key, std::vector<int64_t> shape, DType dtype = DType::f32, double mean = 0,
              double stddev = 1, Loc loc = Loc::current());
}  // namespace random

// ---- Collectives across the ranks of a job (docs/distributed.md), inside a traced function:
// every rank runs the same program and they meet at each collective in program order. The job
// size is read when tracing (after fluxion::distributed::init; one rank without it) and is part
// of the program. Results are the same bits on every rank; reductions run in rank order.
// Differentiation follows JAX's shard_map: a function's parameters are each rank's own, the
// results of all_reduce, all_gather and broadcast_from are shared by all, and the gradient of a
// shared (invariant) result counts it once.
Tensor all_reduce(const Tensor& x, ReduceOp op = ReduceOp::Sum, Loc loc = Loc::current());
// The ranks' x concatenated along `axis` in rank order (a scalar: stacked into [ranks]).
Tensor all_gather(const Tensor& x, int64_t axis = 0, Loc loc = Loc::current());
// The sum of the ranks' x, of which this rank keeps block rank_index() of `axis` (whose length
// must be a multiple of the job size).
Tensor reduce_scatter(const Tensor& x, int64_t axis = 0, Loc loc = Loc::current());
// Rank `root`'s x, on every rank.
Tensor broadcast_from(const Tensor& x, int root = 0, Loc loc = Loc::current());
// This rank's index in the job, an i32 scalar (0 in a job of one rank).
Tensor rank_index(Loc loc = Loc::current());

}  // namespace fluxion
