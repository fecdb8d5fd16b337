// Trains LeNet-5 (the W4 model) on Fashion-MNIST: two 5x5 convolutions with ReLU and 2x2 max
// pooling, then dense layers 256 -> 120 -> 84 -> 10.
#include "common/classifier.h"

namespace nn = fluxion::nn;

int main(int argc, char** argv) {
  samples::TrainingOptions opt;
  samples::Cli cli("lenet_train", "LeNet-5 on Fashion-MNIST.");
  cli.add_training(&opt);
  cli.parse(argc, argv);
  nn::Model model = nn::Sequential{nn::Conv2d(1, 6, 5),    nn::ReLU(),          nn::MaxPool2d(2),
                                   nn::Conv2d(6, 16, 5),   nn::ReLU(),          nn::MaxPool2d(2),
                                   nn::Flatten(),          nn::Dense(256, 120), nn::ReLU(),
                                   nn::Dense(120, 84),     nn::ReLU(),          nn::Dense(84, 10)};
  return samples::train_classifier(cli.program(), opt, model, samples::make_optimizer(opt));
}
