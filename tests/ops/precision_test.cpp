// f16 and bf16 on every backend: the conversions of the host types (ties to even, overflow,
// NaN, straight from double); the correctly rounded ops bit for bit against the exact result
// rounded once (conversions from f64 near a tie included, which rounding through f32 would get
// wrong); functions within one unit in the last place of the f64 result; sums of 4,096 values
// accumulated in f32 (a bf16 accumulator stops at 256); weak scalars rounded to the dtype;
// uniform draws exact and below 1; gradients in the primal's dtype against f64, and per-example
// gradients under vmap against each example's. On Vulkan the profile runs repeat them without
// 16-bit storage (halves of 32-bit words) and through descriptors.
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/kernel_listing.h"
#include "common/test_names.h"

namespace {

const DType kHalves[] = {fx::f16, fx::bf16};

// The exact bits of a result against the reference values (already rounded to its dtype).
void expect_bits(const Array& got, DType dt, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), dt) << what;
  std::vector<double> v = got.to_doubles();
  ASSERT_EQ(v.size(), want.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    bool same = std::isnan(want[i]) ? std::isnan(v[i]) : v[i] == want[i] && std::signbit(v[i]) == std::signbit(want[i]);
    EXPECT_TRUE(same) << what << " element " << i << ": got " << v[i] << ", want " << want[i];
  }
}

}  // namespace

TEST(HalfValues, RoundToNearestEvenStraightFromDouble) {
  EXPECT_EQ(fx::f16_bits(1.0), 0x3c00);
  EXPECT_EQ(fx::f16_bits(1.0 + 0x1p-11), 0x3c00);            // a tie: to the even neighbour
  EXPECT_EQ(fx::f16_bits(1.0 + 3 * 0x1p-11), 0x3c02);        // a tie: up to the even one
  EXPECT_EQ(fx::f16_bits(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);  // above the tie (f32 would say tie)
  EXPECT_EQ(fx::f16_bits(65504.0), 0x7bff);                  // the largest
  EXPECT_EQ(fx::f16_bits(65519.99), 0x7bff);                 // below the midpoint to infinity
  EXPECT_EQ(fx::f16_bits(65520.0), 0x7c00);                  // rounds to infinity
  EXPECT_EQ(fx::f16_bits(-0x1p-25), 0x8000);                 // half the smallest subnormal: to -0
  EXPECT_EQ(fx::f16_bits(0x1p-25 + 0x1p-60), 0x0001);        // just above it
  EXPECT_EQ(fx::f16_bits(std::nan("")) & 0x7e00, 0x7e00);    // a quiet NaN
  EXPECT_EQ(fx::bf16_bits(1.0 + 0x1p-8), 0x3f80);            // a tie to even
  EXPECT_EQ(fx::bf16_bits(1.0 + 0x1p-8 + 0x1p-30), 0x3f81);  // above it
  EXPECT_EQ(fx::bf16_bits(3.0e38), 0x7f62);
  EXPECT_EQ(fx::bf16_bits(3.4e38), 0x7f80);  // past the largest + half an ulp
  EXPECT_EQ(fx::bf16_bits(-std::nan("")) & 0xffc0, 0xffc0);
  EXPECT_EQ(fx::f16_value(0x0001), 0x1p-24);
  EXPECT_EQ(fx::bf16_value(0x3f81), 1.0 + 0x1p-7);
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every finite value converts back to its own bits
    auto h = static_cast<uint16_t>(b);
    if (!std::isnan(fx::f16_value(h))) {
      EXPECT_EQ(fx::f16_bits(fx::f16_value(h)), h) << b;
    }
    if (!std::isnan(fx::bf16_value(h))) {
      EXPECT_EQ(fx::bf16_bits(fx::bf16_value(h)), h) << b;
    }
  }
  Array a(std::vector<fx::Half>{fx::Half(0.1), fx::Half(-2.0)}, {2});
  EXPECT_EQ(a.dtype(), fx::f16);
  EXPECT_EQ(a.to_vector<fx::Half>()[0].bits, fx::f16_bits(0.1));
  EXPECT_EQ(a.to_doubles()[1], -2.0);
  EXPECT_EQ(Array::scalar(fx::BFloat16(0.1)).str(), "bf16[] 0.100098");
}

