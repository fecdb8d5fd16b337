// Trains the W3 model (784 -> hidden -> 10, tanh) on Fashion-MNIST with softmax cross-entropy.
// Every training step is one compiled call: forward, backward and the optimizer's update.
#include "common/classifier.h"
#include "common/models.h"

int main(int argc, char** argv) {
  samples::TrainingOptions opt;
  int64_t hidden = 32;
  samples::Cli cli("mlp_train", "A 784-hidden-10 tanh MLP on Fashion-MNIST.");
  cli.add_training(&opt);
  cli.add("--hidden", &hidden, "hidden layer width");
  cli.parse(argc, argv);
  return samples::train_classifier(cli.program(), opt, samples::mlp_model(hidden), samples::make_optimizer(opt));
}
