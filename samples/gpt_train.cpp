// A character-level GPT: a small causal Transformer learns to predict the next character of a
// text file (by default the GPL-3 text every Debian system has, as char_rnn), with AdamW, a
// linear warm-up and cosine decay of the learning rate, gradient clipping, dropout and a
// checkpoint every epoch; then it writes new text, every character drawn on the backend in one
// compiled call (a scan over a sliding window of the last `context` characters).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/classifier.h"
#include "common/curves.h"
#include "common/gpt.h"

namespace fx = fluxion;
namespace nn = fluxion::nn;
using fx::Tensor;

namespace {

// The mean loss per character over the held-out sequences, in batches of the training size.
double validation_loss(const nn::Trainer& trainer, const nn::TrainState& state, const fx::data::Dataset& valid,
                       int64_t batch) {
  fx::data::Loader loader(valid, {.batch_size = batch, .shuffle = false});
  double total = 0;
  int64_t rows = 0;
  for (int64_t i = 0; i < loader.size(); ++i) {
    auto [x, y] = loader.batch(i);
    total += trainer.evaluate(state, x, y).first.item();
    rows += x.shape()[0];
  }
  return total / static_cast<double>(std::max<int64_t>(rows, 1));
}

}  // namespace

int main(int argc, char** argv) {
  samples::TrainingOptions opt;
  opt.epochs = 30;
  opt.batch_size = 16;
  opt.lr = 2e-3;
  opt.optimizer = "adamw";
  opt.weight_decay = 0.1;
  samples::GptOptions g;
  g.context = 64;  // the GPL's 35,000 characters give ~490 training windows of 64
  std::string text_path = "/usr/share/common-licenses/GPL-3", prime = "The ", checkpoint = "gpt_train.safetensors";
  int64_t sample_length = 400, warmup_percent = 5;
  double temperature = 0.7, clip = 1.0, dropout = 0.1;
  samples::Cli cli("gpt_train", "A character-level GPT (causal Transformer) that writes text after training.");
  cli.add_training(&opt);
  cli.add("--text", &text_path, "the text file to learn");
  cli.add("--context", &g.context, "characters per training sequence (the attention window)");
  cli.add("--embed", &g.embed, "model width");
  cli.add("--heads", &g.heads, "attention heads per block");
  cli.add("--layers", &g.layers, "Transformer blocks");
  cli.add("--dropout", &dropout, "dropout after the embeddings, inside and after each block, on the attention weights");
  cli.add("--clip", &clip, "gradients clipped to this global norm (0: no clipping)");
  cli.add("--warmup-percent", &warmup_percent,
          "learning-rate warm-up, in percent of all steps, before the cosine decay");
  cli.add("--checkpoint", &checkpoint, "written after every epoch (resume with --load)");
  cli.add("--sample-length", &sample_length, "characters to generate after training");
  cli.add("--temperature", &temperature, "sampling temperature (lower: more conservative)");
  cli.add("--prime", &prime, "text that starts the generated sample");
  cli.parse(argc, argv);
  try {
    if (opt.threads > 0) fx::set_num_threads(static_cast<int>(opt.threads));
    fx::Backend backend = opt.backend_kind();
    fx::data::CharText text = fx::data::CharText::load(text_path);
    fx::data::Dataset all = text.sequences(g.context);
    int64_t n_valid = std::max<int64_t>(1, all.size() / 10);  // the last tenth is held out, as char_rnn's
    fx::data::Dataset train = fx::data::subset(all, 0, all.size() - n_valid);
    fx::data::Dataset valid = fx::data::subset(all, all.size() - n_valid, all.size());
    if (opt.limit > 0 && opt.limit < train.size()) train = fx::data::subset(train, 0, opt.limit);
    g.vocab = text.vocab_size();
    g.dropout = dropout;
    nn::Model model = samples::gpt_model(g);

    fx::data::Loader loader(train,
                            {.batch_size = opt.batch_size, .shuffle = true, .seed = static_cast<uint64_t>(opt.seed)});
    int64_t total_steps = std::max<int64_t>(2, opt.epochs * loader.size());
    nn::Schedule schedule = nn::Schedule::warmup_cosine(total_steps * warmup_percent / 100, total_steps, 0.1);
    nn::Optimizer optimizer = samples::gpt_optimizer(opt.lr, opt.weight_decay, clip, schedule);
    auto loss = [](const Tensor& logits, const Tensor& next) { return nn::softmax_cross_entropy(logits, next); };
    nn::Trainer trainer(model, loss, optimizer, backend);
    nn::TrainState state = trainer.init(static_cast<uint64_t>(opt.seed));
    int64_t first_epoch = 1;
    if (!opt.load.empty()) {
      nn::load_checkpoint(opt.load, model, optimizer, state);
      first_epoch = static_cast<int64_t>(state.step.item()) / loader.size() + 1;
    }
    std::printf("gpt_train on %s: %lld characters of %s, vocabulary %lld, %lld training sequences of %lld\n%s%s\n",
                fx::backend_name(backend), static_cast<long long>(text.length()), text_path.c_str(),
                static_cast<long long>(g.vocab), static_cast<long long>(train.size()),
                static_cast<long long>(g.context), model.summary().c_str(), optimizer.describe().c_str());

    std::string csv = opt.csv.empty() ? "gpt_train_curves.csv" : opt.csv;
    std::string svg = opt.svg.empty() ? "gpt_train_curves.svg" : opt.svg;
    std::vector<samples::EpochRecord> curves;
    for (int64_t epoch = first_epoch; epoch <= opt.epochs; ++epoch) {
      auto [train_loss, seconds] = samples::train_epoch(trainer, state, loader, epoch);
      double valid_loss = validation_loss(trainer, state, valid, opt.batch_size);
      std::printf("epoch %lld/%lld  train loss %.4f  validation loss %.4f (%.3f bits/char)  %.2f s\n",
                  static_cast<long long>(epoch), static_cast<long long>(opt.epochs), train_loss, valid_loss,
                  valid_loss / std::log(2.0), seconds);
      curves.push_back({static_cast<int>(epoch), train_loss, valid_loss, -1, seconds});
      samples::write_csv(csv, curves);
      samples::write_svg(svg, "gpt_train on " + text_path, curves);
      if (!checkpoint.empty()) nn::save_checkpoint(checkpoint, model, optimizer, state);
    }
    if (!opt.save.empty()) nn::save_checkpoint(opt.save, model, optimizer, state);

    // Generation: a window of the last `context` characters (the text's start, then the prime)
    // slides one character per step; each step draws from the last position's softmax.
    int64_t T = g.context;
    uint64_t seed = static_cast<uint64_t>(opt.seed);
    auto generate = fx::jit(
        [&](const std::vector<Tensor>& p, const std::vector<Tensor>& s, const Tensor& window) {
          Tensor key = fx::random::key(seed);
          auto [last, tokens] = fx::scan(
              [&](const Tensor& w, const Tensor& i) {
                Tensor logits = model.apply(p, s, w, {}).output;  // [1, T, V]
                Tensor next = fx::reshape(fx::slice_axis(logits, 1, T - 1, T), {1, g.vocab}) / temperature;
                Tensor u = fx::random::uniform(fx::random::fold_in(key, i), {1, g.vocab}, fx::f32, 1e-7, 1.0);
                Tensor token = fx::argmax(next - fx::log(-fx::log(u)), -1);  // Gumbel-max: one draw
                return std::make_pair(fx::concat({fx::slice_axis(w, 1, 1, T), fx::reshape(token, {1, 1})}, 1), token);
              },
              window, fx::arange(sample_length));
          return fx::reshape(tokens, {sample_length});
        },
        backend);
    std::vector<int32_t> start = text.encode(prime.empty() ? std::string(1, text.vocab()[0]) : prime);
    std::vector<int32_t> window = text.encode(std::string(static_cast<size_t>(T), ' '));
    size_t n = std::min(start.size(), window.size());  // the prime's last characters end the window
    std::copy(start.end() - static_cast<std::ptrdiff_t>(n), start.end(), window.end() - static_cast<std::ptrdiff_t>(n));
    fx::Array out = generate(state.params, state.model_state, fx::Array(window, {1, T}));
    std::printf("\n--- sample (temperature %.2f) ---\n%s%s\n---\n", temperature, prime.c_str(),
                text.decode(out.to_vector<int32_t>()).c_str());
    std::printf("final validation loss: %.4f (%.3f bits/char)\n", curves.empty() ? 0.0 : curves.back().test_loss,
                curves.empty() ? 0.0 : curves.back().test_loss / std::log(2.0));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt_train: error: %s\n", e.what());
    return 1;
  }
}
