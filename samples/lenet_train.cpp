// Trains LeNet-5 (the W4 model) on Fashion-MNIST: two 5x5 convolutions with ReLU and 2x2 max
// pooling, then dense layers 256 -> 120 -> 84 -> 10.
#include "common/classifier.h"
#include "common/models.h"

int main(int argc, char** argv) {
  try {
    samples::TrainingOptions opt;
    opt.lr = 2e-3;  // Adam; 0.876 test accuracy after 5 epochs (docs/samples.md)
    double dropout = 0;
    samples::Cli cli("lenet_train", "LeNet-5 on Fashion-MNIST.");
    cli.add_training(&opt);
    cli.add("--dropout", &dropout, "probability of Dropout before the last dense layer (0: no Dropout layer)");
    cli.parse(argc, argv);
    return samples::train_classifier(cli.program(), opt, samples::lenet_model(dropout));
  } catch (const std::exception& e) {
    return samples::report_error("lenet_train", e);
  }
}
