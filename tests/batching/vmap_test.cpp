// vmap in the DSL: every batched call equals a loop of single calls on the same backend, through
// trees of arguments, in and out axes, nesting, differentiation both ways, loops, branches and
// random keys; its errors name the caller's line.
#include <utility>
#include <vector>

#include "autodiff/gradcheck.h"
#include "common/test_names.h"

class Vmap : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Vmap);

namespace {

constexpr int64_t kB = 4;
const Tol kTol{.transcendental = true, .terms = 8};

// Example e of a batch (its axis 0).
Array example(const Array& a, int64_t e) {
  std::vector<double> v = a.to_doubles();
  Shape s(a.shape().begin() + 1, a.shape().end());
  auto n = static_cast<long>(count(s));
  return make(a.dtype(), std::vector<double>(v.begin() + e * n, v.begin() + (e + 1) * n), s);
}

Array rand32(const Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  return make(DType::f32, random_doubles(count(s), lo, hi, seed), s);
}

void expect_same(const Array& got, const Array& want, const std::string& what) {
  EXPECT_ARRAY(got, want.dtype(), want.shape(), want.to_doubles(), kTol) << what;
}

// A one-hidden-layer network's loss on one example.
Tensor mlp_loss(const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
  Tensor h = fx::tanh(fx::matmul(x, p[0]) + p[1]);
  Tensor d = fx::matmul(h, p[2]) - y;
  return fx::sum(d * d);
}

std::vector<Array> mlp_params() { return {rand32({3, 5}, 1), rand32({5}, 2), rand32({5, 2}, 3)}; }

}  // namespace

TEST_P(Vmap, EqualsALoopOfSingleCalls) {
  auto f = [](const Tensor& x, const Tensor& w) { return fx::tanh(fx::matmul(fx::expand_dims(x, 0), w)) * 2.0f; };
  Array x = rand32({kB, 3}, 4), w = rand32({3, 2}, 5);
  Array got = jit([&](const Tensor& x, const Tensor& w) { return fx::vmap(f, {0, fx::none})(x, w); })(x, w);
  ASSERT_EQ(got.shape(), (Shape{kB, 1, 2}));
  auto single = jit(f);
  for (int64_t e = 0; e < kB; ++e)
    expect_same(example(got, e), single(example(x, e), w), "example " + std::to_string(e));
}

TEST_P(Vmap, ACondThatYieldsNothingIsBatchedToo) {
  auto f = [](const Tensor& x) {
    auto nothing = [] { return std::tuple<>{}; };
    fx::cond(fx::sum(x) > 0.0f, nothing, nothing);
    return fx::sum(fx::sin(x) * x);
  };
  Array x = rand32({kB, 3}, 40);
  Array got = jit([&](const Tensor& x) { return fx::vmap(f, {0})(x); })(x);
  auto single = jit(f);
  for (int64_t e = 0; e < kB; ++e) expect_same(example(got, e), single(example(x, e)), "example " + std::to_string(e));
}

TEST_P(Vmap, InAndOutAxesPlaceTheBatch) {
  // The batch along axis 1 of x and -1 of the result: sum over the example's 3 values, times w.
  auto f = [](const Tensor& x, const Tensor& w) { return fx::sum(x) * w; };
  Array x = rand32({3, kB}, 6), w = rand32({2}, 7);
  Array got = jit([&](const Tensor& x, const Tensor& w) { return fx::vmap(f, {1, fx::none}, -1)(x, w); })(x, w);
  ASSERT_EQ(got.shape(), (Shape{2, kB}));
  std::vector<double> xv = x.to_doubles(), wv = w.to_doubles(), gv = got.to_doubles();
  for (int64_t e = 0; e < kB; ++e) {
    double s = xv[e] + xv[kB + e] + xv[2 * kB + e];
    for (int64_t j = 0; j < 2; ++j) EXPECT_NEAR(gv[j * kB + e], s * wv[j], 1e-5);
  }
}

