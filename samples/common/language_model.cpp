#include "common/language_model.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "common/curves.h"

namespace samples {

namespace fx = fluxion;
namespace nn = fluxion::nn;

TextData load_text_data(const std::string& path, int64_t seq_len, int64_t limit) {
  fx::data::CharText text = [&] {
    try {
      return fx::data::CharText::load(path);
    } catch (const fx::Error& e) {
      if (path != kDefaultText || std::filesystem::exists(path)) throw;
      throw std::runtime_error(std::string(e.what()) +
                               " (the default text comes in Debian's package base-files; or pass --text FILE)");
    }
  }();
  fx::data::Dataset all = text.sequences(seq_len);
  int64_t n_valid = std::max<int64_t>(1, all.size() / 10);
  fx::data::Dataset train = fx::data::subset(all, 0, all.size() - n_valid);
  fx::data::Dataset valid = fx::data::subset(all, all.size() - n_valid, all.size());
  if (limit > 0 && limit < train.size()) train = fx::data::subset(train, 0, limit);
  return {std::move(text), std::move(train), std::move(valid)};
}

double validation_loss(const nn::Trainer& trainer, const nn::TrainState& state, const fx::data::Dataset& valid,
                       int64_t batch) {
  fx::data::Loader loader(valid, {.batch_size = batch, .shuffle = false});
  double total = 0;
  int64_t rows = 0;
  for (int64_t i = 0; i < loader.size(); ++i) {
    auto [x, y] = loader.batch(i);
    total += trainer.evaluate(state, x, y).first.item();  // the batch's mean per character times its rows
    rows += x.shape()[0];
  }
  return total / static_cast<double>(std::max<int64_t>(rows, 1));
}

double train_language_model(const std::string& program, const TrainingOptions& opt, const std::string& text_path,
                            const nn::Trainer& trainer, nn::TrainState& state, fx::data::Loader& loader,
                            const fx::data::Dataset& valid, RunCheckpoints& checkpoints, int64_t first) {
  std::string csv = opt.csv.empty() ? program + "_curves.csv" : opt.csv;
  std::string svg = opt.svg.empty() ? program + "_curves.svg" : opt.svg;
  std::vector<EpochRecord> curves = checkpoints.resumed_curves(csv);
  std::string title = program + " on " + std::filesystem::path(text_path).filename().string();
  double valid_loss = std::nan("");
  for (int64_t epoch = first; epoch <= checkpoints.last_epoch(); ++epoch) {
    EpochResult trained = train_epoch(trainer, state, loader, epoch);
    double train_loss = trained.train_loss, seconds = trained.seconds;
    valid_loss = validation_loss(trainer, state, valid, opt.batch_size);
    std::printf("epoch %lld/%lld  train loss %.4f  validation loss %.4f (%.3f bits/char)  %.2f s%s\n",
                static_cast<long long>(epoch), static_cast<long long>(opt.epochs), train_loss, valid_loss,
                valid_loss / std::log(2.0), seconds, loss_scale_text(trained, state).c_str());
    curves.push_back({static_cast<int>(epoch), train_loss, valid_loss, -1, seconds});
    write_csv(csv, curves);
    write_svg(svg, title, curves);
    checkpoints.end_epoch(epoch, valid_loss, state);
  }
  checkpoints.finish(state);
  if (std::isnan(valid_loss))  // no epoch left to train
    valid_loss = curves.empty() ? validation_loss(trainer, state, valid, opt.batch_size) : curves.back().test_loss;
  return valid_loss;
}

}  // namespace samples
