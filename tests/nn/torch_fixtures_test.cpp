// The layers against libtorch: values, gradients and updated state on fixed inputs, recorded by
// bench/layer_fixtures.cpp (make layer-fixtures) into nn/fixtures/layers.safetensors, with
// PyTorch's parameter names; every backend, in f64. The gradients are also checked against
// finite differences (on the interpreter's instance, which shares them with every backend).
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

namespace {

struct Fixture {
  std::map<std::string, Array> tensors;
  std::map<std::string, std::string> metadata;
  const Array& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw std::runtime_error("the fixture has no '" + name + "'");
    return it->second;
  }
  std::vector<std::string> names(const std::string& c) const {
    std::vector<std::string> out;
    std::stringstream s(metadata.at(c + ".names"));
    for (std::string n; std::getline(s, n, ',');) out.push_back(n);
    return out;
  }
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture f;
    for (auto& [name, a] : fx::load_safetensors(FLUXION_LAYER_FIXTURES, &f.metadata)) f.tensors.emplace(name, a);
    return f;
  }();
  return f;
}

using Forward = std::function<nn::Applied(const nn::Model&, const std::vector<Tensor>& p, const std::vector<Tensor>& s,
                                          const Tensor& x)>;

nn::Applied plain(const nn::Model& m, const std::vector<Tensor>& p, const std::vector<Tensor>& s, const Tensor& x) {
  return m.apply(p, s, x, {});
}

}  // namespace

class TorchFixtures : public BackendTest {
 protected:
  // Case `c` of the fixture with `model`: its parameter names are PyTorch's, and y, the
  // gradients of sum(y * weights) and the updated state (state_before -> state) match.
  void check(const std::string& c, const nn::Model& model, bool training = false, Forward forward = plain) {
    FLUXION_REQUIRE_F64(backend());
    SCOPED_TRACE(c);
    const Fixture& f = fixture();
    std::vector<std::string> names = model.param_names();
    ASSERT_EQ(names, f.names(c)) << "parameter names differ from torch's named_parameters()";
    std::vector<Array> params;
    for (const std::string& n : names) params.push_back(f.at(c + ".param." += n));
    std::vector<Array> state;
    for (const std::string& n : model.state_names()) state.push_back(f.at(c + ".state_before." += n));
    Array x = f.at(c + ".x"), w = f.at(c + ".weights");
    bool float_input = fx::is_float(x.dtype());
    auto loss = [&](const std::vector<Tensor>& p, const std::vector<Tensor>& s, const Tensor& xin, const Tensor& wt) {
      Tensor key = fx::random::key(7);
      auto objective = [&](const std::vector<Tensor>& q, const Tensor& xx) {
        nn::Applied a = training ? model.apply(q, s, xx, {.training = true, .key = key}) : forward(model, q, s, xx);
        return std::make_pair(fx::sum(a.output * wt), std::make_pair(a.output, a.state));
      };
      std::vector<int> wrt{0};
      if (float_input) wrt.push_back(1);
      auto [value, aux, grads] = fx::value_and_grad(objective, wrt, {.has_aux = true})(p, xin);
      return std::make_tuple(aux.first, grads, aux.second);
    };
    auto [y, grads, new_state] = jit(loss)(params, state, x, w);
    auto expect_close = [](const Array& got, const Array& want, const std::string& what) {
      ASSERT_EQ(got.shape(), want.shape()) << what;
      std::vector<double> g = got.to_doubles(), t = want.to_doubles();
      for (size_t i = 0; i < g.size(); ++i)
        EXPECT_NEAR(g[i], t[i], 1e-9 * std::max(1.0, std::abs(t[i]))) << what << " " << i;
    };
    expect_close(y, f.at(c + ".y"), "output");
    for (size_t i = 0; i < names.size(); ++i) expect_close(grads[i], f.at(c + ".grad." + names[i]), "d/d " + names[i]);
    if (float_input) expect_close(grads.back(), f.at(c + ".grad.x"), "d/d x");
    std::vector<std::string> state_names = model.state_names();
    for (size_t i = 0; i < state_names.size(); ++i)
      expect_close(new_state[i], f.at(c + ".state." + state_names[i]), "state " + state_names[i]);
    // And the fixture's gradients against finite differences of the same function, once: every
    // backend's gradients match the fixture's above, and the differences (interpreter runs,
    // two per parameter element) are the same whichever backend is under test.
    if (backend() == fx::Backend::Interp && (!training || state.empty())) {
      fluxion::testing::expect_param_gradients(
          backend(),
          [model, forward, state_t = state, w](const std::vector<Tensor>& p, const Tensor& xx) {
            std::vector<Tensor> s;
            for (const Array& a : state_t) s.push_back(fx::constant(a));
            return fx::sum(forward(model, p, s, xx).output * fx::constant(w));
          },
          params, x);
    }
  }
};
FLUXION_INSTANTIATE_BACKENDS(TorchFixtures);

