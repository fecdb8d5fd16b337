#include "common/classifier.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>

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
  bool scaled = !state.loss_scale.empty();
  double skipped_before = scaled ? state.loss_scale[2].item() : 0;
  auto mean = [&] {
    for (const fx::Array& a : pending) {
      double loss = a.item();
      if (scaled && !std::isfinite(loss)) continue;
      sum += loss;
      ++steps;
    }
    pending.clear();
    return steps > 0 ? sum / static_cast<double>(steps) : 0.0;
  };
  for (int64_t i = 0; i < loader.size(); ++i) {
    auto [x, y] = loader.batch(i);
    pending.push_back(trainer.step(state, x, y));
    examples += x.shape()[0] * ranks;
    if (bar.due()) bar.update(i + 1, examples, mean());
  }
  EpochResult r{mean(), 0, 0};  // waits for the last step
  r.seconds = bar.seconds();
  if (scaled) r.skipped = static_cast<int64_t>(state.loss_scale[2].item() - skipped_before);
  bar.finish(examples, r.train_loss);
  return r;
}

std::string loss_scale_text(const EpochResult& r, const nn::TrainState& state) {
  if (state.loss_scale.empty()) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, ", loss scale %g, %lld steps skipped", state.loss_scale[0].item(),
                static_cast<long long>(r.skipped));
  return buf;
}

nn::Schedule make_schedule(const TrainingOptions& opt, int64_t steps_per_epoch) {
  int64_t every = std::max<int64_t>(steps_per_epoch, 1), total = std::max<int64_t>(opt.epochs * every, 1);
  if (opt.schedule == "step") return nn::Schedule::step(every, 0.5);
  if (opt.schedule == "exp") return nn::Schedule::exponential(std::pow(0.5, 1.0 / static_cast<double>(every)));
  if (opt.schedule == "cosine") return nn::Schedule::warmup_cosine((total + 10) / 20, total);  // round(0.05 T)
  if (opt.schedule == "constant") return {};
  throw std::invalid_argument("--schedule " + opt.schedule + ": expected constant, step, cosine or exp");
}

nn::Optimizer make_optimizer(const TrainingOptions& opt, int64_t steps_per_epoch) {
  if (opt.clip < 0) throw std::invalid_argument("--clip " + std::to_string(opt.clip) + ": expected >= 0");
  nn::Schedule schedule = make_schedule(opt, steps_per_epoch);
  nn::Optimizer base = [&] {
    if (opt.optimizer == "adam")
      return nn::adam({.lr = opt.lr, .weight_decay = opt.weight_decay, .schedule = schedule});
    if (opt.optimizer == "adamw")
      return nn::adamw({.lr = opt.lr, .weight_decay = opt.weight_decay, .schedule = schedule});
    if (opt.optimizer == "sgd")
      return nn::sgd({.lr = opt.lr, .momentum = opt.momentum, .weight_decay = opt.weight_decay, .schedule = schedule});
    throw std::invalid_argument("--optimizer " + opt.optimizer + ": expected adam, adamw or sgd");
  }();
  if (opt.clip == 0) return base;
  return {"clip+" + opt.optimizer, nn::chain({nn::clip_by_global_norm(opt.clip), base.transformation()})};
}

fx::data::Dataset load_fashion_mnist(const std::string& split) {
  try {
    return fx::data::fashion_mnist(split);
  } catch (const fx::Error& e) {
    std::string dir = fx::data::fashion_mnist_dir(), stem = dir + "/" + (split == "test" ? "t10k" : split);
    if (std::filesystem::exists(stem + "-images-idx3-ubyte.gz") &&
        std::filesystem::exists(stem + "-labels-idx1-ubyte.gz"))
      throw;
    throw std::runtime_error(std::string(e.what()) +
                             " (Fashion-MNIST comes in Debian's package dataset-fashion-mnist, which puts its four "
                             "files in /usr/share/datasets/fashion-mnist: sudo apt-get install dataset-fashion-mnist; "
                             "or set FLUXION_FASHION_MNIST to a directory that holds them)");
  }
}

namespace {

struct TestResult {
  double loss = 0, accuracy = 0;
};

TestResult evaluate(const nn::Trainer& trainer, const nn::TrainState& state, const fx::data::Dataset& test) {
  constexpr int64_t kBatch = 1000;  // 10 calls of one shape for the 10,000 test images
  fx::data::Loader loader(test, {.batch_size = kBatch, .shuffle = false});
  double loss = 0, correct = 0;
  for (int64_t i = 0; i < loader.size(); ++i) {
    auto [x, y] = loader.batch(i);
    auto [l, c] = trainer.evaluate(state, x, y);
    loss += l.item();
    correct += c.item();
  }
  double n = static_cast<double>(test.size());
  return {loss / n, correct / n};
}

}  // namespace

