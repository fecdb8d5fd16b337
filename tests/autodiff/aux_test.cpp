// value_and_grad with auxiliary results (has_aux): the aux tree comes back with f's values,
// undifferentiated, and the gradients are those of the loss alone.
#include "autodiff/gradcheck.h"
#include "common/test_names.h"

class Aux : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Aux);

namespace {
// loss = sum(tanh(w x)); aux = (w x, [sum(x), max(w)]).
auto loss_with_aux(const Tensor& w, const Tensor& x) {
  Tensor y = fx::matmul(w, x);
  return std::make_pair(fx::sum(fx::tanh(y)), std::make_pair(y, std::vector<Tensor>{fx::sum(x), fx::max(w)}));
}
}  // namespace

TEST_P(Aux, AuxComesBackUndifferentiatedBesideTheGradients) {
  Array w = make(DType::f32, random_doubles(6, -1, 1, 1), {2, 3}),
        x = make(DType::f32, random_doubles(3, -1, 1, 2), {3, 1});
  auto [loss, aux, grads] = jit([](const Tensor& w, const Tensor& x) {
    return fx::value_and_grad(loss_with_aux, {0}, {.has_aux = true})(w, x);
  })(w, x);
  auto plain = fx::jit(
      [](const Tensor& w, const Tensor& x) {
        auto [l, a] = loss_with_aux(w, x);
        return std::make_tuple(l, a.first, a.second[0], a.second[1]);
      },
      Backend::Interp)(w, x);
  auto without_aux = jit([](const Tensor& w, const Tensor& x) {
    return fx::grad([](const Tensor& w, const Tensor& x) { return loss_with_aux(w, x).first; })(w, x);
  })(w, x);
  EXPECT_NEAR(loss.item(), std::get<0>(plain).item(), 1e-6);
  EXPECT_ARRAY(aux.first, {2, 1}, std::get<1>(plain).to_doubles(), {.transcendental = true, .terms = 3});
  EXPECT_NEAR(aux.second[0].item(), std::get<2>(plain).item(), 1e-6);
  EXPECT_NEAR(aux.second[1].item(), std::get<3>(plain).item(), 0);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].to_doubles(), without_aux[0].to_doubles());
  // grad with has_aux: {grads, aux}.
  auto [g2, aux2] =
      jit([](const Tensor& w, const Tensor& x) { return fx::grad(loss_with_aux, {0}, {.has_aux = true})(w, x); })(w, x);
  EXPECT_EQ(g2[0].to_doubles(), grads[0].to_doubles());
  EXPECT_EQ(aux2.first.to_doubles(), aux.first.to_doubles());
}

TEST_P(Aux, GradientsMatchFiniteDifferences) {
  FLUXION_REQUIRE_F64(backend());
  expect_gradients_match(
      backend(),
      [](Tensor w, Tensor x) {
        auto [loss, aux, grads] = fx::value_and_grad(loss_with_aux, {0, 1}, {.has_aux = true})(w, x);
        // An outer derivative goes through the loss, the aux and the inner gradients alike.
        return loss + fx::sum(fx::sin(aux.first)) * aux.second[1] + fx::sum(grads[0] * grads[0]);
      },
      uniform64({2, 3}, -1, 1, 3), uniform64({3, 1}, -1, 1, 4));
}

TEST(AuxErrors, HasAuxMustMatchWhatFReturns) {
  Array w(fx::f32, {2, 3}), x(fx::f32, {3, 1});
  expect_error_containing(
      [&] {
        fx::jit([](const Tensor& w, const Tensor& x) { return std::get<0>(fx::value_and_grad(loss_with_aux)(w, x)); },
                Backend::Interp)(w, x);
      },
      "pass {.has_aux = true}");
  expect_error_containing(
      [&] {
        fx::jit(
            [](const Tensor& w, const Tensor& x) {
              auto f = [](const Tensor& w, const Tensor& x) { return fx::sum(fx::matmul(w, x)); };
              return fx::value_and_grad(f, {0}, {.has_aux = true})(w, x).first;
            },
            Backend::Interp)(w, x);
      },
      "it returns one Tensor");
}
