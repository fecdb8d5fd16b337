#include "common/classifier.h"

#include <cstdio>
#include <cstdlib>

#include "common/curves.h"
#include "common/job.h"
#include "common/progress.h"

namespace samples {

namespace fx = fluxion;
namespace nn = fluxion::nn;

EpochResult train_epoch(const nn::Trainer& trainer, nn::TrainState& state, fx::data::Loader& loader, int64_t epoch,
                        int ranks) {
  loader.set_epoch(epoch);
  ProgressBar bar("epoch " + std::to_string(epoch), loader.size());
  std::vector<fx::Array> pending;
  double sum = 0;
  int64_t steps = 0, examples = 0;
  auto mean = [&] {
    for (const fx::Array& a : pending) sum += a.item();
    steps += static_cast<int64_t>(pending.size());
    pending.clear();
    return steps > 0 ? sum / static_cast<double>(steps) : 0.0;
  };
  for (int64_t i = 0; i < loader.size(); ++i) {
    auto [x, y] = loader.batch(i);
    pending.push_back(trainer.step(state, x, y));
    examples += x.shape()[0] * ranks;
    if (bar.due()) bar.update(i + 1, examples, mean());
  }
  EpochResult r{mean(), 0};  // waits for the last step
  r.seconds = bar.seconds();
  bar.finish(examples, r.train_loss);
  return r;
}

nn::Optimizer make_optimizer(const TrainingOptions& opt) {
  if (opt.optimizer == "adam") return nn::adam({.lr = opt.lr, .weight_decay = opt.weight_decay});
  if (opt.optimizer == "adamw") return nn::adamw({.lr = opt.lr, .weight_decay = opt.weight_decay});
  if (opt.optimizer == "sgd") return nn::sgd({.lr = opt.lr, .momentum = opt.momentum, .weight_decay = opt.weight_decay});
  std::fprintf(stderr, "error: --optimizer %s: expected adam, adamw or sgd\n", opt.optimizer.c_str());
  std::exit(2);
}

namespace {

struct TestResult {
  double loss = 0, accuracy = 0;
};

TestResult evaluate(const nn::Trainer& trainer, const std::vector<fx::Array>& params, const fx::data::Dataset& test) {
  constexpr int64_t kBatch = 1000;  // 10 calls of one shape for the 10,000 test images
  fx::data::Loader loader(test, {.batch_size = kBatch, .shuffle = false});
  double loss = 0, correct = 0;
  for (int64_t i = 0; i < loader.size(); ++i) {
    auto [x, y] = loader.batch(i);
    auto [l, c] = trainer.evaluate(params, x, y);
    loss += l.item();
    correct += c.item();
  }
  double n = static_cast<double>(test.size());
  return {loss / n, correct / n};
}

}  // namespace

int train_classifier(const std::string& program, const TrainingOptions& opt, const nn::Model& model,
                     const nn::Optimizer& optimizer) {
  try {
    Job job = join_job();
    if (opt.threads > 0) fx::set_num_threads(static_cast<int>(opt.threads));
    fx::Backend backend = opt.backend_kind();
    fx::data::Dataset train = fx::data::fashion_mnist("train"), test = fx::data::fashion_mnist("test");
    if (opt.limit > 0 && opt.limit < train.size()) train = fx::data::subset(train, 0, opt.limit);
    nn::Trainer trainer(model,
                        [](const fx::Tensor& out, const fx::Tensor& y) { return nn::softmax_cross_entropy(out, y); },
                        optimizer, backend, {.data_parallel = job.size > 1});
    nn::TrainState state = trainer.init(static_cast<uint64_t>(opt.seed));
    if (!opt.load.empty()) {
      nn::load_checkpoint(opt.load, model, optimizer, state);
      std::printf("loaded %s\n", opt.load.c_str());
    }
    std::printf("%s on %s, %s, %lld training examples, batch %lld, seed %lld\n%s", program.c_str(),
                fx::backend_name(backend), optimizer.describe().c_str(), static_cast<long long>(train.size()),
                static_cast<long long>(opt.batch_size), static_cast<long long>(opt.seed), model.summary().c_str());
    if (job.size > 1)
      std::printf("data-parallel on %d ranks, %lld examples each per step\n", job.size,
                  static_cast<long long>(opt.batch_size / job.size));
    fx::data::Loader loader(train, {.batch_size = opt.batch_size,
                                    .shuffle = true,
                                    .seed = static_cast<uint64_t>(opt.seed),
                                    .rank = job.rank,
                                    .ranks = job.size});
    std::string csv = opt.csv.empty() ? program + "_curves.csv" : opt.csv;
    std::string svg = opt.svg.empty() ? program + "_curves.svg" : opt.svg;
    std::vector<EpochRecord> curves;
    TestResult result{};
    for (int64_t epoch = 1; epoch <= opt.epochs; ++epoch) {
      auto [train_loss, seconds] = train_epoch(trainer, state, loader, epoch, job.size);
      if (!job.leader()) continue;  // the ranks hold the same parameters: rank 0 evaluates and reports
      result = evaluate(trainer, state.params, test);
      std::printf("epoch %lld/%lld  train loss %.4f  test loss %.4f  test accuracy %.4f  %.2f s (%.0f examples/s)\n",
                  static_cast<long long>(epoch), static_cast<long long>(opt.epochs), train_loss, result.loss,
                  result.accuracy, seconds, static_cast<double>(train.size()) / seconds);
      curves.push_back({static_cast<int>(epoch), train_loss, result.loss, result.accuracy, seconds});
      write_csv(csv, curves);
      write_svg(svg, program + " on Fashion-MNIST (" + fx::backend_name(backend) + ")", curves);
    }
    if (!job.leader()) return 0;
    if (opt.epochs < 1) result = evaluate(trainer, state.params, test);
    if (!opt.save.empty()) {
      nn::save_checkpoint(opt.save, model, optimizer, state);
      std::printf("saved %s\n", opt.save.c_str());
    }
    std::printf("curves: %s, %s\nfinal test accuracy: %.4f\n", csv.c_str(), svg.c_str(), result.accuracy);
    return 0;
  } catch (const fx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace samples