class Precision : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Precision);

TEST_P(Precision, CorrectlyRoundedOpsGiveTheExactResultRoundedOnce) {
  using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
  using Ref = std::function<double(double, double)>;
  const std::vector<std::tuple<const char*, Op, Ref>> ops{
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }},
      {"max", [](const Tensor& a, const Tensor& b) { return fx::maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }},
      {"sqrt", [](const Tensor& a, const Tensor&) { return fx::sqrt(fx::abs(a)); },
       [](double a, double) { return std::sqrt(std::abs(a)); }},
      {"square", [](const Tensor& a, const Tensor&) { return fx::square(a); }, [](double a, double) { return a * a; }},
      {"floor", [](const Tensor& a, const Tensor&) { return fx::floor(a); },
       [](double a, double) { return std::floor(a); }},
      {"scalar", [](const Tensor& a, const Tensor&) { return a * 0.1 + 1000.0; },
       [](double a, double) { return a * 0.1 + 1000.0; }},  // rounded per op below, 0.1 first
      {"chain", [](const Tensor& a, const Tensor& b) { return (a * b + a) / (b * b + 1.0); },
       [](double a, double b) { return (a * b + a) / (b * b + 1.0); }},
  };
  for (DType dt : kHalves) {
    // Large values too: f16 rounds to infinity past 65520, and bf16 keeps 8 bits of 1e4.
    std::vector<double> a = random_values(dt, 257, -300, 300, 7), b = random_values(dt, 257, 0.5, 40, 8);
    for (const auto& [name, op, ref] : ops) {
      SCOPED_TRACE(std::string(name) + " " + fx::dtype_name(dt));
      std::vector<double> want;
      auto r = [dt](double x) { return round_to(dt, x); };
      for (size_t i = 0; i < a.size(); ++i) {
        if (std::string(name) == "scalar") want.push_back(r(r(a[i] * r(0.1)) + 1000.0));
        else if (std::string(name) == "chain") want.push_back(r(r(r(a[i] * b[i]) + a[i]) / r(r(b[i] * b[i]) + 1.0)));
        else want.push_back(r(ref(a[i], b[i])));
      }
      auto f = jit([op = op](Tensor x, Tensor y) { return op(x, y); });
      expect_bits(f(make(dt, a, {257}), make(dt, b, {257})), dt, want, name);
    }
  }
}

TEST_P(Precision, ConversionsRoundOnceFromEveryDtype) {
  FLUXION_REQUIRE_F64(backend());
  // Near the ties of both formats at 1: f32 rounds 1 + 2^-11 + 2^-40 to the f16 tie, and a second
  // rounding would then go to even; the f64 conversion must see it is above.
  std::vector<double> wide{1.0 + 0x1p-11 + 0x1p-40,
                           1.0 + 0x1p-11 - 0x1p-40,
                           1.0 + 0x1p-8 + 0x1p-40,
                           1.0 + 0x1p-8 - 0x1p-40,
                           1.0 + 0x1p-11,
                           -(1.0 + 3 * 0x1p-11),
                           65519.99,
                           65520.0,
                           0x1p-25 + 0x1p-60,
                           -0.0,
                           kInf,
                           kNaN,
                           3.4e38,
                           1e-40,
                           123456.789,
                           -7.0};
  std::vector<double> narrow = round_all(fx::f32, wide);
  std::vector<double> ints{-70000, -3, 0, 1, 2049, 65536, 70000, 16777217};
  for (DType dt : kHalves) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto to = jit([dt](Tensor x, Tensor y, Tensor i) {
      return std::make_tuple(fx::cast(x, dt), fx::cast(y, dt), fx::cast(i, dt));
    });
    auto [from64, from32, from_int] =
        to(make(fx::f64, wide, {16}), make(fx::f32, narrow, {16}), make(fx::i32, ints, {8}));
    expect_bits(from64, dt, round_all(dt, wide), "from f64");
    expect_bits(from32, dt, round_all(dt, narrow), "from f32");
    expect_bits(from_int, dt, round_all(dt, ints), "from i32");
    std::vector<double> halves = round_all(dt, wide);
    auto back = jit([](Tensor h) {
      return std::make_tuple(fx::cast(h, fx::f32), fx::cast(h, fx::f64), fx::cast(fx::abs(h) < 2.0, fx::i32));
    });
    auto [f32s, f64s, small] = back(make(dt, halves, {16}));
    expect_bits(f32s, fx::f32, halves, "to f32");  // every 16-bit value is an f32 value
    expect_bits(f64s, fx::f64, halves, "to f64");
    std::vector<double> want_small;
    for (double h : halves) want_small.push_back(std::abs(h) < 2.0 ? 1 : 0);
    EXPECT_EQ(small.to_doubles(), want_small);
    // The other 16-bit format: bf16 -> f16 rounds, f16 -> bf16 rounds too.
    DType other = dt == fx::f16 ? fx::bf16 : fx::f16;
    auto cross = jit([other](Tensor h) { return fx::cast(h, other); });
    expect_bits(cross(make(dt, halves, {16})), other, round_all(other, halves), "to the other format");
  }
}