TEST_P(Vmap, TreesOfArgumentsAndResults) {
  // A pair argument batched in its first leaf only; a pair result whose second leaf does not
  // depend on the batch (out axis none).
  auto f = [](const std::pair<Tensor, Tensor>& ab) { return std::make_pair(ab.first * ab.second, fx::sum(ab.second)); };
  Array a = rand32({kB, 3}, 8), b = rand32({3}, 9);
  auto [prod, total] = jit([&](const Tensor& a, const Tensor& b) {
    return fx::vmap(f, {fx::BatchAxes{0, fx::none}}, {0, fx::none})(std::make_pair(a, b));
  })(a, b);
  ASSERT_EQ(prod.shape(), (Shape{kB, 3}));
  ASSERT_EQ(total.shape(), Shape{});
  std::vector<double> av = a.to_doubles(), bv = b.to_doubles(), pv = prod.to_doubles();
  for (size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(pv[i], av[i] * bv[i % 3], 1e-6);
  EXPECT_NEAR(total.item(), bv[0] + bv[1] + bv[2], 1e-6);
}

TEST_P(Vmap, NestedVmapBatchesTwoAxes) {
  auto f = [](const Tensor& a, const Tensor& b) { return fx::sin(a) * b + a; };
  Array a = rand32({kB}, 10), b = rand32({3}, 11);
  Array got = jit([&](const Tensor& a, const Tensor& b) {
    auto inner = fx::vmap(f, {fx::none, 0});      // over b
    return fx::vmap(inner, {0, fx::none})(a, b);  // over a
  })(a, b);
  ASSERT_EQ(got.shape(), (Shape{kB, 3}));
  std::vector<double> av = a.to_doubles(), bv = b.to_doubles(), gv = got.to_doubles();
  for (int64_t i = 0; i < kB; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_NEAR(gv[i * 3 + j], std::sin(av[i]) * bv[j] + av[i], 1e-5);
  }
}

TEST_P(Vmap, PerExampleGradientsEqualSingleGradients) {
  std::vector<Array> p = mlp_params();
  Array x = rand32({kB, 1, 3}, 12), y = rand32({kB, 1, 2}, 13);
  std::vector<Array> got = jit([](const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
    return fx::vmap(fx::grad(mlp_loss), {fx::none, 0, 0})(p, x, y);
  })(p, x, y);
  auto single =
      jit([](const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) { return fx::grad(mlp_loss)(p, x, y); });
  ASSERT_EQ(got.size(), 3u);
  for (int64_t e = 0; e < kB; ++e) {
    std::vector<Array> want = single(p, example(x, e), example(y, e));
    for (size_t k = 0; k < 3; ++k) expect_same(example(got[k], e), want[k], "gradient " + std::to_string(k));
  }
}

TEST_P(Vmap, GradientOfAVmappedLossSumsTheExamples) {
  std::vector<Array> p = mlp_params();
  Array x = rand32({kB, 1, 3}, 14), y = rand32({kB, 1, 2}, 15);
  auto batched_loss = [](const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
    return fx::sum(fx::vmap(mlp_loss, {fx::none, 0, 0})(p, x, y));
  };
  std::vector<Array> got = jit([&](const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
    return fx::grad(batched_loss)(p, x, y);
  })(p, x, y);
  std::vector<Array> per_example = jit([](const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
    return fx::vmap(fx::grad(mlp_loss), {fx::none, 0, 0})(p, x, y);
  })(p, x, y);
  std::vector<Array> sums = jit([](const std::vector<Tensor>& g) {
    std::vector<Tensor> s;
    for (const Tensor& t : g) s.push_back(fx::sum(t, {0}));
    return s;
  })(per_example);
  for (size_t k = 0; k < 3; ++k) expect_same(got[k], sums[k], "gradient " + std::to_string(k));
}

TEST_P(Vmap, JvpOfAVmappedFunctionIsTheVmapOfItsJvp) {
  auto f = [](const Tensor& x) { return fx::exp(fx::sin(x)) * x; };
  Array x = rand32({kB, 3}, 16), t = rand32({kB, 3}, 17);
  auto [y, dy] =
      jit([&](const Tensor& x, const Tensor& t) { return fx::jvp(fx::vmap(f), std::make_tuple(x), {t}); })(x, t);
  Array per = jit([&](const Tensor& x, const Tensor& t) {
    return fx::vmap([&](const Tensor& xe, const Tensor& te) { return fx::jvp(f, std::make_tuple(xe), {te}).second; })(
        x, t);
  })(x, t);
  expect_same(dy, per, "tangents");
}

TEST_P(Vmap, LoopsAndBranchesRunPerExample) {
  // A fori_loop, a scan over per-step inputs, a while loop whose trip count differs per example
  // and a cond whose branch does: each example as if alone.
  auto f = [](const Tensor& x, const Tensor& xs) {
    Tensor a = fx::fori_loop(
        0, 3, [](const Tensor&, const Tensor& c) { return c * 0.5f + 1.0f; }, x);
    auto [c, ys] = fx::scan([](const Tensor& c, const Tensor& s) { return std::make_pair(c + s, c * s); }, a, xs);
    Tensor w = fx::while_loop([](const Tensor& v) { return fx::sum(v) < 20.0f; },
                              [](const Tensor& v) { return v * 1.7f + 0.5f; }, c, 100);
    Tensor r = fx::cond(
        fx::sum(x) > 0.0f, [&] { return w + fx::sum(ys, {0}); }, [&] { return -w; });
    return r;
  };
  Array x = rand32({kB, 2}, 18, -1, 2), xs = rand32({kB, 5, 2}, 19, 0, 1);
  Array got = jit([&](const Tensor& x, const Tensor& xs) { return fx::vmap(f)(x, xs); })(x, xs);
  auto single = jit(f);
  for (int64_t e = 0; e < kB; ++e) {
    expect_same(example(got, e), single(example(x, e), example(xs, e)), "example " + std::to_string(e));
  }
}

TEST_P(Vmap, BatchedKeysGiveEachExampleItsStreamAndASharedKeyTheSame) {
  auto draw = [](const Tensor& key) {
    return fx::random::uniform(key, {3}) + fx::random::normal(fx::random::fold_in(key, 7), {3});
  };
  Array keys = make(DType::i32, {1, 2, 3, 4, 5, 6, 7, 8}, {kB, 2});
  Array got = jit([&](const Tensor& k) { return fx::vmap(draw)(k); })(keys);
  auto single = jit(draw);
  for (int64_t e = 0; e < kB; ++e) expect_same(example(got, e), single(example(keys, e)), "key " + std::to_string(e));
  Array shared = jit([&](const Tensor& key, const Tensor& x) {
    return fx::vmap([](const Tensor& key, const Tensor& x) { return fx::random::uniform(key, {3}) + x; },
                    {fx::none, 0})(key, x);
  })(example(keys, 0), make(DType::f32, {0, 0, 0, 0}, {kB}));
  for (int64_t e = 1; e < kB; ++e) EXPECT_EQ(example(shared, e).to_doubles(), example(shared, 0).to_doubles());
}

TEST(VmapErrors, NameWhatIsWrongAndTheCallersLine) {
  Array a(fx::f32, {3, 2}), b(fx::f32, {4, 2});
  auto call = [](auto f, const Array& x, const Array& y) { fx::jit(f, Backend::Interp)(x, y); };
  auto add = [](const Tensor& x, const Tensor& y) { return x + y; };
  expect_error_containing([&] { call([&](const Tensor& x, const Tensor& y) { return fx::vmap(add)(x, y); }, a, b); },
                          "the batch sizes differ");
  expect_error_containing(
      [&] {
        call([&](const Tensor& x, const Tensor& y) { return fx::vmap(add, {0, 2})(x, y); }, a, a);
      },
      "axis 2");
  expect_error_containing(
      [&] { call([&](const Tensor& x, const Tensor& y) { return fx::vmap(add, {fx::none})(x, y); }, a, a); },
      "no argument is batched");
  expect_error_containing(
      [&] { call([&](const Tensor& x, const Tensor& y) { return fx::vmap(add, {0}, fx::none)(x, y); }, a, a); },
      "out_axes is none for result 0, but it depends on the batched arguments");
  expect_error_containing(
      [&] { call([&](const Tensor& x, const Tensor& y) { return fx::vmap(add, {0}, 3)(x, y); }, a, a); }, "axis 3");
  expect_error_containing(
      [&] {
        call([&](const Tensor& x, const Tensor& y) { return fx::vmap(add, {0, 0, 0})(x, y); }, a, a);
      },
      "in_axes has 3 entries for a function of 2 argument(s)");
  expect_error_containing([&] { call([&](const Tensor& x, const Tensor& y) { return fx::vmap(add)(x, y); }, a, b); },
                          "vmap_test.cpp");
}

// ---- Jacobians.

class Jacobians : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Jacobians);

