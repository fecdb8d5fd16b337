// A character-level LSTM language model: learns to predict the next character of a text file
// (by default the GPL-3 text every Debian system has), then writes new text. Sampling runs on
// the backend too: one compiled call generates every character (a scan whose steps draw from
// the softmax with Gumbel noise), with no round trip per character.
#include <cmath>
#include <cstdio>

#include "common/language_model.h"
#include "common/models.h"

namespace fx = fluxion;
namespace nn = fluxion::nn;
using fx::Tensor;

int main(int argc, char** argv) try {
  samples::TrainingOptions opt;
  opt.epochs = 20;
  opt.batch_size = 32;
  opt.lr = 3e-3;
  std::string text_path = samples::kDefaultText, prime = "The ";
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
  samples::TextData data = samples::load_text_data(text_path, seq_len, opt.limit);
  const fx::data::CharText& text = data.text;
  const fx::data::Dataset& train = data.train;
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
  nn::Trainer trainer(model, loss, optimizer, backend, {.precision = nn::MixedPrecision::named(opt.precision)});
  nn::TrainState state = trainer.init(static_cast<uint64_t>(opt.seed));
  samples::RunCheckpoints checkpoints("char_rnn", opt, model, optimizer, train.size(), {"validation loss", false},
                                      true);
  int64_t first = checkpoints.start(state);
  std::printf(
      "char_rnn on %s: %lld characters of %s, vocabulary %lld, %lld training sequences of %lld, %s, schedule %s\n%s",
      fx::backend_name(backend), static_cast<long long>(text.length()), text_path.c_str(), static_cast<long long>(V),
      static_cast<long long>(train.size()), static_cast<long long>(seq_len), optimizer.describe().c_str(),
      opt.schedule.c_str(), model.summary().c_str());

  double final_loss =
      samples::train_language_model("char_rnn", opt, text_path, trainer, state, loader, data.valid, checkpoints, first);

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
  std::printf("final validation loss: %.4f\n", final_loss);
  return 0;
} catch (const std::exception& e) {
  return samples::report_error("char_rnn", e);
}
