// What a kernel moves and computes each time it runs, for the profilers' rates (GB/s, TFLOP/s in
// fluxion/profile.h's table): set against a device's memory bandwidth and arithmetic peak, they
// show a kernel that wastes the device on any machine, without a reference run.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "kernel/kernel_ir.h"

namespace fluxion::kernel {

struct KernelCost {
  double bytes = 0;  // of the stored values it reads or writes, each once (a view: its base's)
  double flops = 0;  // of its matrix product or convolution, 2 per multiply-add; 0 for others
};

// The FLOPs of a MatMul kernel's product or convolution (0 for any other kernel).
double product_flops(const ir::Region& r, const Kernel& k);
KernelCost kernel_cost(const ir::Region& r, const RegionSchedule& s, const Kernel& k);
// kernel_cost of every kernel, in kernel_lines' order (print.cpp).
std::vector<KernelCost> kernel_costs(const ir::Region& r, const RegionSchedule& s);

}  // namespace fluxion::kernel