namespace {
// R^[2,3] -> R^[4]: a small network with a shared weight.
Tensor network(const Tensor& x, const Tensor& w) {
  return fx::tanh(fx::matmul(w, fx::reshape(x, {6}))) * fx::sum(x * x);
}

}  // namespace

TEST_P(Jacobians, JacrevAndJacfwdAgreeWithEachOtherAndFiniteDifferences) {
  FLUXION_REQUIRE_F64(backend());
  Array x = uniform64({2, 3}, -1, 1, 20), w = uniform64({4, 6}, -1, 1, 21);
  auto [rev, fwd] = jit([](const Tensor& x, const Tensor& w) {
    return std::make_pair(fx::jacrev(network)(x, w), fx::jacfwd(network)(x, w));
  })(x, w);
  ASSERT_EQ(rev.shape(), (Shape{4, 2, 3}));
  ASSERT_EQ(fwd.shape(), (Shape{4, 2, 3}));
  EXPECT_ARRAY(rev, DType::f64, {4, 2, 3}, fwd.to_doubles(), Tol{.transcendental = true, .terms = 8});
  auto f = fx::jit(network, Backend::Interp);
  std::vector<double> xv = x.to_doubles(), rv = rev.to_doubles();
  for (size_t j = 0; j < xv.size(); ++j) {
    double h = fd_step(xv[j]);
    std::vector<double> up = xv, down = xv;
    up[j] += h;
    down[j] -= h;
    std::vector<double> fu = f(make(DType::f64, up, {2, 3}), w).to_doubles(),
                        fdn = f(make(DType::f64, down, {2, 3}), w).to_doubles();
    for (size_t i = 0; i < 4; ++i) {
      double fd = difference(fu[i], fdn[i], 2 * h);
      EXPECT_NEAR(rv[i * 6 + j], fd, gradient_tolerance(fd, fu[i])) << "d y" << i << " / d x" << j;
    }
  }
}

