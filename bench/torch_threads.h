// The thread count of libtorch as a peer. Debian's libtorch runs its matmuls in OpenBLAS, whose
// own thread pool torch::set_num_threads does not limit: without openblas_set_num_threads, a
// "1 thread" libtorch run multiplies on every core and its idle workers spin in sched_yield.
#pragma once

#include <cblas.h>
#include <torch/torch.h>

namespace bench {

inline void set_torch_threads(int n) {
  torch::set_num_threads(n);
  openblas_set_num_threads(n);
}

}  // namespace bench
