#include "nn/data_parallel.h"

#include <string>

#include "fluxion/error.h"
#include "fluxion/ops.h"
#include "support/communication_thread.h"
#include "support/communicator.h"

namespace fluxion::nn::detail {
namespace {

// One bucket's gradients as one flat array, its mean over the ranks, cut back.
std::vector<Tensor> all_reduce_bucket(const std::vector<Tensor>& bucket) {
  if (bucket.size() == 1) return {all_reduce(bucket[0], ReduceOp::Mean)};
  std::vector<Tensor> flat;
  for (const Tensor& g : bucket) flat.push_back(reshape(g, {g.numel()}));
  Tensor reduced = all_reduce(concat(flat, 0), ReduceOp::Mean);
  std::vector<Tensor> out;
  int64_t at = 0;
  for (const Tensor& g : bucket) {
    out.push_back(reshape(slice_axis(reduced, 0, at, at + g.numel()), g.shape()));
    at += g.numel();
  }
  return out;
}

}  // namespace

std::vector<Tensor> all_reduce_in_buckets(const std::vector<Tensor>& grads, int64_t bucket_bytes) {
  std::vector<Tensor> out(grads.size());
  std::vector<size_t> bucket;
  int64_t bytes = 0;
  auto flush = [&] {
    if (bucket.empty()) return;
    std::vector<Tensor> in;
    for (size_t i : bucket) in.push_back(grads[i]);
    std::vector<Tensor> reduced = all_reduce_bucket(in);
    for (size_t k = 0; k < bucket.size(); ++k) out[bucket[k]] = reduced[k];
    bucket.clear();
    bytes = 0;
  };
  for (size_t i = grads.size(); i-- > 0;) {
    if (!bucket.empty() && grads[bucket[0]].dtype() != grads[i].dtype()) flush();
    bucket.push_back(i);
    bytes += grads[i].numel() * dtype_size(grads[i].dtype());
    if (bytes >= bucket_bytes) flush();
  }
  flush();
  return out;
}

void broadcast_from_rank0(std::vector<Array>& arrays) {
  std::shared_ptr<support::Communicator> c = support::communicator();
  if (c->size() == 1) return;
  support::run_in_order([&] {
    support::CollectiveLabel label("the broadcast of the initial parameters and state");
    for (Array& a : arrays) c->broadcast(a.mutable_data(), a.size() * dtype_size(a.dtype()), 0);
  });
}

void check_same_program(uint64_t hash, const char* what) {
  std::shared_ptr<support::Communicator> c = support::communicator();
  if (c->size() == 1) return;
  std::vector<uint64_t> all(static_cast<size_t>(c->size()));
  support::run_in_order([&] {
    support::CollectiveLabel label(std::string("the comparison of the ranks' ") + what + " programs");
    c->all_gather(&hash, all.data(), sizeof hash);
  });
  std::string differ;
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!differ.empty()) {
    fluxion::detail::fail(
        what, "the program of rank(s) " + differ +
                  " differs from rank 0's (another model, loss, optimizer, batch shape, backend or job size); "
                  "every rank must run the same program");
  }
}

}  // namespace fluxion::nn::detail
