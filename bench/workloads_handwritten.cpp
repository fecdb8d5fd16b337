// The hand-written floor: what a careful C++ programmer writes for each workload's loss and
// gradient. One pass over the data where the math allows it, OpenBLAS sgemm for every matmul,
// output buffers allocated once outside the timed call. Compiled with -O3 -march=native
// -ffast-math -fopenmp: glibc's vector math library (libmvec) supplies vectorised expf, tanhf
// and atan2f. With more than one thread, OpenBLAS runs the matmuls in parallel and OpenMP splits
// W1's and W2's loops (see split_sum).
#include <cblas.h>
#include <omp.h>

#include <cmath>
#include <memory>
#include <vector>

#include "workloads.h"

namespace bench {
namespace {

int g_threads = 1;

float sigmoidf(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplusf(float x) { return std::log1p(std::exp(x)); }

double norm(const std::vector<const std::vector<float>*>& grads) {
  double s = 0;
  for (const auto* g : grads)
    for (float v : *g) s += static_cast<double>(v) * v;
  return std::sqrt(s);
}

// Calls body(lo, hi) on [0, n) cut into one contiguous range per thread and returns the sum
// of its results. At one thread, or below 64K elements (where a parallel region costs
// more than it saves), it is a plain call with no
// OpenMP runtime on the path. Only W1 and W2 use it: where OpenBLAS runs the matmuls with its
// own threads, an OpenMP team beside them fights for the cores (its workers and OpenBLAS's
// spin after their work), so W3's and W5's elementwise passes stay on the calling thread
// (docs/performance.md, "All cores").
template <class Body>
double split_sum(int64_t n, Body body) {
  if (g_threads == 1 || n < 65536) return body(int64_t{0}, n);
  double total = 0;
#pragma omp parallel num_threads(g_threads) reduction(+ : total)
  {
    int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    total += body(n * t / T, n * (t + 1) / T);
  }
  return total;
}

// C[m,n] = op(A) op(B), row-major.
void gemm(bool ta, bool tb, int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C,
          int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, A, lda,
              B, ldb, 0.0f, C, ldc);
}

// ---- Kernels over a range [lo, hi), as plain functions: GCC vectorises these loops, but not the
// same loops written inside lambdas that capture their pointers (it falls back to gathers).

float sum_squares(const float* x, float* g, int64_t lo, int64_t hi) {  // g = 2x when g
  float acc = 0;
  if (g) {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = lo; i < hi; ++i) {
      acc += x[i] * x[i];
      g[i] = 2.0f * x[i];
    }
  } else {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = lo; i < hi; ++i) acc += x[i] * x[i];
  }
  return acc;
}

float sum_atan2(const float* x, float* g, int64_t lo, int64_t hi) {  // g = 2 / (x^2 + 4) when g
  float acc = 0;
  if (g) {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = lo; i < hi; ++i) {
      acc += std::atan2(x[i], 2.0f);
      g[i] = 2.0f / (x[i] * x[i] + 4.0f);
    }
  } else {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = lo; i < hi; ++i) acc += std::atan2(x[i], 2.0f);
  }
  return acc;
}

// ---- W1 and W2: an elementwise loss summed over x, its gradient in the same pass.
using Elementwise = float (*)(const float*, float*, int64_t, int64_t);

std::vector<CaseSpec> elementwise(const char* w, const Buf& x, Elementwise kernel) {
  struct S {
    const Buf& x;
    std::vector<float> g;
    double loss = 0;
  };
  auto make = [&x, kernel](bool grad) {
    auto s = std::make_shared<S>(S{x, std::vector<float>(grad ? x.v.size() : 0), 0});
    Case c;
    c.run = [s, kernel] {
      const float* xp = s->x.data();
      float* g = s->g.empty() ? nullptr : s->g.data();
      s->loss = split_sum(s->x.size(), [=](int64_t lo, int64_t hi) { return kernel(xp, g, lo, hi); });
    };
    c.value = [s] { return s->loss; };
    if (grad) c.grad_norm = [s] { return norm({&s->g}); };
    return c;
  };
  return {{w, "handwritten", "primal", [make] { return make(false); }},
          {w, "handwritten", "grad", [make] { return make(true); }}};
}

// ---- Row kernels over a row-major matrix of `rows` x `cols`, one bias per row.

void bias_tanh_rows(float* h, const float* b, int64_t rows, int64_t cols) {  // h = tanh(h + b)
  for (int64_t r = 0; r < rows; ++r) {
    float* hr = h + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) hr[c] = std::tanh(hr[c] + b[r]);
  }
}