TEST_P(Jacobians, HessianIsSymmetricAndMatchesDifferencesOfTheGradient) {
  FLUXION_REQUIRE_F64(backend());
  auto f = [](const Tensor& x) { return fx::sum(fx::sin(x) * fx::exp(x * 0.5)) * fx::sum(x * x); };
  Array x = uniform64({4}, -1, 1, 22);
  Array h = jit([&](const Tensor& x) { return fx::hessian(f)(x); })(x);
  ASSERT_EQ(h.shape(), (Shape{4, 4}));
  auto g = fx::jit([&](const Tensor& x) { return fx::grad(f)(x)[0]; }, Backend::Interp);
  std::vector<double> xv = x.to_doubles(), hv = h.to_doubles();
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = 0; j < 4; ++j)
      EXPECT_NEAR(hv[i * 4 + j], hv[j * 4 + i], 1e-12 * std::max(1.0, std::abs(hv[i * 4 + j])));
  }
  for (size_t j = 0; j < 4; ++j) {
    double step = fd_step(xv[j]);
    std::vector<double> up = xv, down = xv;
    up[j] += step;
    down[j] -= step;
    std::vector<double> gu = g(make(DType::f64, up, {4})).to_doubles(),
                        gd = g(make(DType::f64, down, {4})).to_doubles();
    for (size_t i = 0; i < 4; ++i) {
      double fd = difference(gu[i], gd[i], 2 * step);
      EXPECT_NEAR(hv[i * 4 + j], fd, gradient_tolerance(fd, gu[i])) << "d2f / dx" << i << " dx" << j;
    }
  }
}
