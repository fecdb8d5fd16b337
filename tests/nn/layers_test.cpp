// The nn layers on every backend: parameter names and shapes, output shapes, values against
// formulas computed here, gradients against finite differences (f64), and bad input.
#include <gtest/gtest.h>

#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

class Layers : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Layers);

namespace {

// A nonlinear scalar of a layer's output, so that every output element's gradient matters.
Tensor score(const Tensor& y) { return fx::sum(fx::sin(y) + y * y * 0.5); }

void expect_layer_gradients(Backend backend, const nn::Model& model, const Array& x) {
  expect_param_gradients(
      backend, [model](const std::vector<Tensor>& p, const Tensor& in) { return score(model(p, in)); },
      to_f64(model.init(7)), x);
}

std::vector<std::string> names_and_shapes(const nn::Model& m) {
  std::vector<std::string> out;
  for (const nn::ParamSpec& s : m.param_specs()) out.push_back(s.name + " " + fx::shape_str(s.shape));
  return out;
}

}  // namespace

TEST_P(Layers, DenseComputesXWTransposePlusBias) {
  nn::Model dense = nn::Dense(3, 2);
  EXPECT_EQ(names_and_shapes(dense), (std::vector<std::string>{"weight [2,3]", "bias [2]"}));
  Array W = make(DType::f32, {1, 2, 3, -1, 0, 2}, {2, 3}), b = make(DType::f32, {0.5, -0.5}, {2});
  Array x = make(DType::f32, {1, 1, 1, 2, 0, -1}, {2, 3});
  Array y =
      jit([&](const std::vector<Tensor>& p, const Tensor& in) { return dense(p, in); })(std::vector<Array>{W, b}, x);
  EXPECT_TRUE(matches(y, {2, 2}, {6.5, 0.5, -0.5, -4.5}));
}

TEST_P(Layers, DenseGradients) {
  FLUXION_REQUIRE_F64(backend());
  expect_layer_gradients(backend(), nn::Dense(4, 3), uniform64({2, 4}, -1, 1, 1));
}

TEST_P(Layers, DenseAppliesToTheLastAxisOfAnyRank) {
  nn::Model dense = nn::Dense(4, 3, {.bias = false});
  EXPECT_EQ(names_and_shapes(dense), (std::vector<std::string>{"weight [3,4]"}));
  Array y = jit([&](const std::vector<Tensor>& p, const Tensor& in) { return dense(p, in); })(
      dense.init(0), Array(fx::f32, {2, 5, 4}));
  EXPECT_EQ(y.shape(), (fx::Shape{2, 5, 3}));
}

TEST_P(Layers, Conv2dWithStrideAndPaddingGradients) {
  FLUXION_REQUIRE_F64(backend());
  nn::Model conv = nn::Conv2d(2, 3, {3, 2}, {.stride = {2, 1}, .padding = {1, 0}});
  EXPECT_EQ(names_and_shapes(conv), (std::vector<std::string>{"weight [3,2,3,2]", "bias [3]"}));
  expect_layer_gradients(backend(), conv, uniform64({2, 2, 5, 4}, -1, 1, 2));
}

TEST_P(Layers, PoolingFlattenAndDenseChainGradients) {
  FLUXION_REQUIRE_F64(backend());
  nn::Model net = nn::Sequential{nn::Conv2d(1, 2, 3), nn::ReLU(),    nn::MaxPool2d(2), nn::AvgPool2d(2), nn::Flatten(),
                                 nn::Dense(8, 3),     nn::Sigmoid(), nn::Dense(3, 2),  nn::Softplus()};
  EXPECT_EQ(names_and_shapes(net), (std::vector<std::string>{"0.weight [2,1,3,3]", "0.bias [2]", "5.weight [3,8]",
                                                             "5.bias [3]", "7.weight [2,3]", "7.bias [2]"}));
  expect_layer_gradients(backend(), net, uniform64({2, 1, 10, 10}, -1, 1, 3));
}

TEST_P(Layers, EmbeddingLooksUpRowsAndItsGradientAccumulates) {
  FLUXION_REQUIRE_F64(backend());
  nn::Model emb = nn::Embedding(5, 3);
  Array ids = make(DType::i32, {4, 0, 4, 2}, {2, 2});
  std::vector<Array> p = emb.init(1);
  Array y = jit([&](const std::vector<Tensor>& q, const Tensor& in) { return emb(q, in); })(p, ids);
  ASSERT_EQ(y.shape(), (fx::Shape{2, 2, 3}));
  std::vector<double> table = p[0].to_doubles(), got = y.to_doubles();
  std::vector<int> rows{4, 0, 4, 2};
  for (size_t k = 0; k < 4; ++k)
    for (size_t j = 0; j < 3; ++j) EXPECT_EQ(got[k * 3 + j], table[static_cast<size_t>(rows[k]) * 3 + j]);
  // Row 4 is used twice: its gradient is the sum of both uses.
  expect_param_gradients(
      backend(), [emb](const std::vector<Tensor>& q, const Tensor& in) { return score(emb(q, in)); }, to_f64(p), ids);
}