// Returns sum((y + b)^2); with dy, also dy = 2 (y + b) (dy may be y) and db = row sums of dy.
double bias_square_rows(float* y, const float* b, float* dy, float* db, int64_t rows, int64_t cols) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * cols;
    float acc = 0, row = 0;
    if (dy) {
      float* dr = dy + r * cols;
#pragma omp simd reduction(+ : acc, row)
      for (int64_t c = 0; c < cols; ++c) {
        float v = yr[c] + b[r];
        acc += v * v;
        dr[c] = 2.0f * v;
        row += 2.0f * v;
      }
      db[r] = row;
    } else {
#pragma omp simd reduction(+ : acc)
      for (int64_t c = 0; c < cols; ++c) acc += (yr[c] + b[r]) * (yr[c] + b[r]);
    }
    total += acc;
  }
  return total;
}

// dz = dh (1 - h^2) in place of dh; db = row sums of dz.
void tanh_grad_rows(const float* h, float* dh, float* db, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* hr = h + r * cols;
    float* dr = dh + r * cols;
    float row = 0;
#pragma omp simd reduction(+ : row)
    for (int64_t c = 0; c < cols; ++c) {
      float dz = dr[c] * (1.0f - hr[c] * hr[c]);
      dr[c] = dz;
      row += dz;
    }
    db[r] = row;
  }
}

// Returns sum(exp(z + b)) and puts each row's sum in sums[r]; with keep, z = exp(z + b) in place.
double bias_exp_rows(float* z, const float* b, float* sums, bool keep, int64_t rows, int64_t cols) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float* zr = z + r * cols;
    float acc = 0;
    if (keep) {
#pragma omp simd reduction(+ : acc)
      for (int64_t c = 0; c < cols; ++c) {
        float v = std::exp(zr[c] + b[r]);
        zr[c] = v;
        acc += v;
      }
    } else {
#pragma omp simd reduction(+ : acc)
      for (int64_t c = 0; c < cols; ++c) acc += std::exp(zr[c] + b[r]);
    }
    sums[r] = acc;
    total += acc;
  }
  return total;
}

// ---- W3: h = tanh(W1 x + b1), y = W2 h + b2, loss = sum(y*y). Gradients for W1, b1, W2, b2.
std::vector<CaseSpec> w3(const Inputs& in) {
  constexpr int D = 784, B = 128, H = 32, O = 10;
  struct S {
    const Mlp& m;
    std::vector<float> h = std::vector<float>(H * B), y = std::vector<float>(O * B), dh = std::vector<float>(H * B);
    std::vector<float> dW1 = std::vector<float>(H * D), db1 = std::vector<float>(H);
    std::vector<float> dW2 = std::vector<float>(O * H), db2 = std::vector<float>(O);
    double loss = 0;

    void run(bool grad) {
      float *hp = h.data(), *yp = y.data(), *dhp = dh.data(), *db1p = db1.data();
      const float* b1p = m.b1.data();
      gemm(false, false, H, B, D, m.W1.data(), D, m.x.data(), B, hp, B);  // h = tanh(W1 x + b1)
      bias_tanh_rows(hp, b1p, H, B);
      gemm(false, false, O, B, H, m.W2.data(), H, hp, B, yp, B);  // y = W2 h, then + b2 below
      // The loss; for the gradient dy = 2 (y + b2) in place of y and db2 in the same pass.
      loss = bias_square_rows(yp, m.b2.data(), grad ? yp : nullptr, db2.data(), O, B);
      if (!grad) return;
      gemm(false, true, O, H, B, yp, B, hp, B, dW2.data(), H);           // dW2 = dy h^T
      gemm(true, false, H, B, O, m.W2.data(), H, yp, B, dhp, B);         // dh = W2^T dy
      tanh_grad_rows(hp, dhp, db1p, H, B);
      gemm(false, true, H, D, B, dhp, B, m.x.data(), B, dW1.data(), D);  // dW1 = dz x^T
    }
  };
  auto make = [&in](bool grad) {
    auto s = std::make_shared<S>(S{in.w3});
    Case c;
    c.run = [s, grad] { s->run(grad); };
    c.value = [s] { return s->loss; };
    if (grad) c.grad_norm = [s] { return norm({&s->dW1, &s->db1, &s->dW2, &s->db2}); };
    return c;
  };
  return {{"W3", "handwritten", "primal", [make] { return make(false); }},
          {"W3", "handwritten", "grad", [make] { return make(true); }}};
}

