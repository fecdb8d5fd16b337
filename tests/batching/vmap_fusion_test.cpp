// vmap writes an ordinary program: the per-example gradients of W3's MLP by vmap(grad(loss))
// compile to the kernels of the same gradients written by hand for the batch (the examples as
// the rows or columns of one product in each layer, the bias and tanh in its epilogue,
// per-example outer products for the weight gradients), with no loop over the examples, and
// give the same values.
#include <algorithm>
#include <string>
#include <vector>

#include "common/kernel_listing.h"
#include "common/test_names.h"

namespace {

constexpr int64_t kB = 128, kIn = 784, kHidden = 32, kOut = 10;

// W3 on one example x [784, 1].
Tensor w3_loss(const std::vector<Tensor>& p, const Tensor& x) {
  Tensor h = fx::tanh(fx::matmul(p[0], x) + p[1]);
  Tensor y = fx::matmul(p[2], h) + p[3];
  return fx::sum(y * y);
}

// The same gradients for xs [B, 784, 1], by hand.
std::vector<Tensor> hand_batched(const std::vector<Tensor>& p, const Tensor& xs) {
  Tensor cols = fx::reshape(fx::permute(xs, {1, 0, 2}), {kIn, kB});                         // [784, B]
  Tensor h = fx::tanh(fx::matmul(p[0], cols) + p[1]);                                       // [32, B]
  Tensor dy = (fx::matmul(p[2], h) + p[3]) * 2.0f;                                          // [10, B]
  Tensor dpre = fx::matmul(fx::transpose(p[2]), dy) * (1.0f - h * h);                       // [32, B]
  auto per_example = [](const Tensor& t) { return fx::expand_dims(fx::transpose(t), 2); };  // [B, n, 1]
  Tensor dW1 = fx::matmul(per_example(dpre), fx::permute(xs, {0, 2, 1}));                   // [B, 32, 784]
  Tensor dW2 = fx::matmul(per_example(dy), fx::permute(per_example(h), {0, 2, 1}));         // [B, 10, 32]
  return {dW1, per_example(dpre), dW2, per_example(dy)};
}

}  // namespace

TEST(VmapFusion, PerExampleGradientsCompileLikeTheHandBatchedOnes) {
  std::vector<Array> p = {make(DType::f32, random_doubles(kHidden * kIn, -0.1, 0.1, 1), {kHidden, kIn}),
                          make(DType::f32, random_doubles(kHidden, -0.1, 0.1, 2), {kHidden, 1}),
                          make(DType::f32, random_doubles(kOut * kHidden, -0.1, 0.1, 3), {kOut, kHidden}),
                          make(DType::f32, random_doubles(kOut, -0.1, 0.1, 4), {kOut, 1})};
  Array xs = make(DType::f32, random_doubles(kB * kIn, 0, 1, 5), {kB, kIn, 1});
  auto vmapped = fx::jit(
      [](const std::vector<Tensor>& p, const Tensor& xs) {
        return fx::vmap(fx::grad(w3_loss), {fx::none, 0})(p, xs);
      },
      Backend::Cpu);
  auto by_hand = fx::jit(hand_batched, Backend::Cpu);
  std::string a = vmapped.lower(p, xs).kernels(), b = by_hand.lower(p, xs).kernels();
  auto products = [](const std::string& listing) {
    std::vector<std::string> k = kernel_strategies(listing);
    return std::count(k.begin(), k.end(), "matmul[tiles]");
  };
  EXPECT_EQ(products(a), 5) << a;
  EXPECT_EQ(products(a), products(b)) << "vmap(grad):\n" << a << "by hand:\n" << b;
  // Every elementwise op is in a product's epilogue: nothing but the products runs (the
  // hand-written form adds two copies for its bias gradients, which vmap returns as views).
  EXPECT_EQ(kernel_strategies(a).size(), 5u) << a;
  std::vector<Array> got = vmapped(p, xs), want = fx::jit(hand_batched, Backend::Interp)(p, xs);
  ASSERT_EQ(got.size(), want.size());
  // Against the hand form on the evaluator: sums of up to kIn terms (the first layer's product).
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_ARRAY(got[k], DType::f32, want[k].shape(), want[k].to_doubles(), Tol{.transcendental = true, .terms = kIn})
        << "gradient " << k;
  }
}
