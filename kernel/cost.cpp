#include "kernel/cost.h"

#include <set>

#include "kernel/frame.h"

namespace fluxion::kernel {

double product_flops(const ir::Region& r, const Kernel& k) {
  if (k.kind != KernelKind::MatMul) return 0;
  ProductDims d = product_dims(r, k);
  return 2.0 * static_cast<double>(numel(d.batch)) * static_cast<double>(d.M) * static_cast<double>(d.N) *
         static_cast<double>(d.K);
}

KernelCost kernel_cost(const ir::Region& r, const RegionSchedule& s, const Kernel& k) {
  std::vector<int32_t> producer(r.types.size(), -1);
  for (size_t n = 0; n < r.nodes.size(); ++n) {
    for (ir::ValueId v : r.nodes[n].results) producer[static_cast<size_t>(v)] = static_cast<int32_t>(n);
  }
  std::set<size_t> inside(k.nodes.begin(), k.nodes.end());
  inside.insert(k.recomputed.begin(), k.recomputed.end());
  std::set<ir::ValueId> touched;
  // A value read from outside the kernel: its own bytes, or those of the values a view reads.
  auto read = [&](auto&& self, ir::ValueId v) -> void {
    auto vi = static_cast<size_t>(v);
    switch (s.storage[vi]) {
      case Storage::Alias: self(self, s.alias_of[vi]); return;
      case Storage::View:
      case Storage::None:
        if (producer[vi] < 0 || inside.count(static_cast<size_t>(producer[vi]))) return;
        for (ir::ValueId o : r.nodes[static_cast<size_t>(producer[vi])].operands) self(self, o);
        return;
      case Storage::Inline: return;
      default: touched.insert(v);
    }
  };
  for (size_t n : inside) {
    for (ir::ValueId o : r.nodes[n].operands) {
      int32_t p = producer[static_cast<size_t>(o)];
      if (p < 0 || !inside.count(static_cast<size_t>(p))) read(read, o);
    }
  }
  for (size_t n : k.nodes) {
    for (ir::ValueId v : r.nodes[n].results) {
      Storage st = s.storage[static_cast<size_t>(v)];
      if (st == Storage::Slot || st == Storage::Output) touched.insert(v);
    }
  }
  KernelCost cost;
  for (ir::ValueId v : touched) cost.bytes += static_cast<double>(r.type(v).numel() * dtype_size(r.type(v).dtype));
  cost.flops = product_flops(r, k);
  return cost;
}

}  // namespace fluxion::kernel
