// What nn::Trainer adds in data-parallel mode (docs/distributed.md): the gradients' all-reduce
// inside the compiled step, the parameters' broadcast at start, and the check that every rank
// runs the same program.
#pragma once

#include <cstdint>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/tensor.h"

namespace fluxion::nn::detail {

// Inside a trace: the ranks' mean of each gradient, exchanged in buckets of about
// `bucket_bytes` filled in the order the backward pass produces the gradients (last parameter
// first), one all-reduce per bucket. Which gradient goes in which bucket depends on the shapes
// alone, so every rank issues the same collectives in the same order.
std::vector<Tensor> all_reduce_in_buckets(const std::vector<Tensor>& grads, int64_t bucket_bytes);

// Every rank's arrays become rank 0's.
void broadcast_from_rank0(std::vector<Array>& arrays);

// Compares the programs' structural hashes across the ranks (every rank on every step: whether
// to exchange must not depend on what one rank has seen); raises Error on every rank, naming
// the ranks whose program differs from rank 0's, instead of letting them meet in mismatched
// collectives.
void check_same_program(uint64_t hash, const char* what);

}  // namespace fluxion::nn::detail