TEST_P(TorchFixtures, Activations) {
  check("gelu", nn::Model(nn::GELU()));
  check("gelu_tanh", nn::Model(nn::GELU(true)));
  check("silu", nn::Model(nn::SiLU()));
}

TEST_P(TorchFixtures, LayerNorm) { check("layer_norm", nn::Model(nn::LayerNorm({4, 6}))); }

TEST_P(TorchFixtures, BatchNormTrainingUpdatesTheRunningStatistics) {
  check("batch_norm1d", nn::Model(nn::BatchNorm1d(5, {.momentum = 0.2})), true);
  check("batch_norm2d", nn::Model(nn::BatchNorm2d(3)), true);
}

TEST_P(TorchFixtures, BatchNormEvaluationUsesTheRunningStatistics) {
  FLUXION_REQUIRE_F64(backend());
  const Fixture& f = fixture();
  nn::Model bn(nn::BatchNorm1d(5, {.momentum = 0.2}));
  std::vector<Array> params{f.at("batch_norm1d.param.weight"), f.at("batch_norm1d.param.bias")};
  std::vector<Array> state{f.at("batch_norm1d.state.running_mean"), f.at("batch_norm1d.state.running_var")};
  Array y = jit([bn](const std::vector<Tensor>& p, const std::vector<Tensor>& s, const Tensor& x) {
    return bn.apply(p, s, x, {}).output;
  })(params, state, f.at("batch_norm1d.eval.x"));
  EXPECT_ARRAY(y, {4, 5, 3}, f.at("batch_norm1d.eval.y").to_doubles(), {.magnitude = 10});
}

TEST_P(TorchFixtures, Embedding) { check("embedding", nn::Model(nn::Embedding(10, 4))); }

TEST_P(TorchFixtures, MultiHeadAttentionWithCausalAndPaddingMasks) {
  check("mha_causal", nn::Model(nn::MultiHeadAttention(8, 2, {.causal = true})));
  Array padding = fixture().at("mha_padding.key_padding");
  nn::MultiHeadAttention mha(8, 2);
  check("mha_padding", nn::Model(mha), false,
        [mha, padding](const nn::Model&, const std::vector<Tensor>& p, const std::vector<Tensor>& s, const Tensor& x) {
          nn::Context ctx;
          return nn::Applied{mha.attend(p, x, x, x, {.key_padding = fx::constant(padding)}, ctx), s};
        });
}

TEST_P(TorchFixtures, PreNormCausalTransformerBlock) {
  check("transformer_block",
        nn::Model(nn::TransformerBlock(8, 2, {.feedforward = 16, .dropout = 0, .gelu = true, .causal = true})));
}

TEST_P(TorchFixtures, PreNormDecoderBlockWithCrossAttention) {
  Array memory = fixture().at("transformer_decoder_block.memory");
  nn::TransformerDecoderBlock block(8, 2, {.feedforward = 16, .dropout = 0, .gelu = true, .causal = true});
  check("transformer_decoder_block", nn::Model(block), false,
        [block, memory](const nn::Model&, const std::vector<Tensor>& p, const std::vector<Tensor>& s, const Tensor& x) {
          nn::Context ctx;
          return nn::Applied{block.decode(p, x, fx::constant(memory), ctx), s};
        });
}
