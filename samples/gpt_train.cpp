// A character-level GPT: a small causal Transformer learns to predict the next character of a
// text file (by default the GPL-3 text every Debian system has, as char_rnn), with nanoGPT's
// AdamW, a warm-up and cosine decay of the learning rate, gradient clipping, dropout and a
// checkpoint every epoch; then it writes new text, every character drawn on the backend in one
// compiled call (a scan over a sliding window of the last `context` characters).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/gpt.h"
#include "common/language_model.h"

namespace fx = fluxion;
namespace nn = fluxion::nn;
using fx::Tensor;

int main(int argc, char** argv) try {
  samples::TrainingOptions opt;
  opt.epochs = 30;
  opt.batch_size = 16;
  opt.lr = 2e-3;
  opt.optimizer = "adamw";
  opt.weight_decay = 0.1;
  opt.schedule = "cosine";
  opt.clip = 1.0;
  samples::GptOptions g;
  g.context = 64;  // the GPL's 35,000 characters give ~490 training windows of 64
  std::string text_path = samples::kDefaultText, prime = "The ";
  int64_t sample_length = 400;
  double temperature = 0.7;
  samples::Cli cli("gpt_train", "A character-level GPT (causal Transformer) that writes text after training.");
  cli.add_training(&opt);
  cli.add("--text", &text_path, "the text file to learn");
  cli.add("--context", &g.context, "characters per training sequence (the attention window)");
  cli.add("--embed", &g.embed, "model width");
  cli.add("--heads", &g.heads, "attention heads per block");
  cli.add("--layers", &g.layers, "Transformer blocks");
  cli.add("--dropout", &g.dropout,
          "dropout after the embeddings, inside and after each block, on the attention weights");
  cli.add("--sample-length", &sample_length, "characters to generate after training");
  cli.add("--temperature", &temperature, "sampling temperature (lower: more conservative)");
  cli.add("--prime", &prime, "text that starts the generated sample");
  cli.parse(argc, argv);
  if (opt.threads > 0) fx::set_num_threads(static_cast<int>(opt.threads));
  fx::Backend backend = opt.backend_kind();
  samples::TextData data = samples::load_text_data(text_path, g.context, opt.limit);
  const fx::data::CharText& text = data.text;
  g.vocab = text.vocab_size();
  nn::Model model = samples::gpt_model(g);

  fx::data::Loader loader(data.train,
                          {.batch_size = opt.batch_size, .shuffle = true, .seed = static_cast<uint64_t>(opt.seed)});
  // nanoGPT's AdamW (betas 0.9 and 0.95, no decay of biases and norms) unless another is asked for.
  nn::Optimizer optimizer =
      opt.optimizer == "adamw"
          ? samples::gpt_optimizer(opt.lr, opt.weight_decay, opt.clip, samples::make_schedule(opt, loader.size()))
          : samples::make_optimizer(opt, loader.size());
  auto loss = [](const Tensor& logits, const Tensor& next) { return nn::softmax_cross_entropy(logits, next); };
  nn::Trainer trainer(model, loss, optimizer, backend, {.precision = nn::MixedPrecision::named(opt.precision)});
  nn::TrainState state = trainer.init(static_cast<uint64_t>(opt.seed));
  samples::RunCheckpoints checkpoints("gpt_train", opt, model, optimizer, data.train.size(), {"validation loss", false},
                                      true);
  int64_t first = checkpoints.start(state);
  std::printf(
      "gpt_train on %s in %s: %lld characters of %s, vocabulary %lld, %lld training sequences of %lld, schedule "
      "%s\n%s%s\n",
      fx::backend_name(backend), opt.precision.c_str(), static_cast<long long>(text.length()), text_path.c_str(),
      static_cast<long long>(g.vocab), static_cast<long long>(data.train.size()), static_cast<long long>(g.context),
      opt.schedule.c_str(), model.summary().c_str(), optimizer.describe().c_str());
  double final_loss = samples::train_language_model("gpt_train", opt, text_path, trainer, state, loader, data.valid,
                                                    checkpoints, first);

  // Generation: a window of the last `context` characters (spaces, then the prime) slides one
  // character per step; each step draws from the last position's softmax (Gumbel-max).
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
              Tensor token = fx::argmax(next - fx::log(-fx::log(u)), -1);
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
  std::printf("final validation loss: %.4f (%.3f bits/char)\n", final_loss, final_loss / std::log(2.0));
  return 0;
} catch (const std::exception& e) {
  return samples::report_error("gpt_train", e);
}