// Every 16-bit value widens to itself, and every f32 halfway between two neighbouring values
// (and the f32 values either side of it) narrows as the host rounds it: ties to even,
// subnormals, overflow to infinity at the midpoint past the largest value.
TEST_P(Precision, EveryValueWidensExactlyAndEveryMidpointRoundsToEven) {
  for (DType dt : kHalves) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto value = [dt](uint32_t b) {
      auto h = static_cast<uint16_t>(b);
      return dt == fx::f16 ? fx::f16_value(h) : fx::bf16_value(h);
    };
    std::vector<double> values, near;
    for (uint32_t b = 0; b < 0x10000; ++b) {
      if (!std::isnan(value(b))) values.push_back(value(b));
    }
    for (uint32_t b = 0; !std::isinf(value(b)); ++b) {
      double lo = value(b), hi = std::isinf(value(b + 1)) ? 2 * lo - value(b - 1) : value(b + 1);
      auto mid = static_cast<float>((lo + hi) / 2);  // exact: one bit more than the format has
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, HUGE_VALF), -mid})
        near.push_back(static_cast<double>(x));
    }
    auto n = static_cast<int64_t>(values.size()), m = static_cast<int64_t>(near.size());
    auto convert = jit([dt](Tensor h, Tensor x) { return std::make_tuple(fx::cast(h, fx::f32), fx::cast(x, dt)); });
    auto [wide, narrow] = convert(make(dt, values, {n}), make(fx::f32, near, {m}));
    expect_bits(wide, fx::f32, values, "widened");
    expect_bits(narrow, dt, round_all(dt, near), "narrowed");
  }
}