TEST_P(Layers, LstmAndGruNamesAndShapesFollowPyTorch) {
  nn::Model lstm = nn::LSTM({.input = 3, .hidden = 4, .layers = 2});
  EXPECT_EQ(
      names_and_shapes(lstm),
      (std::vector<std::string>{"weight_ih_l0 [16,3]", "weight_hh_l0 [16,4]", "bias_ih_l0 [16]", "bias_hh_l0 [16]",
                                "weight_ih_l1 [16,4]", "weight_hh_l1 [16,4]", "bias_ih_l1 [16]", "bias_hh_l1 [16]"}));
  nn::Model gru = nn::GRU({.input = 3, .hidden = 4});
  EXPECT_EQ(names_and_shapes(gru), (std::vector<std::string>{"weight_ih_l0 [12,3]", "weight_hh_l0 [12,4]",
                                                             "bias_ih_l0 [12]", "bias_hh_l0 [12]"}));
  auto out_shape = [&](const nn::Model& m, fx::Shape in) {
    return jit([&](const std::vector<Tensor>& p, const Tensor& x) { return m(p, x); })(m.init(0), Array(fx::f32, in))
        .shape();
  };
  EXPECT_EQ(out_shape(lstm, {2, 5, 3}), (fx::Shape{2, 5, 4}));  // batch first
  EXPECT_EQ(out_shape(nn::LSTM({.input = 3, .hidden = 4, .batch_first = false}), {5, 2, 3}), (fx::Shape{5, 2, 4}));
  EXPECT_EQ(out_shape(nn::GRU({.input = 3, .hidden = 4, .last_only = true}), {2, 5, 3}), (fx::Shape{2, 4}));
}

TEST_P(Layers, LstmCellMatchesTheFormula) {
  // One step from a zero state computed here in double: c = i * g, h = o * tanh(c).
  nn::RecurrentCell cell = nn::LSTMCell(2, 1);
  nn::Model m = cell;
  std::vector<Array> p = m.init(3);
  Array x = make(DType::f32, {0.5, -1.0}, {1, 2});
  Array h = jit([&](const std::vector<Tensor>& q, const Tensor& in) { return m(q, in); })(p, x);
  std::vector<double> wi = p[0].to_doubles(), bi = p[2].to_doubles(), bh = p[3].to_doubles();
  auto gate = [&](int k) {
    return wi[static_cast<size_t>(k) * 2] * 0.5 - wi[static_cast<size_t>(k) * 2 + 1] + bi[static_cast<size_t>(k)] +
           bh[static_cast<size_t>(k)];
  };
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  double c = sig(gate(0)) * std::tanh(gate(2));
  EXPECT_NEAR(h.to_doubles()[0], sig(gate(3)) * std::tanh(c), 1e-5);
}

TEST_P(Layers, GruCellMatchesTheFormula) {
  nn::RecurrentCell cell = nn::GRUCell(1, 1);
  std::vector<Array> p = nn::Model(cell).init(4);
  Array x = make(DType::f32, {0.7}, {1, 1}), h0 = make(DType::f32, {-0.3}, {1, 1});
  Array h = jit([&](const std::vector<Tensor>& q, const Tensor& in, const Tensor& s) {
    return cell.step(q, in, {s})[0];
  })(p, x, h0);
  auto v = [&](int k) { return p[static_cast<size_t>(k)].to_doubles(); };
  auto sig = [](double a) { return 1 / (1 + std::exp(-a)); };
  double xi = 0.7, hp = -0.3;
  double r = sig(v(0)[0] * xi + v(2)[0] + v(1)[0] * hp + v(3)[0]);
  double z = sig(v(0)[1] * xi + v(2)[1] + v(1)[1] * hp + v(3)[1]);
  double n = std::tanh(v(0)[2] * xi + v(2)[2] + r * (v(1)[2] * hp + v(3)[2]));
  EXPECT_NEAR(h.to_doubles()[0], (1 - z) * n + z * hp, 1e-5);
}

TEST_P(Layers, TwoLayerLstmOverASequenceGradients) {
  FLUXION_REQUIRE_F64(backend());
  expect_layer_gradients(backend(), nn::LSTM({.input = 2, .hidden = 3, .layers = 2}), uniform64({2, 4, 2}, -1, 1, 5));
}

TEST_P(Layers, GruTimeFirstLastStepGradients) {
  FLUXION_REQUIRE_F64(backend());
  expect_layer_gradients(backend(), nn::GRU({.input = 2, .hidden = 3, .batch_first = false, .last_only = true}),
                         uniform64({4, 2, 2}, -1, 1, 6));
}

TEST_P(Layers, StepByStepEqualsTheSequence) {
  // Recurrent::step, as generation uses it, gives the outputs of run over the whole sequence.
  nn::Recurrent lstm = nn::LSTM({.input = 2, .hidden = 3, .layers = 2});
  std::vector<Array> p = nn::Model(lstm).init(2);
  Array xs = make(DType::f32, random_doubles(1 * 3 * 2, -1, 1, 9), {1, 3, 2});
  auto both = jit([&](const std::vector<Tensor>& q, const Tensor& x) {
    Tensor whole = lstm.run(q, x, lstm.zero_state(1)).first;  // [1, 3, 3]
    std::vector<Tensor> s = lstm.zero_state(1), steps;
    for (int64_t t = 0; t < 3; ++t) {
      auto [h, next] = lstm.step(q, fx::reshape(fx::slice_axis(x, 1, t, t + 1), {1, 2}), s);
      steps.push_back(h);
      s = next;
    }
    return std::make_pair(whole, fx::stack(steps, 1));
  })(p, xs);
  std::vector<double> a = both.first.to_doubles(), b = both.second.to_doubles();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6);
}