int train_classifier(const std::string& program, const TrainingOptions& opt, const nn::Model& model) {
  Job job = join_job();
  if (opt.threads > 0) fx::set_num_threads(static_cast<int>(opt.threads));
  fx::Backend backend = opt.backend_kind();
  fx::data::Dataset train = load_fashion_mnist("train"), test = load_fashion_mnist("test");
  if (opt.limit > 0 && opt.limit < train.size()) train = fx::data::subset(train, 0, opt.limit);
  fx::data::Loader loader(train, {.batch_size = opt.batch_size,
                                  .shuffle = true,
                                  .seed = static_cast<uint64_t>(opt.seed),
                                  .rank = job.rank,
                                  .ranks = job.size});
  nn::Optimizer optimizer = make_optimizer(opt, loader.size());
  nn::Trainer trainer(
      model, [](const fx::Tensor& out, const fx::Tensor& y) { return nn::softmax_cross_entropy(out, y); }, optimizer,
      backend, {.data_parallel = job.size > 1, .precision = nn::MixedPrecision::named(opt.precision)});
  nn::TrainState state = trainer.init(static_cast<uint64_t>(opt.seed));
  RunCheckpoints checkpoints(program, opt, model, optimizer, train.size(), {"test accuracy", true}, job.leader());
  int64_t first = checkpoints.start(state);
  std::printf("%s on %s in %s, %s, schedule %s, %lld training examples, batch %lld, seed %lld\n%s", program.c_str(),
              fx::backend_name(backend), opt.precision.c_str(), optimizer.describe().c_str(), opt.schedule.c_str(),
              static_cast<long long>(train.size()), static_cast<long long>(opt.batch_size),
              static_cast<long long>(opt.seed), model.summary().c_str());
  if (job.size > 1)
    std::printf("data-parallel on %d ranks, %lld examples each per step\n", job.size,
                static_cast<long long>(opt.batch_size / job.size));
  std::string csv = opt.csv.empty() ? program + "_curves.csv" : opt.csv;
  std::string svg = opt.svg.empty() ? program + "_curves.svg" : opt.svg;
  std::vector<EpochRecord> curves = checkpoints.resumed_curves(csv);
  TestResult result{};
  for (int64_t epoch = first; epoch <= checkpoints.last_epoch(); ++epoch) {
    EpochResult trained = train_epoch(trainer, state, loader, epoch, job.size);
    double train_loss = trained.train_loss, seconds = trained.seconds;
    if (!job.leader()) continue;  // the ranks hold the same parameters: rank 0 evaluates and reports
    result = evaluate(trainer, state, test);
    std::printf("epoch %lld/%lld  train loss %.4f  test loss %.4f  test accuracy %.4f  %.2f s (%.0f examples/s)%s\n",
                static_cast<long long>(epoch), static_cast<long long>(opt.epochs), train_loss, result.loss,
                result.accuracy, seconds, static_cast<double>(train.size()) / seconds,
                loss_scale_text(trained, state).c_str());
    curves.push_back({static_cast<int>(epoch), train_loss, result.loss, result.accuracy, seconds});
    write_csv(csv, curves);
    write_svg(svg, program + " on Fashion-MNIST (" + fx::backend_name(backend) + ")", curves);
    checkpoints.end_epoch(epoch, result.accuracy, state);
  }
  if (!job.leader()) return 0;
  if (first > checkpoints.last_epoch()) result = evaluate(trainer, state, test);
  checkpoints.finish(state);
  std::printf("curves: %s, %s\nfinal test accuracy: %.4f\n", csv.c_str(), svg.c_str(), result.accuracy);
  return 0;
}

