// grad<I...> and value_and_grad<I...>: gradients shaped like the arguments they are taken with
// respect to (JAX's argnums), against finite differences and against the flat form.
#include "autodiff/gradcheck.h"
#include "common/test_names.h"

class ShapedGrads : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(ShapedGrads);

namespace {
// Parameters as a tree: a weight and a list of {bias, scale}.
using Params = std::pair<Tensor, std::vector<Tensor>>;
using ParamArrays = std::pair<Array, std::vector<Array>>;

Tensor loss(const Params& p, const Tensor& x) {
  Tensor h = fx::tanh(fx::matmul(p.first, x) + p.second[0]);
  return fx::sum(h * h) * p.second[1];
}

ParamArrays params64() {
  return {uniform64({2, 3}, -1, 1, 11), {uniform64({2, 1}, -1, 1, 12), uniform64({}, 0.5, 1.5, 13)}};
}

std::vector<Array> leaves(const ParamArrays& p) { return {p.first, p.second[0], p.second[1]}; }
}  // namespace

TEST_P(ShapedGrads, GradientOfATreeIsThatTreeAndMatchesFiniteDifferences) {
  FLUXION_REQUIRE_F64(backend());
  ParamArrays p = params64();
  Array x = uniform64({3, 1}, -1, 1, 14);
  auto [value, g] = jit(fx::value_and_grad<0>(loss))(p, x);
  static_assert(std::is_same_v<decltype(g), ParamArrays>, "the gradient has the parameters' type");
  ASSERT_EQ(g.second.size(), 2u);
  auto plain = fx::jit(loss, Backend::Interp);
  double f0 = plain(p, x).item();
  EXPECT_NEAR(value.item(), f0, 1e-12 * std::max(1.0, std::abs(f0)));
  auto eval = [&](const std::vector<Array>& v) { return plain(ParamArrays{v[0], {v[1], v[2]}}, x).item(); };
  expect_gradients_near_fd(leaves(g), leaves(p), f0, eval, "parameter");
}

TEST_P(ShapedGrads, SeveralIndicesGiveATupleOfTreesInTheFlatFormsOrder) {
  Array w = make(DType::f32, random_doubles(6, -1, 1, 21), {2, 3}),
        x = make(DType::f32, random_doubles(3, -1, 1, 22), {3, 1});
  std::vector<Array> bs{make(DType::f32, random_doubles(2, -1, 1, 23), {2, 1}), Array::scalar(0.75f)};
  auto f = [](const Tensor& w, const Tensor& x, const std::vector<Tensor>& bs) { return loss(Params{w, bs}, x); };
  auto shaped = jit(fx::grad<0, 2>(f))(w, x, bs);
  auto flat = jit(fx::grad(f, {0, 2}))(w, x, bs);
  auto& [gw, gbs] = shaped;
  static_assert(std::is_same_v<std::decay_t<decltype(gbs)>, std::vector<Array>>);
  ASSERT_EQ(flat.size(), 3u);
  ASSERT_EQ(gbs.size(), 2u);
  EXPECT_EQ(gw.shape(), w.shape());
  EXPECT_EQ(gw.to_doubles(), flat[0].to_doubles());
  EXPECT_EQ(gbs[0].to_doubles(), flat[1].to_doubles());
  EXPECT_EQ(gbs[1].to_doubles(), flat[2].to_doubles());
  // One index of a plain Tensor argument: a Tensor, not a list of one.
  Array gx = jit(fx::grad<1>(f))(w, x, bs);
  Array gx_flat = jit(fx::grad(f, {1}))(w, x, bs)[0];
  EXPECT_EQ(gx.to_doubles(), gx_flat.to_doubles());
}

TEST_P(ShapedGrads, HasAuxReturnsTheAuxBesideTheShapedGradients) {
  ParamArrays p{make(DType::f32, random_doubles(6, -1, 1, 31), {2, 3}),
                {make(DType::f32, random_doubles(2, -1, 1, 32), {2, 1}), Array::scalar(1.25f)}};
  Array x = make(DType::f32, random_doubles(3, -1, 1, 33), {3, 1});
  auto with_aux = [](const Params& p, const Tensor& x) { return std::make_pair(loss(p, x), fx::matmul(p.first, x)); };
  auto [value, aux, g] = jit(fx::value_and_grad<0>(with_aux, {.has_aux = true}))(p, x);
  auto [g2, aux2] = jit(fx::grad<0>(with_aux, {.has_aux = true}))(p, x);
  auto flat = jit(fx::grad(loss))(p, x);
  ASSERT_EQ(flat.size(), 3u);
  EXPECT_EQ(g.first.to_doubles(), flat[0].to_doubles());
  EXPECT_EQ(g.second[1].to_doubles(), flat[2].to_doubles());
  EXPECT_EQ(g2.second[0].to_doubles(), flat[1].to_doubles());
  EXPECT_EQ(aux.to_doubles(), aux2.to_doubles());
  EXPECT_EQ(aux.shape(), (Shape{2, 1}));
  EXPECT_NEAR(value.item(), fx::jit(loss, Backend::Interp)(p, x).item(), 1e-5);
}