TEST_P(Precision, FunctionsAreWithinOneUlpOfTheF64Result) {
  using Op = std::function<Tensor(const Tensor&)>;
  const std::vector<std::tuple<const char*, Op, double (*)(double), double, double>> fns{
      {"exp", [](const Tensor& x) { return fx::exp(x); }, [](double x) { return std::exp(x); }, -5, 5},
      {"log", [](const Tensor& x) { return fx::log(x); }, [](double x) { return std::log(x); }, 0.01, 100},
      {"tanh", [](const Tensor& x) { return fx::tanh(x); }, [](double x) { return std::tanh(x); }, -4, 4},
      {"sin", [](const Tensor& x) { return fx::sin(x); }, [](double x) { return std::sin(x); }, -4, 4},
      {"erf", [](const Tensor& x) { return fx::erf(x); }, [](double x) { return std::erf(x); }, -3, 3},
      {"sigmoid", [](const Tensor& x) { return fx::sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, -8,
       8},
      {"rsqrt", [](const Tensor& x) { return fx::rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 0.01, 100},
  };
  for (DType dt : kHalves) {
    for (const auto& [name, op, ref, lo, hi] : fns) {
      SCOPED_TRACE(std::string(name) + " " + fx::dtype_name(dt));
      std::vector<double> x = random_values(dt, 300, lo, hi, 11);
      std::vector<double> want;
      for (double v : x) want.push_back(ref(v));
      auto f = jit([op = op](Tensor t) { return op(t); });
      EXPECT_ARRAY(f(make(dt, x, {300})), dt, {300}, want, Tol::trans());
    }
  }
}

TEST_P(Precision, SumsOf4096ValuesAccumulateInF32) {
  for (DType dt : kHalves) {
    SCOPED_TRACE(fx::dtype_name(dt));
    // In bf16, 256 + 1 rounds back to 256: an accumulator of the dtype would stop there.
    std::vector<double> ones(4096, 1.0);
    auto f = jit([](Tensor x, Tensor row, Tensor col) {
      return std::make_tuple(fx::sum(x), fx::mean(x), fx::matmul(row, col), fx::sum(fx::reshape(x, {64, 64}), {1}));
    });
    auto [s, m, p, rows] = f(make(dt, ones, {4096}), make(dt, ones, {1, 4096}), make(dt, ones, {4096, 1}));
    expect_bits(s, dt, {4096}, "sum");
    expect_bits(m, dt, {1}, "mean");
    expect_bits(p, dt, {4096}, "matmul");
    expect_bits(rows, dt, std::vector<double>(64, 64), "row sums");
    // Random values: within the f32 accumulation's error of the f64 sum, rounded once.
    std::vector<double> x = random_values(dt, 4096, -1, 1, 3);
    double exact = 0;
    for (double v : x) exact += v;
    EXPECT_ARRAY(jit([](Tensor t) { return fx::sum(t); })(make(dt, x, {4096})), dt, {}, {exact}, Tol::sum(4096));
  }
}

TEST_P(Precision, UniformDrawsAreExactAndBelowOne) {
  for (DType dt : kHalves) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto draw = [dt](Tensor) { return fx::random::uniform(fx::random::key(42), {4096}, dt); };
    Array got = jit(draw)(make(fx::f32, {0}, {1}));
    Array want = fx::jit(draw, Backend::Interp)(make(fx::f32, {0}, {1}));
    expect_bits(got, dt, want.to_doubles(), "uniform");
    int bits = dt == fx::f16 ? 11 : 8;
    for (double v : got.to_doubles()) {
      ASSERT_TRUE(v >= 0 && v < 1) << v;
      ASSERT_EQ(std::ldexp(v, bits), std::floor(std::ldexp(v, bits))) << v;  // k * 2^-bits
    }
  }
}

TEST_P(Precision, GradientsAreInThePrimalsDtypeAndMatchF64) {
  auto loss = [](Tensor w, Tensor x) { return fx::sum(fx::tanh(fx::matmul(x, w)) * 0.5) + fx::sum(fx::square(w)); };
  std::vector<double> w = random_values(fx::f64, 12, -1, 1, 5), x = random_values(fx::f64, 32, -1, 1, 6);
  for (DType dt : kHalves) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<double> wh = round_all(dt, w), xh = round_all(dt, x);
    auto grad = jit([&](Tensor a, Tensor b) { return fx::grad(loss, {0})(a, b)[0]; });
    Array g = grad(make(dt, wh, {4, 3}), make(dt, xh, {8, 4}));
    Array want = fx::jit([&](Tensor a, Tensor b) { return fx::grad(loss, {0})(a, b)[0]; }, Backend::Interp)(
        make(fx::f64, wh, {4, 3}), make(fx::f64, xh, {8, 4}));
    // The backward pass rounds each op to the dtype: a few of its ulps, over 8 summed terms.
    EXPECT_ARRAY(g, dt, {4, 3}, want.to_doubles(), Tol::loose(dt == fx::f16 ? 0.02 : 0.1));
  }
}

