// The graph IR: SSA values of array type, ops on whole arrays, closed structured regions.
// This header is the IR's reference; docs/ir.md describes every op's operands, attributes and
// shape rule in prose, and shape_rules.cpp implements them.
#pragma once

#include <cstdint>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fluxion/dtype.h"

namespace fluxion::ir {

enum class Op : uint16_t {
#define FLUXION_OP(e, name, cls, dt, arity, derivative, cost, math) e,
#include "ir/ops.def"
#undef FLUXION_OP
};

// How an op's shape rule and kernels are organised.
enum class OpClass : uint8_t {
  Unary,
  Binary,
  Compare,
  Select,
  Convert,
  Constant,
  Iota,
  Reduce,
  ArgReduce,
  MatMul,
  Conv,
  Pool,
  ConvGrad,
  PoolGrad,
  Reshape,
  Transpose,
  Broadcast,
  Slice,
  Pad,
  Concat,
  Gather,
  Take,
  ScatterAdd,
  Random,
  RngFold,
  Collective,
  Debug,
  Scan,
  While,
  Cond,
  CustomVjp,
  CustomJvp,
};

// Which operand dtypes an op accepts: floats only, any but bool, bool only, any.
enum class DTypeRule : uint8_t { Float, Numeric, Bool, Any };

// Whether an op's float results carry derivatives (ops.def explains the column).
enum class Derivative : uint8_t { Grad, NoGrad };

// One row of the op table (ops.def): everything the layers need to know about an op that is
// not its shape rule, its evaluation or its derivative rule.
struct OpInfo {
  Op op;
  const char* name;
  OpClass cls;
  DTypeRule dtypes;
  int arity;  // -1: variadic
  Derivative derivative;
  int cost;          // elementwise: scalar operations per element (1: cheap to recompute); else 0
  const char* math;  // the C math function computing an elementwise op, or nullptr
};

const OpInfo& op_info(Op op);
// Every row of the op table, in enum order.
std::span<const OpInfo> all_ops();
inline const char* op_name(Op op) { return op_info(op).name; }
// The op with IR name `name`; returns false when there is none.
bool op_from_name(std::string_view name, Op* out);

// What an op is to fusion and the code generators, decided by its class (ir.cpp):
// Elementwise: one result element from the same element of each operand.
// Creation: elements from their own index (constants, iota).
// Reduce: a sum, max or min over axes, fused into the kernel of its operand.
// Gathering: each result element reads many operand elements (matmul, conv, pooling, argmax,
//   random draws); computed with an inner loop over materialized operands.
// View: data movement without arithmetic (reshape, transpose, slice, gather...), folded into
//   the index math of its readers.
// Scatter: each operand element is added to a result element its index chooses (scatter_add);
//   a kernel of its own, whose schedule gives each result element to one thread or invocation.
// Control: a loop or branch with regions.
// Collective: an exchange between the ranks of a job, run by the host between kernels.
// Effect: something the host does between kernels that the program's results do not show
//   (debug_print): kept by dead-code elimination and run in program order.
enum class OpRole : uint8_t { Elementwise, Creation, Reduce, Gathering, View, Scatter, Control, Collective, Effect };
OpRole op_role(Op op);

inline bool is_elementwise(Op op) { return op_role(op) == OpRole::Elementwise; }
inline bool has_regions(Op op) { return op_role(op) == OpRole::Control; }
inline bool is_view(Op op) { return op_role(op) == OpRole::View; }
inline bool is_gathering(Op op) { return op_role(op) == OpRole::Gathering; }
inline bool is_scatter(Op op) { return op_role(op) == OpRole::Scatter; }
inline bool is_collective(Op op) { return op_role(op) == OpRole::Collective; }
inline bool is_effect(Op op) { return op_role(op) == OpRole::Effect; }
// Elementwise ops cheap enough to recompute in a later kernel instead of storing the result.
inline bool is_cheap(Op op) { return op_info(op).cost == 1; }
inline bool is_differentiable(Op op) { return op_info(op).derivative == Derivative::Grad; }

// Op attributes. One struct for all ops; each op reads only the fields docs/ir.md lists for it,
// and the others stay at their defaults (the printer shows fields that differ from default).
struct Attrs {
  std::vector<int64_t> axes;      // reduce axes; [axis] for argmax/iota/concat/gather/take/scatter_add
  std::vector<int64_t> perm;      // transpose: result dim i is operand dim perm[i]
  std::vector<int64_t> starts;    // slice
  std::vector<int64_t> limits;    // slice (exclusive)
  std::vector<int64_t> strides;   // slice, pad; [sh, sw] for conv2d and pooling
  std::vector<int64_t> window;    // pooling: [kh, kw]
  std::vector<int64_t> padding;   // conv2d and pooling: [top, bottom, left, right]; pad: [lo, hi] per dim
  std::vector<int64_t> dilation;  // conv2d: [dh, dw]
  int64_t groups = 1;             // conv2d
  int64_t length = 0;             // scan: trip count
  int64_t carries = 0;            // scan, while: number of carried values; custom_vjp: arguments
  int64_t xs = 0;                 // scan: number of per-step inputs
  int64_t max_iters = -1;         // while: bound on the trip count, -1 for none
  bool reverse = false;           // scan: iterate from length-1 down to 0
  bool f16_sums = false;          // matmul: its sums may accumulate in f16 (docs/precision.md)
  int64_t ranks = 1;              // collectives: the job size the program was traced for
  int64_t root = 0;               // broadcast_from: the rank whose operand every rank gets
  std::vector<double> data;       // constant: one value (splat) or numel values, row-major
  std::string text;               // debug_print: the format
  friend bool operator==(const Attrs&, const Attrs&) = default;
};

using ValueId = int32_t;

struct Region;

// One op application. `results` are value ids of the enclosing region.
struct Node {
  Op op{};
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  Attrs attrs;
  std::vector<Region> regions;  // scan: [body]; while: [cond, body]; cond: [then, else];
                                // custom_vjp: [primal, backward]; custom_jvp: [primal, tangent]
  // The user's call site that created the node (not part of the structure: not printed by
  // default, not hashed). line == 0 when unknown.
  const char* file = "";
  uint32_t line = 0;
};

// A closed block: parameters, nodes in execution order, results. A value id indexes `types`;
// ids are local to the region (a nested region has its own). Ids stay stable when nodes are
// removed; the printer renumbers canonically.
struct Region {
  std::vector<TensorType> types;
  std::vector<ValueId> params;
  std::vector<Node> nodes;
  std::vector<ValueId> results;

