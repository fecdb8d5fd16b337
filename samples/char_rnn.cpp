// A character-level LSTM language model: learns to predict the next character of a text file
// (by default the GPL-3 text every Debian system has), then writes new text. Sampling runs on
// the backend too: one compiled call generates every character (a scan whose steps draw from
// the softmax with Gumbel noise), with no round trip per character.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "common/classifier.h"
#include "common/curves.h"
#include "common/models.h"

namespace fx = fluxion;
namespace nn = fluxion::nn;
using fx::Tensor;

namespace {

// The text to learn; the default's missing file says where it comes from.
fx::data::CharText load_text(const std::string& path, const std::string& default_path) {
  try {
    return fx::data::CharText::load(path);
  } catch (const fx::Error& e) {
    if (path != default_path || std::filesystem::exists(path)) throw;
    throw std::runtime_error(std::string(e.what()) +
                             " (the default text comes in Debian's package base-files; or pass --text FILE)");
  }
}

}  // namespace

int main(int argc, char** argv) try {
  samples::TrainingOptions opt;
  opt.epochs = 20;
  opt.batch_size = 32;
  opt.lr = 3e-3;
  const std::string default_text = "/usr/share/common-licenses/GPL-3";
  std::string text_path = default_text, prime = "The ";
  int64_t hidden = 256, layers = 1, embed = 32, seq_len = 64, sample_length = 400;
  double temperature = 0.7;
  samples::Cli cli("char_rnn", "A character-level LSTM language model that writes text after training.");
  cli.add_training(&opt);
  cli.add("--text", &text_path, "the text file to learn");
  cli.add("--hidden", &hidden, "LSTM hidden size");
  cli.add("--layers", &layers, "stacked LSTM layers");
  cli.add("--embed", &embed, "character embedding size");
  cli.add("--seq-len", &seq_len, "characters per training sequence");
  cli.add("--sample-length", &sample_length, "characters to generate after training");
  cli.add("--temperature", &temperature, "sampling temperature (lower: more conservative)");
  cli.add("--prime", &prime, "text that starts the generated sample");
  cli.parse(argc, argv);
  if (opt.threads > 0) fx::set_num_threads(static_cast<int>(opt.threads));
  fx::Backend backend = opt.backend_kind();
  fx::data::CharText text = load_text(text_path, default_text);
  fx::data::Dataset all = text.sequences(seq_len);
  int64_t n_valid = std::max<int64_t>(1, all.size() / 10);  // the last tenth is held out
  fx::data::Dataset train = fx::data::subset(all, 0, all.size() - n_valid);
  fx::data::Dataset valid = fx::data::subset(all, all.size() - n_valid, all.size());
  if (opt.limit > 0 && opt.limit < train.size()) train = fx::data::subset(train, 0, opt.limit);
  int64_t V = text.vocab_size();

  samples::CharModel net(V, embed, hidden, layers);
  const nn::Model& model = net.model;
  const nn::Embedding& emb = net.embedding;
  const nn::Recurrent& lstm = net.lstm;
  const nn::Dense& head = net.head;
  fx::data::Loader loader(train,
                          {.batch_size = opt.batch_size, .shuffle = true, .seed = static_cast<uint64_t>(opt.seed)});
  nn::Optimizer optimizer = samples::make_optimizer(opt, loader.size());
  auto loss = [](const Tensor& logits, const Tensor& next) { return nn::softmax_cross_entropy(logits, next); };
  nn::Trainer trainer(model, loss, optimizer, backend);
  nn::TrainState state = trainer.init(static_cast<uint64_t>(opt.seed));
  samples::RunCheckpoints checkpoints("char_rnn", opt, model, optimizer, train.size(), {"validation loss", false},
                                      true);
  int64_t first = checkpoints.start(state);
  std::printf(
      "char_rnn on %s: %lld characters of %s, vocabulary %lld, %lld training sequences of %lld, %s, schedule %s\n%s",
      fx::backend_name(backend), static_cast<long long>(text.length()), text_path.c_str(), static_cast<long long>(V),
      static_cast<long long>(train.size()), static_cast<long long>(seq_len), optimizer.describe().c_str(),
      opt.schedule.c_str(), model.summary().c_str());

  std::string csv = opt.csv.empty() ? "char_rnn_curves.csv" : opt.csv;
  std::string svg = opt.svg.empty() ? "char_rnn_curves.svg" : opt.svg;
  std::vector<samples::EpochRecord> curves = checkpoints.resumed_curves(csv);
  auto validation_loss = [&] {
    return trainer.evaluate(state, valid.inputs, valid.targets).first.item() / static_cast<double>(valid.size());
  };
  for (int64_t epoch = first; epoch <= checkpoints.last_epoch(); ++epoch) {
    auto [train_loss, seconds] = samples::train_epoch(trainer, state, loader, epoch);
    double valid_loss = validation_loss();
    std::printf("epoch %lld/%lld  train loss %.4f  validation loss %.4f (%.3f bits/char)  %.2f s\n",
                static_cast<long long>(epoch), static_cast<long long>(opt.epochs), train_loss, valid_loss,
                valid_loss / std::log(2.0), seconds);
    curves.push_back({static_cast<int>(epoch), train_loss, valid_loss, -1, seconds});
    samples::write_csv(csv, curves);
    samples::write_svg(svg, "char_rnn on " + text_path, curves);
    checkpoints.end_epoch(epoch, valid_loss, state);
  }
  checkpoints.finish(state);

  // Generation: the prime warms the state up, then each step feeds back the drawn character.
  uint64_t seed = static_cast<uint64_t>(opt.seed);
  auto generate = fx::jit(
      [&](const std::vector<Tensor>& p, const Tensor& prime_tokens) {
        std::span<const Tensor> pe(p.data(), 1), pr(p.data() + 1, 4 * static_cast<size_t>(layers)),
            ph(p.data() + 1 + 4 * layers, 2);
        auto draw = [&](const Tensor& h, const Tensor& key) {
          Tensor logits = head.forward(ph, h) / temperature;  // [1, V]
          Tensor u = fx::random::uniform(key, {1, V}, fx::f32, 1e-7, 1.0);
          return fx::argmax(logits - fx::log(-fx::log(u)), -1);  // Gumbel-max: one draw from softmax
        };
        std::vector<Tensor> s = lstm.zero_state(1);
        Tensor h;
        for (int64_t i = 0; i < prime_tokens.dim(0); ++i) {
          auto [top, next] = lstm.step(pr, emb.forward(pe, fx::slice_axis(prime_tokens, 0, i, i + 1)), s);
          h = top;
          s = next;
        }
        Tensor key = fx::random::key(seed);
        using Carry = std::pair<std::vector<Tensor>, Tensor>;
        auto [last, tokens] = fx::scan(
            [&](const Carry& c, const Tensor& i) {
              Tensor token = draw(c.second, fx::random::fold_in(key, i));
              auto [top, next] = lstm.step(pr, emb.forward(pe, token), c.first);
              return std::make_pair(Carry{next, top}, token);
            },
            Carry{s, h}, fx::arange(sample_length));
        return fx::reshape(tokens, {sample_length});
      },
      backend);
  std::vector<int32_t> prime_ids = text.encode(prime.empty() ? std::string(1, text.vocab()[0]) : prime);
  fx::Array out = generate(state.params, fx::Array(prime_ids, {static_cast<int64_t>(prime_ids.size())}));
  std::vector<int32_t> ids = out.to_vector<int32_t>();
  std::printf("\n--- sample (temperature %.2f) ---\n%s%s\n---\n", temperature, prime.c_str(), text.decode(ids).c_str());
  std::printf("final validation loss: %.4f\n", validation_loss());
  return 0;
} catch (const std::exception& e) {
  return samples::report_error("char_rnn", e);
}
