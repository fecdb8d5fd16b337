// fluxion_matmul_bench: Fluxion's generated matmul kernel against OpenBLAS cblas_sgemm on the
// matrix products of W3, W4 and W5 (their forward products and the two of each gradient, with
// the operands transposed as the gradient has them), one thread, side by side in one process.
// The target: Fluxion within 1.0x of OpenBLAS on these shapes, on AVX2 and AVX-512 alike
// (docs/performance.md). Then the same products of bf16 operands summed in f32 (JAX's
// `dot(a.astype(f32), b.astype(f32))` of bf16 arrays), and two square ones, against Fluxion's own
// f32 product: on AVX-512-BF16 they run as dot products of bf16 pairs (docs/precision.md).
#include <cblas.h>

#include <fluxion/fluxion.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "cpu_target.h"
#include "timing.h"

namespace fx = fluxion;

namespace {

// C[m, n] = op(A) op(B); op(A) is m x k, op(B) k x n; a transposed operand is stored as its
// transpose (row-major), as the gradient holds it.
struct Shape {
  const char* workload;
  const char* what;
  int m, n, k;
  bool ta, tb;
};

const Shape kShapes[] = {
    {"W3", "W1 x (forward)", 32, 128, 784, false, false},
    {"W3", "dh x^T (dW1)", 32, 784, 128, false, true},
    {"W3", "W2^T dy (dh)", 32, 128, 10, true, false},
    {"W3", "dy h^T (dW2)", 10, 32, 128, false, true},
    {"W4", "h W3^T (dense 256->120)", 128, 120, 256, false, true},
    {"W4", "dy^T h (its dW)", 120, 256, 128, true, false},
    {"W4", "dy W3 (its dh)", 128, 256, 120, false, false},
    {"W5", "W x (forward)", 256, 4096, 512, false, false},
    {"W5", "g x^T (dW)", 256, 512, 4096, false, true},
};

// The median of about 0.3 s of calls (at least 7, at most 20,000), in microseconds.
template <class F>
double median_us(F f) {
  std::vector<double> ts = bench::call_times_us(f, 3, 7, 0.3, 20000);
  return ts[ts.size() / 2];
}

// The strategy of the product's kernel in a kernel listing: "matmul[tiles]", ...
std::string product_strategy(const std::string& kernels) {
  size_t at = kernels.find("matmul[");
  if (at == std::string::npos) return "?";
  return kernels.substr(at, kernels.find(']', at) + 1 - at);
}

// The bf16 table: each product of bf16 operands (converted to f32 by the program, so it sums in
// f32 and returns f32) against the f32 product of the same values.
void bf16_products() {
  std::printf("\nbf16 operands, f32 sums: median us; ratio = f32 / bf16 (the bf16 product's speed-up)\n\n");
  std::printf("%-4s %-26s %18s %10s %10s %7s %7s  %s\n", "", "product", "m x n x k", "bf16", "f32", "ratio", "GFLOP/s",
              "kernel");
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back({"sq", "square", 1024, 1024, 1024, false, false});
  shapes.push_back({"sq", "square, B transposed", 1024, 1024, 1024, false, true});
  auto to_bf16 = fx::jit([](fx::Tensor a) { return fx::cast(a, fx::bf16); });
  for (const Shape& s : shapes) {
    std::vector<int64_t> as = s.ta ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k};
    std::vector<int64_t> bs = s.tb ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n};
    bool ta = s.ta, tb = s.tb;
    auto f = fx::jit([ta, tb](fx::Tensor a, fx::Tensor b) {
      a = fx::cast(a, fx::f32), b = fx::cast(b, fx::f32);
      return fx::matmul(ta ? fx::transpose(a) : a, tb ? fx::transpose(b) : b);
    });
    std::vector<fx::Array> halves{to_bf16(fx::Array(bench::lcg_values(as[0] * as[1], 1), as)),
                                  to_bf16(fx::Array(bench::lcg_values(bs[0] * bs[1], 2), bs))};
    auto widened = [](const fx::Array& x) {
      std::vector<double> d = x.to_doubles();
      return fx::Array(std::vector<float>(d.begin(), d.end()), x.shape());
    };
    std::vector<fx::Array> singles{widened(halves[0]), widened(halves[1])};
    fx::Compiled c16 = f.lower(halves[0], halves[1]), c32 = f.lower(singles[0], singles[1]);
    std::vector<fx::Array> out16 = c16.run(halves), out32 = c32.run(singles);
    double t16 = median_us([&] { c16.run_into(halves, out16); });
    double t32 = median_us([&] { c32.run_into(singles, out32); });
    std::vector<float> got = out16[0].to_vector<float>(), want = out32[0].to_vector<float>();
    double err = 0;
    for (size_t i = 0; i < got.size(); ++i) err = std::max(err, static_cast<double>(std::abs(got[i] - want[i])));
    if (err > 1e-3 * s.k) {
      std::fprintf(stderr, "%s %s: the bf16 and f32 products differ by %g\n", s.workload, s.what, err);
      std::exit(1);
    }
    std::string dims = std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k);
    std::printf("%-4s %-26s %18s %10.2f %10.2f %7.2f %7.0f  %s\n", s.workload, s.what, dims.c_str(), t16, t32,
                t32 / t16, 2.0 * s.m * s.n * s.k / t16 * 1e-3, product_strategy(c16.kernels()).c_str());
  }
}

}  // namespace