  ValueId new_value(TensorType t) {
    types.push_back(std::move(t));
    return static_cast<ValueId>(types.size() - 1);
  }
  ValueId add_param(TensorType t) {
    ValueId v = new_value(std::move(t));
    params.push_back(v);
    return v;
  }
  const TensorType& type(ValueId v) const { return types.at(static_cast<size_t>(v)); }
  std::vector<TensorType> param_types() const;
  std::vector<TensorType> result_types() const;

  // Appends a node after checking it with the op's shape rule (shape_rules.cpp). For ops whose
  // result type is declared (constant, iota, convert, reshape, broadcast, rng_*, scatter_add, and
  // the conv and average-pool gradients), `declared`
  // gives it; otherwise pass {} and the rule computes the types. Raises Error naming the op,
  // the operand types and what was expected. Returns the new node's results.
  const std::vector<ValueId>& add(Op op, std::vector<ValueId> operands, Attrs attrs = {},
                                  std::vector<TensorType> declared = {},
                                  std::vector<Region> regions = {},
                                  const std::source_location* loc = nullptr);
};

// Whether r or a region nested in it holds a collective.
bool has_collectives(const Region& r);
// Whether r or a region nested in it holds an effect (debug_print).
bool has_effects(const Region& r);
// Whether node n is an effect or an op whose regions hold one: such a node stays, and stays in
// order with the others, whether or not its results are used.
bool has_effects(const Node& n);
// Removes the effects of r's nodes from index `first` on, in their regions too: a derivative
// rule that recomputes a loop's or a branch's forward values must not print them a second time.
void remove_effects(Region& r, size_t first = 0);

// Appends copies of r's nodes to `target`, with r's parameters bound to `args` (ids of target),
// and returns r's results as ids of target. Source locations are kept. When `node_index` is
// given, it receives the index in target.nodes of the copy of each of r's nodes.
std::vector<ValueId> inline_region(Region& target, const Region& r, const std::vector<ValueId>& args,
                                   std::vector<size_t>* node_index = nullptr);

// A whole traced program: one top-level region.
struct Program {
  std::string name = "main";
  Region body;
};

// The result types of `op` applied to operands of `in` types, with `attrs`, `regions`, and
// (for declared-type ops) `declared`. Raises Error when the operands do not fit the op.
std::vector<TensorType> infer_types(Op op, const std::vector<TensorType>& in, const Attrs& attrs,
                                    const std::vector<TensorType>& declared,
                                    const std::vector<Region>& regions,
                                    const std::source_location* loc = nullptr);

// Checks every node of `p` (operand ids defined before use, types match the shape rules,
// regions well formed, results defined). Raises Error describing the first problem.
void verify(const Program& p);
void verify(const Region& r);

// The text form: one op a line, nodes in their stored order, values renumbered %0, %1, ... per
// region in definition order. `with_locations` appends each node's source location as a
// trailing comment.
std::string print(const Program& p, bool with_locations = false);
// One region alone, as "region(%0: T, ...) {" ... "yield ..." "}" (for error messages, and for
// comparing regions structurally: equal text is equal structure).
std::string print(const Region& r);
// The same text with every region's nodes in canonical order: print(p) after
// canonicalize_order(p), without changing p. Equal for programs that are the same graph,
// whatever order their independent nodes were traced in.
std::string print_canonical(const Program& p);
std::string print_canonical(const Region& r);
// A node's attributes as the text writes them: " {name=value, ...}", or "" when all are default.
std::string print_attrs(const Attrs& a);

// The canonical order of r's nodes (indices into r.nodes): a topological order that depends only
// on the graph, not on the order independent nodes were added in. It is the post-order of a
// depth-first walk from r's results (the first, then the others from the last), visiting a
// node's dependencies before it: for a collective (or a region op holding one), the collective
// stored before it (collectives keep their program order), then its operands' producers, left
// to right. Nodes no result reaches follow, walked from the last collective, then from each
// node nothing uses, in the order of a hash of its upstream graph.
std::vector<size_t> canonical_order(const Region& r);
// Puts the nodes of r, and of every region nested in it, in canonical order (value ids, and so
// the program's meaning, stay). Returns whether any node moved.
bool canonicalize_order(Region& r);
bool canonicalize_order(Program& p);
// The names the text gives an op's regions, in order: scan: body; while: cond, body; cond: then,
// else; custom_vjp: primal, backward. Empty for an op without regions.
std::vector<const char*> region_names(Op op);
// Reads the text `print` writes. Raises Error with the line and column of a syntax error.
Program parse(std::string_view text);

// Structural hash: the hash of print_canonical(p). Equal for programs that print equal once in
// canonical order (whatever lambda traced them, in whatever order), and changes with any op,
// shape, dtype, attribute, constant, or order of collectives.
uint64_t structural_hash(const Program& p);

}  // namespace fluxion::ir
