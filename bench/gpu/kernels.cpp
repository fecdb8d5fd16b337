// Kernel shapes on the Vulkan backend with their operands already on the device: square f32
// products (TFLOP/s), square products of f16 and of bf16 operands summed into f32 (on cooperative
// matrices under FLUXION_VULKAN_COOPERATIVE_MATRIX=on, where the device has them; a CHECK line
// gives the largest error of 64 sampled elements against double sums), an f16 product allowed
// to sum in f16 (fx::F16Sums), a 64 MB elementwise map, row sums, column sums,
// a whole-array sum and an embedding gradient (a scatter_add of 16,384 rows of 128 into 65: GB/s of bytes read). It
// times whatever plans the backend chooses, or those of FLUXION_KERNEL_PLANS, so one run per rules file compares tile
// and workgroup choices on a GPU (bench/gpu/README.md). usage: fluxion_gpu_kernels [--repeat N] [N...]   (N: product
// sizes, default 1024 2048 4096)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

namespace {

struct Timing {
  double median_us, min_us;
};

Timing time_calls(const std::function<fx::Array()>& call, int repeat) {
  fx::Array warm = call();
  warm = call();
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    fx::Array r = call();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t[0]};
}

fx::Array filled(int64_t rows, int64_t cols) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>((k * 7919) % 1000) / 1000.0f - 0.5f;
  return fx::Array(v, {rows, cols});
}

// The rate of `amount` over the fastest call: FLOPs give TFLOP/s, bytes times 1000 give GB/s.
void report(const char* kernel, int64_t size, const Timing& t, double amount, const char* unit) {
  std::printf("RES\t%s\t%lld\tmedian_us %.1f\tmin_us %.1f\t%s %.2f\n", kernel, static_cast<long long>(size),
              t.median_us, t.min_us, unit, amount / t.min_us / 1e6);
  std::fflush(stdout);
}

// The largest error of 64 elements of c = a b (n x n) against sums in double, in units of the
// bound of a sum in a format of `bits` significant bits (n 2^-bits sum |a_ik b_kj|, plus the
// result's own rounding for an f16 result): at most 1 when the product sums in that format.
double sampled_error(const fx::Array& a, const fx::Array& b, const fx::Array& c, int64_t n, int bits) {
  std::vector<double> av = a.to_doubles(), bv = b.to_doubles(), cv = c.to_doubles();
  double worst = 0;
  for (int64_t s = 0; s < 64; ++s) {
    int64_t i = (s * 7919) % n, j = (s * 104729 + 17) % n;
    double sum = 0, bound = 0;
    for (int64_t k = 0; k < n; ++k) {
      double p = av[static_cast<size_t>(i * n + k)] * bv[static_cast<size_t>(k * n + j)];
      sum += p;
      bound += std::abs(p);
    }
    double rounding = c.dtype() == fx::f16 ? std::ldexp(std::abs(sum), -11) : 0;
    double allowed = static_cast<double>(n) * std::ldexp(bound, -bits) + rounding + 1e-30;
    worst = std::max(worst, std::abs(cv[static_cast<size_t>(i * n + j)] - sum) / allowed);
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) try {
  int repeat = 9;
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      sizes.push_back(std::atoll(argv[i]));
    }
  }
  if (sizes.empty()) sizes = {1024, 2048, 4096};
  const fx::Backend gpu = fx::Backend::Vulkan;
  auto place = fx::jit([](fx::Tensor a) { return a * 1.0f; }, gpu);
  auto product = fx::jit([](fx::Tensor a, fx::Tensor b) { return fx::matmul(a, b); }, gpu);
  // 16-bit operands summed into an f32 result, as JAX's preferred_element_type=float32 writes it.
  auto half_product =
      fx::jit([](fx::Tensor a, fx::Tensor b) { return fx::matmul(fx::cast(a, fx::f32), fx::cast(b, fx::f32)); }, gpu);
  // An f16 product allowed to sum in f16 (PyTorch's default for f16 products on a GPU).
  auto f16_sums_product = fx::jit(
      [](fx::Tensor a, fx::Tensor b) {
        fx::F16Sums allow;
        return fx::matmul(a, b);
      },
      gpu);
  for (int64_t n : sizes) {
    fx::Array a = place(filled(n, n)), b = place(filled(n, n));
    double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    report("matmul", n, time_calls([&] { return product(a, b); }, repeat), flops, "TFLOP/s");
    for (fx::DType half : {fx::f16, fx::bf16}) {
      std::string name = std::string("matmul_") + fx::dtype_name(half);
      auto narrow = fx::jit([half](fx::Tensor t) { return fx::cast(t, half); }, gpu);
      fx::Array ah = narrow(a), bh = narrow(b);
      report(name.c_str(), n, time_calls([&] { return half_product(ah, bh); }, repeat), flops, "TFLOP/s");
      std::printf("CHECK\t%s\t%lld\terror_in_f32_bounds %.3f\n", name.c_str(), static_cast<long long>(n),
                  sampled_error(ah, bh, half_product(ah, bh), n, 24));
      if (half != fx::f16) continue;
      report("matmul_f16_sums", n, time_calls([&] { return f16_sums_product(ah, bh); }, repeat), flops, "TFLOP/s");
      std::printf("CHECK\tmatmul_f16_sums\t%lld\terror_in_f16_bounds %.3f\n", static_cast<long long>(n),
                  sampled_error(ah, bh, f16_sums_product(ah, bh), n, 11));
    }
  }
  const int64_t side = 4096;  // 64 MB of f32
  fx::Array x = place(filled(side, side));
  const double bytes = 4.0 * side * side;
  auto map = fx::jit([](fx::Tensor a) { return a * 1.5f + 0.5f; }, gpu);
  report("map", side * side, time_calls([&] { return map(x); }, repeat), bytes * 1e3, "GB/s");
  auto rows = fx::jit([](fx::Tensor a) { return fx::sum(a, {1}); }, gpu);
  report("row_sums", side, time_calls([&] { return rows(x); }, repeat), bytes * 1e3, "GB/s");
  auto columns = fx::jit([](fx::Tensor a) { return fx::sum(a, {0}); }, gpu);
  report("column_sums", side, time_calls([&] { return columns(x); }, repeat), bytes * 1e3, "GB/s");
  auto total = fx::jit([](fx::Tensor a) { return fx::sum(a); }, gpu);
  report("sum", side * side, time_calls([&] { return total(x); }, repeat), bytes * 1e3, "GB/s");
  // GPT's token-embedding gradient at batch 256: 256 x 64 token ids over a 65-character vocabulary.
  const int64_t tokens = 16384, width = 128, vocab = 65;
  std::vector<int32_t> ids(static_cast<size_t>(tokens));
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int32_t>((k * 7919 + k / 3) % vocab);
  fx::Array updates = place(filled(tokens, width));
  fx::Array indices = fx::jit([](fx::Tensor i) { return i + 0; }, gpu)(fx::Array(ids, {tokens}));
  auto embedding_grad = fx::jit([](fx::Tensor u, fx::Tensor i) { return fx::scatter_add(u, i, 65); }, gpu);
  report("embedding_grad", tokens, time_calls([&] { return embedding_grad(updates, indices); }, repeat),
         (4.0 * tokens * width + 4.0 * tokens) * 1e3, "GB/s");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fluxion_gpu_kernels: %s\n", e.what());
  return 1;
}
