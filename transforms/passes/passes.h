// Graph-IR to graph-IR simplification passes. Each works on a region and recursively on the
// regions nested in it, and returns whether it changed anything.
#pragma once

#include "ir/ir.h"

namespace fluxion::passes {

// Replaces a node whose operands are all constants (and whose result has at most
// kMaxFoldedElements elements; region ops excepted) by a constant holding its value, computed
// by the interpreter. A result whose elements are all equal becomes a splat (one value).
inline constexpr int64_t kMaxFoldedElements = 1024;
bool fold_constants(ir::Region& r);

// Merges nodes with equal op, operands, attributes, result types and regions into the first,
// rewriting the uses of the later ones (operands and region results).
bool eliminate_common_subexpressions(ir::Region& r);

// Removes nodes none of whose results is used (every op is pure).
bool eliminate_dead_code(ir::Region& r);

// Replaces every use of a stop_gradient's result by its operand (it only matters while
// differentiating, which is over once a program reaches the pipeline).
bool remove_stop_gradients(ir::Region& r);

// Replaces every custom_vjp and custom_jvp node by the nodes of its primal region (its rule
// matters only while differentiating), so backends never see them.
bool inline_custom_rules(ir::Region& r);

// Rewrites transpose(a @ b) of 2-D operands, where the product has no other use, as
// transpose(b) @ transpose(a) (a transpose of a transpose being its operand).
bool rewrite_transposed_products(ir::Region& r);

// Computes an elementwise op that reads a value through reshapes adding only unit dimensions
// at that value's lower-rank shape (its other operands reshaped to it, as views), followed by
// one reshape to its own shape, so that it can join its operand's kernel.
bool compute_below_unit_reshapes(ir::Region& r);

// Computes every sum over f16 or bf16 values (reductions, products, convolutions and their
// gradients, average pooling, the max-pooling gradient, scatter-add) on f32 conversions of its
// operands, converting the result back: 16-bit sums accumulate in f32 on every backend.
bool sum_halves_in_f32(ir::Region& r);

// Removes stop_gradients and custom rules, sums 16-bit floats in f32, rewrites transposed
// products, computes elementwise ops below unit reshapes, then runs folding, CSE and DCE until
// none changes the program.
void simplify(ir::Program& p);

}  // namespace fluxion::passes
