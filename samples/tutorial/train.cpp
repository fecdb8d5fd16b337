// train.cpp: an MLP on Fashion-MNIST with a hand-written training step, checkpoints, a choice of
// backend and an exported classifier. Usage: train [cpu|vulkan] [epochs] [checkpoint to resume from]
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fluxion/nn.h>

namespace fx = fluxion;
namespace nn = fluxion::nn;

int main(int argc, char** argv) {
  try {
    fx::Backend backend = fx::Backend::Cpu;
    if (argc > 1 && std::string(argv[1]) == "vulkan") backend = fx::Backend::Vulkan;
    const int64_t epochs = argc > 2 ? std::stoll(argv[2]) : 5;

    nn::Model model = nn::Sequential{nn::Flatten(), nn::Dense(784, 128), nn::ReLU(), nn::Dense(128, 10)};
    nn::Optimizer opt = nn::adam({.lr = 1e-3});
    nn::TrainState state;
    state.params = model.init(/*seed=*/0);     // 1.weight [128, 784], 1.bias [128], 3.weight [10, 128], 3.bias [10]
    state.opt_state = opt.init(state.params);  // Adam's step count and moments, zeros
    state.model_state = model.init_state();    // batch norm's running statistics: none here
    std::printf("%s", model.summary().c_str());

    auto step_fn = [model, opt](const std::vector<fx::Tensor>& p, const std::vector<fx::Tensor>& s, const fx::Tensor& x,
                                const fx::Tensor& y) {
      auto objective = [&](const std::vector<fx::Tensor>& q) { return nn::softmax_cross_entropy(model(q, x), y); };
      auto [loss, grads] = fx::value_and_grad(objective)(p);  // grads: one Tensor per parameter
      auto [p2, s2] = opt.update(p, grads, s);                // Adam's update, traced into the same program
      return std::make_tuple(loss, p2, s2);
    };
    auto train_step = fx::jit(step_fn, backend);
    auto correct = fx::jit([model](const std::vector<fx::Tensor>& p, const fx::Tensor& x,
                                   const fx::Tensor& y) { return nn::correct_count(model(p, x), y); },
                           backend);

    const std::string path = "mlp.safetensors";
    if (argc > 3) nn::load_checkpoint(argv[3], model, opt, state);  // checks every name, shape and dtype first

    fx::data::Dataset train = fx::data::fashion_mnist("train");  // f32 [60000, 1, 28, 28], i32 [60000]
    fx::data::Dataset test = fx::data::fashion_mnist("test");
    fx::data::Loader loader(train, {.batch_size = 128, .shuffle = true, .seed = 0, .drop_last = true});
    fx::data::Loader test_loader(test, {.batch_size = 1000, .shuffle = false});

    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      loader.set_epoch(epoch);  // this epoch's order: the same on every run and platform
      std::vector<fx::Array> losses;
      for (int64_t i = 0; i < loader.size(); ++i) {
        auto [x, y] = loader.batch(i);
        auto [loss, params, opt_state] = train_step(state.params, state.opt_state, x, y);
        state.params = std::move(params);
        state.opt_state = std::move(opt_state);
        losses.push_back(loss);  // read once per epoch: on Vulkan, a read copies from the device
      }
      double sum = 0;
      for (const fx::Array& l : losses) sum += l.item();

      int64_t right = 0;
      for (int64_t i = 0; i < test_loader.size(); ++i) {
        auto [x, y] = test_loader.batch(i);
        right += static_cast<int64_t>(correct(state.params, x, y).item());
      }
      std::printf("epoch %lld: train loss %.4f, test accuracy %.4f\n", static_cast<long long>(epoch),
                  sum / static_cast<double>(losses.size()),
                  static_cast<double>(right) / static_cast<double>(test.size()));
      nn::save_checkpoint(path, model, opt, state);  // atomic: an interrupted save keeps the old file
    }

    std::vector<fx::Array> params = nn::load_parameters(path, model);
    auto predict = fx::jit(
        [model](const std::vector<fx::Tensor>& p, const fx::Tensor& x) { return fx::argmax(model(p, x), /*axis=*/-1); },
        backend);
    auto [x, y] = test_loader.batch(0);
    fx::Array labels = predict(params, x);  // i32 [1000]
    std::printf("first prediction: %s\n", fx::data::fashion_mnist_classes()[labels.to_vector<int32_t>()[0]].c_str());

    // The classifier for 1000 images, for an application that links only fluxion::runtime:
    // the parameters stay inputs, named as in the checkpoint, so the application reads them there.
    std::vector<std::string> input_names = model.param_names();
    input_names.push_back("images");
    predict.lower(params, x).save("mlp_predict.fxa", {.input_names = input_names, .output_names = {"labels"}});
    return 0;
  } catch (const std::exception& e) {  // fx::Error says what went wrong; std::stoll a bad number
    std::fprintf(stderr, "train: error: %s\n", e.what());
    return 1;
  }
}