TEST_P(Precision, PerExampleGradientsUnderVmapMatchEachExamplesOwn) {
  auto loss = [](Tensor w, Tensor x) { return fx::sum(fx::square(fx::matmul(x, w) - 1.0)); };
  auto per_example = [&](Tensor w, Tensor xs) { return fx::vmap(fx::grad(loss, {0}), {fx::none, 0})(w, xs)[0]; };
  for (DType dt : kHalves) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<double> w = random_values(dt, 6, -1, 1, 21), xs = random_values(dt, 24, -1, 1, 22);
    Array batched = jit(per_example)(make(dt, w, {3, 2}), make(dt, xs, {4, 2, 3}));
    ASSERT_EQ(batched.type(), (fx::TensorType{dt, {4, 3, 2}}));
    std::vector<double> got = batched.to_doubles();
    for (int64_t e = 0; e < 4; ++e) {
      std::vector<double> x(xs.begin() + e * 6, xs.begin() + (e + 1) * 6);
      Array one = jit([&](Tensor a, Tensor b) { return fx::grad(loss, {0})(a, b)[0]; })(make(dt, w, {3, 2}),
                                                                                        make(dt, x, {2, 3}));
      std::vector<double> want = one.to_doubles();
      // The batched products may sum in another order (in f32): equal up to the last rounding.
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[static_cast<size_t>(e) * 6 + i], want[i], allowed(dt, want[i])) << e << " " << i;
    }
  }
}

// A product of 16-bit values sums in f32 (sum_halves_in_f32 converts its operands), but reads
// the 16-bit operands where they are stored, widening each element as it loads it: no kernel
// makes an f32 copy of an operand, so a program in f16 or bf16 has as many kernels as the same
// program in f32 whose result is rounded to the dtype. Matrix products in each operand layout
// and with a broadcast batch, and convolutions with both gradients of one (per output, sliding
// windows or tiled products over im2col by their shape; the 16-bit operand recomputed widened);
// values against the interpreter.
TEST_P(Precision, ProductsReadHalfOperandsWithoutAnF32Copy) {
  if (backend() == Backend::Interp) GTEST_SKIP() << "the interpreter runs no kernels";
  using Binary = std::function<Tensor(Tensor, Tensor)>;
  struct Product {
    const char* name;
    Binary f;
    Shape a, b;
    int64_t terms;
  };
  const fx::Conv2dOptions conv{{2, 1}, {1}, {1, 1}, 1};
  // Both gradients of half the convolution's sum of squares: products of the computed 16-bit
  // result with the weights and with the input.
  auto conv_grads = [conv](Tensor x, Tensor w) {
    auto g = fx::grad([conv](Tensor a, Tensor b) { return fx::sum(fx::square(fx::conv2d(a, b, conv))) * 0.5; }, {0, 1})(
        x, w);
    return fx::concat({fx::reshape(g[0], {-1}), fx::reshape(g[1], {-1})});
  };
  std::vector<Product> products = {
      {"rows", [](Tensor x, Tensor y) { return fx::matmul(x, y); }, {23, 70}, {70, 45}, 70},
      {"transposed B", [](Tensor x, Tensor y) { return fx::matmul(x, fx::transpose(y)); }, {13, 300}, {33, 300}, 300},
      {"transposed A", [](Tensor x, Tensor y) { return fx::matmul(fx::transpose(x), y); }, {70, 20}, {70, 40}, 70},
      {"batch", [](Tensor x, Tensor y) { return fx::matmul(x, y); }, {3, 1, 20, 40}, {4, 40, 35}, 40},
      {"convolution", [conv](Tensor x, Tensor w) { return fx::conv2d(x, w, conv); }, {2, 8, 12, 10}, {6, 8, 3, 3}, 72},
      // Stride 1 and 16 output channels over 32 x 32 pixels: the CPU's sliding windows, Vulkan's
      // tiled product over im2col.
      {"wide convolution", [](Tensor x, Tensor w) { return fx::conv2d(x, w); }, {2, 8, 34, 34}, {16, 8, 3, 3}, 72},
      {"convolution gradients", conv_grads, {2, 8, 12, 10}, {6, 8, 3, 3}, 2 * 6 * 10 * 72},
  };
  uint32_t seed = 70;
  for (DType dt : kHalves) {
    for (const Product& p : products) {
      SCOPED_TRACE(std::string(fx::dtype_name(dt)) + " " + p.name);
      Array a = make(dt, random_values(dt, count(p.a), -1, 1, seed++), p.a);
      Array b = make(dt, random_values(dt, count(p.b), -1, 1, seed++), p.b);
      Array a32 = make(fx::f32, a.to_doubles(), p.a), b32 = make(fx::f32, b.to_doubles(), p.b);
      auto halves = jit(p.f);
      auto in_f32 = jit([&p, dt](Tensor x, Tensor y) { return fx::cast(p.f(x, y), dt); });
      std::string listing = halves.lower(a, b).kernels();
      EXPECT_EQ(kernel_strategies(listing).size(), kernel_strategies(in_f32.lower(a32, b32).kernels()).size())
          << listing;
      Array got = halves(a, b), want = fx::jit(p.f, Backend::Interp)(a, b);
      EXPECT_ARRAY(got, dt, want.shape(), want.to_doubles(), Tol::sum(p.terms));
    }
  }
}

