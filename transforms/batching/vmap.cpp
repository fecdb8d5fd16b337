// The batching driver: walks a region's nodes in order, copying those that touch no batched
// value and handing the others to their rule; and the helpers the rules share.
#include "transforms/batching/vmap.h"

#include <numeric>
#include <string>

#include "fluxion/error.h"
#include "transforms/batching/rules.h"

namespace fluxion::batching {

TensorType with_batch(const TensorType& t, int64_t size) {
  TensorType r = t;
  r.shape.insert(r.shape.begin(), size);
  return r;
}

ir::ValueId lift(Builder& b, const Batched& x, int64_t size) {
  if (x.batched) return x.id;
  return b.broadcast(x.id, with_batch(b.type(x.id), size).shape);
}

ir::ValueId move_axis(Builder& b, ir::ValueId v, int64_t from, int64_t to) {
  if (from == to) return v;
  std::vector<int64_t> perm(b.shape(v).size());
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + from);
  perm.insert(perm.begin() + to, from);
  return b.transpose(v, perm);
}

std::vector<Batched> per_example(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                 const std::vector<Batched>& ops, int64_t size) {
  // scan(xs: the batched operands, captures: the others): body(i, x slices..., captures...).
  ir::Region body;
  body.add_param({DType::i32, {}});
  std::vector<ir::ValueId> xs, captures, args(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].batched) continue;
    Shape s = b.shape(ops[i].id);
    args[i] = body.add_param({b.type(ops[i].id).dtype, Shape(s.begin() + 1, s.end())});
    xs.push_back(ops[i].id);
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].batched) continue;
    args[i] = body.add_param(b.type(ops[i].id));
    captures.push_back(ops[i].id);
  }
  body.results = body.add(n.op, args, n.attrs, types, n.regions);
  ir::Attrs a;
  a.length = size;
  a.xs = static_cast<int64_t>(xs.size());
  std::vector<ir::ValueId> operands = xs;
  operands.insert(operands.end(), captures.begin(), captures.end());
  std::vector<ir::Region> regions;
  regions.push_back(std::move(body));
  std::vector<Batched> out;
  for (ir::ValueId r : b.region().add(ir::Op::Scan, operands, a, {}, std::move(regions))) out.push_back({r, true});
  return out;
}

std::vector<Batched> emit_vmap(ir::Region& target, const ir::Region& f, const std::vector<Batched>& args,
                               int64_t size) {
  std::vector<Batched> value(f.types.size());
  for (size_t i = 0; i < f.params.size(); ++i) value[static_cast<size_t>(f.params[i])] = args[i];
  Builder b(target);
  for (const ir::Node& n : f.nodes) {
    std::vector<Batched> ops;
    bool any = false;
    for (ir::ValueId v : n.operands) {
      ops.push_back(value[static_cast<size_t>(v)]);
      any = any || ops.back().batched;
    }
    std::vector<TensorType> types;
    for (ir::ValueId r : n.results) types.push_back(f.type(r));
    size_t first = target.nodes.size();
    std::vector<Batched> out;
    if (!any) {
      std::vector<ir::ValueId> ids;
      for (const Batched& o : ops) ids.push_back(o.id);
      for (ir::ValueId r : target.add(n.op, ids, n.attrs, types, n.regions)) out.push_back({r, false});
    } else {
      out = ir::has_regions(n.op) ? batch_control(b, n, types, ops, size) : batch_node(b, n, types, ops, size);
    }
    // The nodes written for n carry its call site, for errors raised on them later.
    for (size_t k = first; k < target.nodes.size(); ++k) {
      target.nodes[k].file = n.file;
      target.nodes[k].line = n.line;
    }
    for (size_t j = 0; j < n.results.size(); ++j) value[static_cast<size_t>(n.results[j])] = out[j];
  }
  std::vector<Batched> results;
  for (ir::ValueId v : f.results) results.push_back(value[static_cast<size_t>(v)]);
  return results;
}

ir::Region vmap(const ir::Region& f, const std::vector<bool>& in_batched, int64_t size,
                const std::vector<bool>& force_out, std::vector<bool>* out) {
  ir::Region r;
  std::vector<Batched> args;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const TensorType& t = f.type(f.params[i]);
    args.push_back({r.add_param(in_batched[i] ? with_batch(t, size) : t), static_cast<bool>(in_batched[i])});
  }
  std::vector<Batched> res = emit_vmap(r, f, args, size);
  Builder b(r);
  if (out) out->clear();
  for (size_t j = 0; j < res.size(); ++j) {
    bool batched = res[j].batched || (j < force_out.size() && force_out[j]);
    r.results.push_back(batched ? lift(b, res[j], size) : res[j].id);
    if (out) out->push_back(batched);
  }
  return r;
}

std::vector<bool> batched_results(const ir::Region& f, const std::vector<bool>& in_batched, int64_t size) {
  std::vector<bool> out;
  vmap(f, in_batched, size, {}, &out);
  return out;
}

}  // namespace fluxion::batching