// ---- W5: loss = sum(exp(W x + b)); gradients for W and b only (never dx).
std::vector<CaseSpec> w5(const Inputs& in) {
  constexpr int M = 256, K = 512, N = 4096;
  struct S {
    const ExpLayer& e;
    std::vector<float> z = std::vector<float>(static_cast<size_t>(M) * N);
    std::vector<float> dW = std::vector<float>(M * K), db = std::vector<float>(M);
    double loss = 0;

    void run(bool grad) {
      float *zp = z.data(), *dbp = db.data();
      const float* bp = e.b.data();
      gemm(false, false, M, N, K, e.W.data(), K, e.x.data(), N, zp, N);  // Z = W x
      // E = exp(Z + b), kept for the gradient; db = row sums of E; the loss is their sum.
      loss = bias_exp_rows(zp, bp, dbp, grad, M, N);
      if (grad) gemm(false, true, M, K, N, zp, N, e.x.data(), N, dW.data(), K);  // dW = E x^T
    }
  };
  auto make = [&in](bool grad) {
    auto s = std::make_shared<S>(S{in.w5});
    Case c;
    c.run = [s, grad] { s->run(grad); };
    c.value = [s] { return s->loss; };
    if (grad) c.grad_norm = [s] { return norm({&s->dW, &s->db}); };
    return c;
  };
  return {{"W5", "handwritten", "primal", [make] { return make(false); }},
          {"W5", "handwritten", "grad", [make] { return make(true); }}};
}

// ---- W7: 8000 steps of s = sigmoid(k2 . sigmoid(s * k1)) + noise[i], k = softplus(w).
// The gradient runs the loop forward storing each step's s and sigmoid(d), then backward,
// recomputing sigmoid(s * k1) from the stored s.
std::vector<CaseSpec> w7(const Inputs& in) {
  constexpr int N = static_cast<int>(SmallLoop::kSteps), W = static_cast<int>(SmallLoop::kWidth);
  struct S {
    const SmallLoop& p;
    std::vector<float> s = std::vector<float>(N), sd = std::vector<float>(N);
    std::vector<float> gw1 = std::vector<float>(W), gw2 = std::vector<float>(W);
    float result = 0;

    void run(bool grad) {
      float k1[W], k2[W];
      for (int j = 0; j < W; ++j) k1[j] = softplusf(p.w1.v[j]), k2[j] = softplusf(p.w2.v[j]);
      const float* noise = p.noise.data();
      float st = p.s0;
      for (int i = 0; i < N; ++i) {
        float d = 0;
#pragma omp simd reduction(+ : d)
        for (int j = 0; j < W; ++j) d += k2[j] * sigmoidf(st * k1[j]);
        float sig = sigmoidf(d);
        if (grad) s[i] = st, sd[i] = sig;
        st = sig + noise[i];
      }
      result = st;
      if (!grad) return;

      float gk1[W] = {}, gk2[W] = {};
      float gs = 1;  // d(final s) / d(s after step i)
      for (int i = N - 1; i >= 0; --i) {
        float si = s[i], sig = sd[i];
        float gd = gs * sig * (1 - sig);
        float gprev = 0;
#pragma omp simd reduction(+ : gprev)
        for (int j = 0; j < W; ++j) {
          float a = sigmoidf(si * k1[j]);
          gk2[j] += gd * a;
          float gz = gd * k2[j] * a * (1 - a);
          gk1[j] += gz * si;
          gprev += gz * k1[j];
        }
        gs = gprev;
      }
      for (int j = 0; j < W; ++j) {  // softplus' = sigmoid
        gw1[j] = gk1[j] * sigmoidf(p.w1.v[j]);
        gw2[j] = gk2[j] * sigmoidf(p.w2.v[j]);
      }
    }
  };
  auto make = [&in](bool grad) {
    auto s = std::make_shared<S>(S{in.w7});
    Case c;
    c.run = [s, grad] { s->run(grad); };
    c.value = [s] { return s->result; };
    if (grad) c.grad_norm = [s] { return norm({&s->gw1, &s->gw2}); };
    return c;
  };
  return {{"W7", "handwritten", "primal", [make] { return make(false); }},
          {"W7", "handwritten", "grad", [make] { return make(true); }}};
}

}  // namespace

void handwritten_set_threads(int n) {
  g_threads = n;
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

std::vector<CaseSpec> handwritten_cases(const Inputs& in) {
  std::vector<CaseSpec> out;
  for (auto cases : {elementwise("W1", in.w1.x, sum_squares), elementwise("W2", in.w1.x, sum_atan2), w3(in), w5(in),
                     w7(in)})
    for (CaseSpec& c : cases) out.push_back(std::move(c));
  return out;
}

}  // namespace bench