// Products of f16 values traced under fx::F16Sums carry the permission to sum in f16 in the IR,
// into the products of their gradients and of their batched forms; bf16 products and products
// traced outside the scope do not.
TEST(F16Sums, TheScopeMarksProductsAndTheProductsMadeFromThem) {
  auto count = [](const std::string& text, const std::string& word) {
    int n = 0;
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
    return n;
  };
  auto loss = [](Tensor w, Tensor x) { return fx::sum(fx::square(fx::matmul(x, w))); };
  auto step = [&](Tensor w, Tensor x) { return fx::grad(loss, {0, 1})(w, x); };
  auto per_example = [&](Tensor w, Tensor xs) { return fx::vmap(fx::grad(loss, {0}), {fx::none, 0})(w, xs)[0]; };
  Array w = make(fx::f16, random_values(fx::f16, 12, -1, 1, 1), {4, 3});
  Array x = make(fx::f16, random_values(fx::f16, 32, -1, 1, 2), {8, 4});
  Array xs = make(fx::f16, random_values(fx::f16, 64, -1, 1, 3), {2, 8, 4});
  auto traced = [&](auto f, const Array& a, const Array& b) {
    return fx::jit(f, Backend::Interp).lower(a, b).traced_ir();
  };
  std::string plain = traced(step, w, x);
  EXPECT_EQ(count(plain, "matmul"), 3) << plain;
  EXPECT_EQ(count(plain, "f16_sums"), 0) << plain;
  {
    fx::F16Sums allow;
    EXPECT_TRUE(fx::F16Sums::active());
    std::string marked = traced(step, w, x);
    EXPECT_EQ(count(marked, "f16_sums=true"), 3) << marked;  // the product and its two gradients
    std::string batched = traced(per_example, w, xs);
    EXPECT_EQ(count(batched, "matmul"), count(batched, "f16_sums=true")) << batched;
    Array wb = make(fx::bf16, w.to_doubles(), {4, 3}), xb = make(fx::bf16, x.to_doubles(), {8, 4});
    EXPECT_EQ(count(traced(step, wb, xb), "f16_sums"), 0);
    // The permission survives the pipeline: the optimized program's products, summing the
    // f16 operands widened to f32, still carry it.
    std::string optimized = fx::jit(step, Backend::Interp).lower(w, x).ir();
    EXPECT_EQ(count(optimized, "f16_sums=true"), count(optimized, "matmul")) << optimized;
  }
  EXPECT_FALSE(fx::F16Sums::active());
  // Whether a scope is open is part of a jitted function's cache key: a scope around a call
  // applies to it, and a trace made inside one is not reused outside.
  auto once = fx::jit(step, Backend::Interp);
  EXPECT_EQ(count(once.lower(w, x).traced_ir(), "f16_sums"), 0);
  {
    fx::F16Sums allow;
    EXPECT_EQ(count(once.lower(w, x).traced_ir(), "f16_sums=true"), 3);
  }
  EXPECT_EQ(count(once.lower(w, x).traced_ir(), "f16_sums"), 0);
  EXPECT_EQ(once.cache_size(), 2u);
}

