#include "ir/builder.h"

#include <algorithm>

namespace fluxion::ir {

ir::ValueId Builder::splat(double value, const TensorType& t) {
  ir::Attrs a;
  a.data = {value};
  return op(ir::Op::Constant, {}, std::move(a), {t});
}

ir::ValueId Builder::reshape(ir::ValueId v, const Shape& s) {
  if (shape(v) == s) return v;
  return op(ir::Op::Reshape, {v}, {}, {TensorType{type(v).dtype, s}});
}

ir::ValueId Builder::broadcast(ir::ValueId v, const Shape& s) {
  if (shape(v) == s) return v;
  return op(ir::Op::Broadcast, {v}, {}, {TensorType{type(v).dtype, s}});
}

ir::ValueId Builder::transpose(ir::ValueId v, std::vector<int64_t> perm) {
  ir::Attrs a;
  a.perm = std::move(perm);
  return op(ir::Op::Transpose, {v}, std::move(a));
}

ir::ValueId Builder::convert(ir::ValueId v, DType t) {
  if (type(v).dtype == t) return v;
  return op(ir::Op::Convert, {v}, {}, {TensorType{t, shape(v)}});
}

ir::ValueId Builder::reduce_sum(ir::ValueId v, const std::vector<int64_t>& axes) {
  if (axes.empty()) return v;
  ir::Attrs a;
  a.axes = axes;
  return op(ir::Op::ReduceSum, {v}, std::move(a));
}

ir::ValueId Builder::transpose_last2(ir::ValueId v) {
  std::vector<int64_t> perm(shape(v).size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(v, perm);
}

ir::ValueId Builder::unbroadcast(ir::ValueId v, const Shape& to) {
  const Shape& from = shape(v);
  size_t lead = from.size() - to.size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < from.size(); ++d) {
    if (d < lead || (to[d - lead] == 1 && from[d] != 1)) axes.push_back(static_cast<int64_t>(d));
  }
  return reshape(reduce_sum(v, axes), to);
}

ir::ValueId Builder::expand_reduced(ir::ValueId v, const std::vector<int64_t>& axes, const Shape& full) {
  Shape kept = full;
  for (int64_t a : axes) kept[static_cast<size_t>(a)] = 1;
  return broadcast(reshape(v, kept), full);
}

ir::ValueId Builder::sum_all(const std::vector<ir::ValueId>& vs) {
  ir::ValueId acc = vs[0];
  for (size_t i = 1; i < vs.size(); ++i) acc = add(acc, vs[i]);
  return acc;
}

}  // namespace fluxion::ir