int main() {
  fx::set_num_threads(1);
  openblas_set_num_threads(1);
  std::printf("%s\n1 thread, median us; ratio = Fluxion / OpenBLAS (target <= 1.0)\n\n",
              bench::cpu_target_line().c_str());
  std::printf("%-4s %-26s %18s %10s %10s %7s %7s  %s\n", "", "product", "m x n x k", "Fluxion", "OpenBLAS", "ratio",
              "GFLOP/s", "kernel");
  double worst = 0;
  for (const Shape& s : kShapes) {
    std::vector<int64_t> as = s.ta ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k};
    std::vector<int64_t> bs = s.tb ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n};
    std::vector<float> av = bench::lcg_values(as[0] * as[1], 1), bv = bench::lcg_values(bs[0] * bs[1], 2),
                       cv(static_cast<size_t>(s.m) * s.n);
    bool ta = s.ta, tb = s.tb;
    auto f = fx::jit([ta, tb](fx::Tensor a, fx::Tensor b) {
      return fx::matmul(ta ? fx::transpose(a) : a, tb ? fx::transpose(b) : b);
    });
    std::vector<fx::Array> in{fx::Array(av, as), fx::Array(bv, bs)};
    fx::Compiled c = f.lower(in[0], in[1]);
    std::vector<fx::Array> out = c.run(in);
    double ours = median_us([&] { c.run_into(in, out); });
    double blas = median_us([&] {
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                  av.data(), static_cast<int>(as[1]), bv.data(), static_cast<int>(bs[1]), 0.0f, cv.data(), s.n);
    });
    std::vector<float> got = out[0].to_vector<float>();
    double err = 0;
    for (size_t i = 0; i < got.size(); ++i) err = std::max(err, static_cast<double>(std::abs(got[i] - cv[i])));
    if (err > 1e-3 * s.k) {
      std::fprintf(stderr, "%s %s: Fluxion and OpenBLAS differ by %g\n", s.workload, s.what, err);
      return 1;
    }
    double ratio = ours / blas;
    worst = std::max(worst, ratio);
    std::string dims = std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k);
    std::printf("%-4s %-26s %18s %10.2f %10.2f %7.2f %7.0f  %s\n", s.workload, s.what, dims.c_str(), ours, blas, ratio,
                2.0 * s.m * s.n * s.k / ours * 1e-3, product_strategy(c.kernels()).c_str());
  }
  std::printf("\nworst ratio: %.2f\n", worst);
  bf16_products();
}