namespace {

constexpr const char* kEpoch = "sample.epoch";

std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

RunCheckpoints::RunCheckpoints(std::string program, const TrainingOptions& opt, nn::Model model,
                               nn::Optimizer optimizer, int64_t examples, Metric metric, bool writer)
    : program_(std::move(program)),
      opt_(opt),
      model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      examples_(examples),
      metric_(std::move(metric)),
      writer_(writer) {
  if (opt.stop_after < 0)
    throw std::invalid_argument("--stop-after " + std::to_string(opt.stop_after) + ": expected >= 0");
  if (!opt.load.empty() && !opt.resume.empty()) throw std::invalid_argument("--load and --resume: give one of them");
}

int64_t RunCheckpoints::last_epoch() const {
  return opt_.stop_after > 0 ? std::min(opt_.stop_after, opt_.epochs) : opt_.epochs;
}

int64_t RunCheckpoints::start(nn::TrainState& state) {
  if (!opt_.load.empty()) {
    nn::load_checkpoint(opt_.load, model_, optimizer_, state);
    // A loaded run starts over with this run's schedule (the checkpoint holds its own run's
    // numbers: warm-up and total steps of its epochs).
    for (const nn::Hyperparameter& h : optimizer_.hyperparameters())
      if (h.name.starts_with("lr.")) optimizer_.set_hyperparameter(state.opt_state, h.name, h.value);
    std::printf("loaded %s\n", opt_.load.c_str());
  }
  if (opt_.resume.empty()) return 1;
  std::map<std::string, std::string> meta;
  fx::load_safetensors(opt_.resume, &meta);
  if (!meta.contains(kEpoch))
    throw std::runtime_error("--resume " + opt_.resume +
                             ": no epoch in its metadata (not written by --checkpoint or --save; --load reads it)");
  // What fixes the data order, and what the run was told: the same, or the run differs.
  std::map<std::string, std::string> order{{"sample.seed", std::to_string(opt_.seed)},
                                           {"sample.examples", std::to_string(examples_)},
                                           {"sample.batch_size", std::to_string(opt_.batch_size)}};
  for (const auto& [key, value] : order) {
    if (meta[key] != value)
      throw std::runtime_error("--resume " + opt_.resume + ": written by a run with " + key.substr(7) + " " +
                               meta[key] + ", this run has " + value +
                               " (another data order: --load starts over with it)");
  }
  std::string flags = opt_.schedule + " over " + std::to_string(opt_.epochs) + " epochs";
  if (meta["sample.schedule"] != flags)
    std::fprintf(stderr,
                 "%s: warning: --resume %s: its run's schedule was %s, this run's is %s (the run goes on with "
                 "its schedule)\n",
                 program_.c_str(), opt_.resume.c_str(), meta["sample.schedule"].c_str(), flags.c_str());
  if (meta["optimizer"] != optimizer_.describe())
    std::fprintf(stderr,
                 "%s: warning: --resume %s: its optimizer was %s, these flags make %s (its hyperparameters are used)\n",
                 program_.c_str(), opt_.resume.c_str(), meta["optimizer"].c_str(), optimizer_.describe().c_str());
  nn::load_checkpoint(opt_.resume, model_, optimizer_, state);
  epoch_ = std::stoll(meta[kEpoch]);
  best_epoch_ = std::stoll(meta["sample.best_epoch"]);
  best_ = std::stod(meta["sample.best"]);
  std::printf("resumed %s after epoch %lld (best %s %.4f, epoch %lld)\n", opt_.resume.c_str(),
              static_cast<long long>(epoch_), metric_.name.c_str(), best_, static_cast<long long>(best_epoch_));
  return epoch_ + 1;
}

std::vector<EpochRecord> RunCheckpoints::resumed_curves(const std::string& csv) const {
  std::vector<EpochRecord> rows;
  if (opt_.resume.empty()) return rows;
  for (const EpochRecord& r : read_csv(csv))
    if (r.epoch <= epoch_) rows.push_back(r);
  return rows;
}

void RunCheckpoints::end_epoch(int64_t epoch, double score, const nn::TrainState& state) {
  epoch_ = epoch;
  bool best = std::isnan(best_) || (metric_.higher_is_better ? score > best_ : score < best_);
  if (best) best_ = score, best_epoch_ = epoch;
  std::string path = opt_.checkpoint_path(program_);
  if (path.empty()) return;
  std::vector<std::string> paths{path};
  if (best) paths.push_back(opt_.best_checkpoint_path(program_));
  write(paths, state);
}

void RunCheckpoints::finish(const nn::TrainState& state) {
  if (!opt_.save.empty()) {
    write({opt_.save}, state);
    std::printf("saved %s\n", opt_.save.c_str());
  }
  if (epoch_ < opt_.epochs && opt_.stop_after > 0) {
    std::string path = opt_.save.empty() ? opt_.checkpoint_path(program_) : opt_.save;
    std::printf("stopped after epoch %lld of %lld: continue with --resume %s\n", static_cast<long long>(epoch_),
                static_cast<long long>(opt_.epochs),
                path.empty() ? "(no checkpoint: --checkpoint none)" : path.c_str());
  }
}

// The library writes the training state; its file is read back and written again with the
// run's metadata added, atomically each time, so every path holds a complete checkpoint.
void RunCheckpoints::write(const std::vector<std::string>& paths, const nn::TrainState& state) const {
  if (!writer_) return;
  std::string part = paths[0] + ".part." + std::to_string(::getpid());
  std::map<std::string, std::string> meta;
  fx::NamedArrays tensors;
  try {
    nn::save_checkpoint(part, model_, optimizer_, state);
    tensors = fx::load_safetensors(part, &meta);
  } catch (...) {
    std::filesystem::remove(part);
    throw;
  }
  std::filesystem::remove(part);
  meta[kEpoch] = std::to_string(epoch_);
  meta["sample.seed"] = std::to_string(opt_.seed);
  meta["sample.examples"] = std::to_string(examples_);
  meta["sample.batch_size"] = std::to_string(opt_.batch_size);
  meta["sample.schedule"] = opt_.schedule + " over " + std::to_string(opt_.epochs) + " epochs";
  meta["sample.metric"] = metric_.name;
  meta["sample.best"] = exact(best_);
  meta["sample.best_epoch"] = std::to_string(best_epoch_);
  for (const std::string& p : paths) fx::save_safetensors(p, tensors, meta);
}

}  // namespace samples