// A product allowed to sum in f16 does so on Vulkan devices with f16 arithmetic (its tiles say
// "f16 sums"), each result summed over its depth in order, and sums in f32 everywhere else, bit
// for bit the program without the permission. The operands are multiples of 1/16 small enough
// that each term is an exact f16 value and every f32 partial sum is exact, so the f16 sums are
// the f16 running sum rounded to nearest at each step whether a device fuses the multiply-add
// or not, and the f32 sums are the exact sum rounded once. The depth, 120, is one that no
// device's plans split into parts; a deeper product, which the GPU class's plans split, sums
// each part in f16 and the parts in f32: within the f16 sums' bound of the exact result.
TEST_P(Precision, ProductsAllowedToSumInF16DoSoWhereTheBackendHasF16Arithmetic) {
  std::mt19937 rng(5);
  auto sixteenths = [&](int64_t count, int limit) {
    std::uniform_int_distribution<int> d(-limit, limit);
    std::vector<double> v(static_cast<size_t>(count));
    for (double& e : v) e = d(rng) / 16.0;
    return v;
  };
  // Per result of a [m, k] x [k, n]: the exact sum, the running f16 sum in order, and the sum
  // of the terms' magnitudes.
  struct Sums {
    std::vector<double> exact, in_order, magnitude;
  };
  auto sums = [](const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t k, int64_t n) {
    Sums s{std::vector<double>(static_cast<size_t>(m * n)), {}, {}};
    s.in_order = s.magnitude = s.exact;
    for (int64_t i = 0; i < m * n; ++i) {
      auto e = static_cast<size_t>(i);
      for (int64_t q = 0; q < k; ++q) {
        double term = a[static_cast<size_t>(i / n * k + q)] * b[static_cast<size_t>(q * n + i % n)];
        s.exact[e] += term;
        s.in_order[e] = round_to(fx::f16, s.in_order[e] + term);
        s.magnitude[e] += std::abs(term);
      }
    }
    return s;
  };
  auto product = [](Tensor p, Tensor q) { return fx::matmul(p, q); };
  auto allowed = [&](Tensor p, Tensor q) {
    fx::F16Sums allow;
    return fx::matmul(p, q);
  };
  // Cooperative matrices, where on, take these products (summing in f32 on the matrix units).
  bool f16_arithmetic = false;
  if (backend() == Backend::Vulkan) {
    fx::VulkanCapabilities caps = fx::vulkan_device().capabilities;
    f16_arithmetic = caps.float16 && !caps.cooperative_matrix;
  }
  auto expect_listing = [&](const Array& x, const Array& y) {
    if (backend() == Backend::Interp) return;
    std::string listing = jit(allowed).lower(x, y).kernels();
    EXPECT_EQ(listing.find("f16 sums") != std::string::npos, f16_arithmetic) << listing;
  };
  const int64_t m = 128, k = 120, n = 128;
  std::vector<double> a = sixteenths(m * k, 64), b = sixteenths(k * n, 16);
  Sums s = sums(a, b, m, k, n);
  std::vector<double> in_f32 = round_all(fx::f16, s.exact);
  ASSERT_NE(s.in_order, in_f32) << "the data must tell the two accumulations apart";
  Array x = make(fx::f16, a, {m, k}), y = make(fx::f16, b, {k, n});
  expect_bits(jit(product)(x, y), fx::f16, in_f32, "without the permission");
  expect_listing(x, y);
  expect_bits(jit(allowed)(x, y), fx::f16, f16_arithmetic ? s.in_order : in_f32, "with the permission");

  const int64_t rows = 64, deep = 1024, cols = 64;
  std::vector<double> c = sixteenths(rows * deep, 64), d = sixteenths(deep * cols, 16);
  Array u = make(fx::f16, c, {rows, deep}), v = make(fx::f16, d, {deep, cols});
  expect_listing(u, v);
  std::vector<double> got = jit(allowed)(u, v).to_doubles();
  Sums t = sums(c, d, rows, deep, cols);
  for (size_t i = 0; i < got.size(); ++i) {
    double bound = (f16_arithmetic ? deep * 0x1p-11 * t.magnitude[i] : 0) + 0x1p-11 * std::abs(t.exact[i]);
    ASSERT_LE(std::abs(got[i] - t.exact[i]), bound) << i;
  }
}
