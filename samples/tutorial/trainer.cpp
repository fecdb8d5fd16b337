// trainer.cpp: train.cpp's MLP trained by nn::Trainer, which also counts the steps, so a resumed
// run goes on from the epoch it stopped after. Usage: trainer [epochs] [checkpoint to resume from]
#include <cstdio>
#include <string>

#include <fluxion/nn.h>

namespace fx = fluxion;
namespace nn = fluxion::nn;

int main(int argc, char** argv) {
  try {
    const int64_t epochs = argc > 1 ? std::stoll(argv[1]) : 5;
    fx::Backend backend = fx::default_backend();
    nn::Model model = nn::Sequential{nn::Flatten(), nn::Dense(784, 128), nn::ReLU(), nn::Dense(128, 10)};
    fx::data::Loader loader(fx::data::fashion_mnist("train"),
                            {.batch_size = 128, .shuffle = true, .seed = 0, .drop_last = true});
    fx::data::Dataset test = fx::data::fashion_mnist("test");

    nn::Trainer trainer(
        model, [](const fx::Tensor& out, const fx::Tensor& y) { return nn::softmax_cross_entropy(out, y); },
        nn::adam({.lr = 1e-3}), backend);
    nn::TrainState state = trainer.init(/*seed=*/0);  // parameters, optimizer and model state, step 0, random key
    if (argc > 2) nn::load_checkpoint(argv[2], model, trainer.optimizer(), state);  // and its step count
    for (int64_t epoch = static_cast<int64_t>(state.step.item()) / loader.size(); epoch < epochs; ++epoch) {
      loader.set_epoch(epoch);
      fx::Array loss;
      for (int64_t i = 0; i < loader.size(); ++i) {
        auto [x, y] = loader.batch(i);
        loss = trainer.step(state, x, y);  // forward, backward and Adam: one compiled call
      }
      auto [summed_loss, right] = trainer.evaluate(state, test.inputs, test.targets);
      std::printf("epoch %lld: last batch's loss %.4f, test accuracy %.4f\n", static_cast<long long>(epoch),
                  loss.item(), right.item() / static_cast<double>(test.size()));
      nn::save_checkpoint("mlp_trainer.safetensors", model, trainer.optimizer(), state);
    }
    std::printf("%lld steps taken\n", static_cast<long long>(state.step.item()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainer: error: %s\n", e.what());
    return 1;
  }
}