TEST(LayersErrors, BadInputsNameTheLayerAndTheShapes) {
  auto expect_error = [](const nn::Model& m, fx::Shape in, const std::string& part) {
    try {
      fx::jit([&](const std::vector<Tensor>& p, const Tensor& x) { return m(p, x); }, Backend::Interp)(
          m.init(0), Array(fx::f32, in));
      ADD_FAILURE() << "no error for " << fx::shape_str(in);
    } catch (const fx::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error(nn::Dense(4, 2), {3, 5}, "Dense(4 -> 2)");
  expect_error(nn::Conv2d(3, 2, 3), {1, 2, 8, 8}, "dimension 1 = 3");
  expect_error(nn::LSTM({.input = 3, .hidden = 2}), {2, 5}, "rank 3");
  expect_error(nn::Embedding(4, 2), {3}, "expected i32 indices");
  EXPECT_THROW(nn::Conv2d(3, 2, {3, 3}, {.groups = 2}), fx::Error);
  EXPECT_THROW(nn::LSTM({.input = 0, .hidden = 2}), fx::Error);
  // Parameters that do not match the model.
  nn::Model dense = nn::Dense(4, 2);
  EXPECT_THROW(fx::jit([&](const std::vector<Tensor>& p, const Tensor& x) { return dense(p, x); }, Backend::Interp)(
                   std::vector<Array>{Array(fx::f32, {2, 4})}, Array(fx::f32, {1, 4})),
               fx::Error);
}

TEST(LayersInit, SeededInitialisersAreReproducibleAndScaled) {
  nn::Model m = nn::Sequential{
      nn::Dense(400, 300, {.weight_init = nn::Initializer::glorot_uniform(), .bias_init = nn::Initializer::zeros()}),
      nn::Dense(300, 200, {.weight_init = nn::Initializer::he_normal()})};
  std::vector<Array> a = m.init(11), b = m.init(11), c = m.init(12);
  EXPECT_EQ(a[0].to_doubles(), b[0].to_doubles());
  EXPECT_NE(a[0].to_doubles(), c[0].to_doubles());
  double bound = std::sqrt(6.0 / 700), max_abs = 0, sum_sq = 0;
  for (double v : a[0].to_doubles()) max_abs = std::max(max_abs, std::abs(v));
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.95 * bound);
  for (double v : a[1].to_doubles()) EXPECT_EQ(v, 0.0);
  for (double v : a[2].to_doubles()) sum_sq += v * v;
  EXPECT_NEAR(std::sqrt(sum_sq / 60000), std::sqrt(2.0 / 300), 0.05 * std::sqrt(2.0 / 300));
  // The default (PyTorch's): uniform in +-1/sqrt(fan_in) for both weight and bias.
  std::vector<Array> d = nn::Model(nn::Dense(100, 50)).init(0);
  for (const Array& t : d)
    for (double v : t.to_doubles()) EXPECT_LE(std::abs(v), 0.1);
}

TEST(NamedParameters, ByNameAndByPrefixForParametersAndGradients) {
  nn::Model model(nn::Sequential{nn::Dense(3, 4), nn::ReLU(), nn::Dense(4, 2)});
  std::vector<std::string> names;
  for (const auto& [name, spec] : model.named_parameters()) names.push_back(name + fx::shape_str(spec.shape));
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight[4,3]", "0.bias[4]", "2.weight[2,4]", "2.bias[2]"}));
  std::vector<Array> params = model.init(0);
  nn::Named<Array> named(model, params);
  EXPECT_EQ(named["2.bias"].shape(), (fx::Shape{2}));
  named["2.bias"] = make(DType::f32, {7, 8}, {2});
  EXPECT_EQ(params[3].to_doubles(), (std::vector<double>{7, 8})) << "writes go to the list";
  EXPECT_EQ(named.with_prefix("2.").size(), 2u);
  expect_error_containing([&] { (void)named["1.weight"]; }, "the model has: 0.weight, 0.bias, 2.weight, 2.bias");
  // Gradients come in the parameters' layout, so the same view names them inside a trace.
  Array x = make(DType::f32, {1, 2, 3}, {1, 3});
  Array g = fx::jit(
      [model](std::vector<Tensor> p, const Tensor& x) {
        std::vector<Tensor> grads = fx::grad([&](const std::vector<Tensor>& q) { return fx::sum(model(q, x)); })(p);
        return nn::Named<Tensor>(model, grads)["2.bias"];
      },
      Backend::Interp)(params, x);
  EXPECT_EQ(g.to_doubles(), (std::vector<double>{1, 1}));
}
