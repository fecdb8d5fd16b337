// Trains the W3 model (784 -> hidden -> 10, tanh) on Fashion-MNIST with softmax cross-entropy.
// Every training step is one compiled call: forward, backward and the optimizer's update.
#include "common/classifier.h"
#include "common/models.h"

int main(int argc, char** argv) {
  try {
    samples::TrainingOptions opt;
    int64_t hidden = 32;
    double dropout = 0;
    samples::Cli cli("mlp_train", "A 784-hidden-10 tanh MLP on Fashion-MNIST.");
    cli.add_training(&opt);
    cli.add("--hidden", &hidden, "hidden layer width");
    cli.add("--dropout", &dropout, "probability of Dropout after the hidden tanh (0: no Dropout layer)");
    cli.parse(argc, argv);
    return samples::train_classifier(cli.program(), opt, samples::mlp_model(hidden, dropout));
  } catch (const std::exception& e) {
    return samples::report_error("mlp_train", e);
  }
}
