// The op table and the Region builder.
#include "ir/ir.h"

#include <algorithm>
#include <array>
#include <string>

#include "fluxion/error.h"

namespace fluxion::ir {
namespace {

constexpr OpInfo kOps[] = {
#define FLUXION_OP(e, name, cls, dt, arity, derivative, cost, math) \
  {Op::e, name, OpClass::cls, DTypeRule::dt, arity, Derivative::derivative, cost, math},
#include "ir/ops.def"
#undef FLUXION_OP
};

}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<size_t>(op)]; }

std::span<const OpInfo> all_ops() { return kOps; }

OpRole op_role(Op op) {
  switch (op_info(op).cls) {
    case OpClass::Unary:
    case OpClass::Binary:
    case OpClass::Compare:
    case OpClass::Select:
    case OpClass::Convert: return OpRole::Elementwise;
    case OpClass::Constant:
    case OpClass::Iota: return OpRole::Creation;
    case OpClass::Reduce: return OpRole::Reduce;
    case OpClass::ArgReduce:
    case OpClass::MatMul:
    case OpClass::Conv:
    case OpClass::ConvGrad:
    case OpClass::Pool:
    case OpClass::PoolGrad:
    case OpClass::Random:
    case OpClass::RngFold: return OpRole::Gathering;
    case OpClass::Collective: return OpRole::Collective;
    case OpClass::Debug: return OpRole::Effect;
    case OpClass::Reshape:
    case OpClass::Transpose:
    case OpClass::Broadcast:
    case OpClass::Slice:
    case OpClass::Pad:
    case OpClass::Concat:
    case OpClass::Gather:
    case OpClass::Take: return OpRole::View;
    case OpClass::ScatterAdd: return OpRole::Scatter;
    case OpClass::Scan:
    case OpClass::While:
    case OpClass::Cond:
    case OpClass::CustomVjp:
    case OpClass::CustomJvp: return OpRole::Control;
  }
  return OpRole::Control;
}

bool has_collectives(const Region& r) {
  for (const Node& n : r.nodes) {
    if (is_collective(n.op)) return true;
    for (const Region& sub : n.regions) {
      if (has_collectives(sub)) return true;
    }
  }
  return false;
}

bool has_effects(const Node& n) {
  if (is_effect(n.op)) return true;
  return std::any_of(n.regions.begin(), n.regions.end(), [](const Region& sub) { return has_effects(sub); });
}

bool has_effects(const Region& r) {
  return std::any_of(r.nodes.begin(), r.nodes.end(), [](const Node& n) { return has_effects(n); });
}

void remove_effects(Region& r, size_t first) {
  auto from = r.nodes.begin() + static_cast<std::ptrdiff_t>(std::min(first, r.nodes.size()));
  r.nodes.erase(std::remove_if(from, r.nodes.end(), [](const Node& n) { return is_effect(n.op); }), r.nodes.end());
  for (auto n = r.nodes.begin() + static_cast<std::ptrdiff_t>(std::min(first, r.nodes.size())); n != r.nodes.end();
       ++n) {
    for (Region& sub : n->regions) remove_effects(sub);
  }
}

bool op_from_name(std::string_view name, Op* out) {
  for (const OpInfo& info : kOps) {
    if (name == info.name) {
      *out = info.op;
      return true;
    }
  }
  return false;
}

std::vector<TensorType> Region::param_types() const {
  std::vector<TensorType> out;
  for (ValueId v : params) out.push_back(type(v));
  return out;
}

std::vector<TensorType> Region::result_types() const {
  std::vector<TensorType> out;
  for (ValueId v : results) out.push_back(type(v));
  return out;
}

const std::vector<ValueId>& Region::add(Op op, std::vector<ValueId> operands, Attrs attrs,
                                        std::vector<TensorType> declared,
                                        std::vector<Region> regions,
                                        const std::source_location* loc) {
  std::vector<TensorType> in;
  in.reserve(operands.size());
  for (ValueId v : operands) {
    if (v < 0 || static_cast<size_t>(v) >= types.size()) {
      detail::fail(op_name(op), "operand %" + std::to_string(v) + " is not a value of this region",
                   loc);
    }
    in.push_back(types[static_cast<size_t>(v)]);
  }
  std::vector<TensorType> out = infer_types(op, in, attrs, declared, regions, loc);
  Node n;
  n.op = op;
  n.operands = std::move(operands);
  n.attrs = std::move(attrs);
  n.regions = std::move(regions);
  if (loc) {
    n.file = loc->file_name();
    n.line = loc->line();
  }
  for (TensorType& t : out) n.results.push_back(new_value(std::move(t)));
  nodes.push_back(std::move(n));
  return nodes.back().results;
}

std::vector<ValueId> inline_region(Region& target, const Region& r, const std::vector<ValueId>& args,
                                   std::vector<size_t>* node_index) {
  std::vector<ValueId> map(r.types.size(), -1);
  for (size_t i = 0; i < r.params.size(); ++i) map[static_cast<size_t>(r.params[i])] = args[i];
  if (node_index) node_index->clear();
  for (const Node& n : r.nodes) {
    std::vector<ValueId> operands;
    for (ValueId v : n.operands) operands.push_back(map[static_cast<size_t>(v)]);
    std::vector<TensorType> types;
    for (ValueId v : n.results) types.push_back(r.type(v));
    const std::vector<ValueId>& res = target.add(n.op, std::move(operands), n.attrs, std::move(types), n.regions);
    for (size_t j = 0; j < res.size(); ++j) map[static_cast<size_t>(n.results[j])] = res[j];
    target.nodes.back().file = n.file;
    target.nodes.back().line = n.line;
    if (node_index) node_index->push_back(target.nodes.size() - 1);
  }
  std::vector<ValueId> out;
  for (ValueId v : r.results) out.push_back(map[static_cast<size_t>(v)]);
  return out;
}

}  // namespace fluxion::ir
