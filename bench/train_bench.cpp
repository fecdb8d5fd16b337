// fluxion_train_bench: epoch times of the training samples' models on Fashion-MNIST:
// the MLP, LeNet and the LSTM of mlp_train, lenet_train and rnn_train, in Fluxion (one compiled
// training step per batch) and in libtorch (eager autograd + torch::optim), with the same
// batches in the same order, the same optimizer and the same thread count. Only the training
// loop is timed (batches are gathered before the clock starts). Writes records with mode
// "epoch" to the JSON file of fluxion_bench.
#include <fluxion/nn.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/models.h"
#include "report.h"
#include "timing.h"
#include "torch_threads.h"

namespace {

namespace fx = fluxion;
namespace nn = fluxion::nn;

using Batches = std::vector<std::pair<fx::Array, fx::Array>>;

using bench::seconds_since;

struct EpochTimes {
  std::vector<double> seconds;
  double last_loss = 0;
};

EpochTimes time_fluxion(const nn::Model& model, const Batches& batches, int epochs, fx::Backend backend) {
  nn::Trainer trainer(
      model, [](const fx::Tensor& o, const fx::Tensor& y) { return nn::softmax_cross_entropy(o, y); }, nn::adam(),
      backend);
  nn::TrainState state = trainer.init(0);
  // Compiles for both batch shapes (the last batch is smaller) before the clock starts.
  for (const auto* b : {&batches.front(), &batches.back()}) trainer.step(state, b->first, b->second);
  EpochTimes t;
  for (int e = 0; e < epochs; ++e) {
    auto t0 = std::chrono::steady_clock::now();
    fx::Array loss;
    for (const auto& [x, y] : batches) loss = trainer.step(state, x, y);
    t.last_loss = loss.item();  // waits for the last step (Vulkan)
    t.seconds.push_back(seconds_since(t0));
  }
  return t;
}

struct TorchLeNet : torch::nn::Module {
  torch::nn::Conv2d c1{nullptr}, c2{nullptr};
  torch::nn::Linear f1{nullptr}, f2{nullptr}, f3{nullptr};
  TorchLeNet() {
    c1 = register_module("c1", torch::nn::Conv2d(1, 6, 5));
    c2 = register_module("c2", torch::nn::Conv2d(6, 16, 5));
    f1 = register_module("f1", torch::nn::Linear(256, 120));
    f2 = register_module("f2", torch::nn::Linear(120, 84));
    f3 = register_module("f3", torch::nn::Linear(84, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(c1(x)), 2);
    x = torch::max_pool2d(torch::relu(c2(x)), 2);
    x = torch::relu(f1(x.flatten(1)));
    return f3(torch::relu(f2(x)));
  }
};

struct TorchMlp : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr};
  TorchMlp() {
    l1 = register_module("l1", torch::nn::Linear(784, 32));
    l2 = register_module("l2", torch::nn::Linear(32, 10));
  }
  torch::Tensor forward(torch::Tensor x) { return l2(torch::tanh(l1(x.flatten(1)))); }
};

struct TorchLstm : torch::nn::Module {
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear head{nullptr};
  TorchLstm() {
    lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(28, 128).batch_first(true)));
    head = register_module("head", torch::nn::Linear(128, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto out = std::get<0>(lstm(x.reshape({x.size(0), 28, 28})));
    return head(out.select(1, 27));
  }
};

template <class M>
EpochTimes time_torch(const Batches& batches, int epochs) {
  torch::manual_seed(0);
  auto model = std::make_shared<M>();
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
  std::vector<std::pair<torch::Tensor, torch::Tensor>> data;
  for (const auto& [x, y] : batches) {
    auto xs = std::vector<int64_t>(x.shape().begin(), x.shape().end());
    data.emplace_back(torch::from_blob(const_cast<void*>(x.data()), xs, torch::kFloat32).clone(),
                      torch::from_blob(const_cast<void*>(y.data()), {y.shape()[0]}, torch::kInt32).to(torch::kInt64));
  }
  auto step = [&](const torch::Tensor& x, const torch::Tensor& y) {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  for (const auto* b : {&data.front(), &data.back()}) step(b->first, b->second);
  EpochTimes t;
  for (int e = 0; e < epochs; ++e) {
    auto t0 = std::chrono::steady_clock::now();
    torch::Tensor loss;
    for (const auto& [x, y] : data) loss = step(x, y);
    t.last_loss = loss.item<double>();
    t.seconds.push_back(seconds_since(t0));
  }
  return t;
}

bench::Record record(const std::string& workload, const std::string& system, int threads, const EpochTimes& t) {
  std::vector<double> s = t.seconds;
  std::sort(s.begin(), s.end());
  bench::Record r;
  r.workload = workload;
  r.system = system;
  r.mode = "epoch";
  r.threads = threads;
  r.median_us = s[s.size() / 2] * 1e6;
  r.min_us = s.front() * 1e6;
  r.reps = static_cast<int64_t>(s.size());
  r.value = t.last_loss;
  return r;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "fluxion_train_bench: %s\nusage: fluxion_train_bench [--threads N|all] [--epochs N] "
               "[--models mlp,lenet,lstm] [--systems fluxion,libtorch] [--backend cpu|vulkan] "
               "[--json PATH [--append]]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, epochs = 3;
  std::string json, backend_name = "cpu";
  bool append = false;
  std::set<std::string> models{"mlp", "lenet", "lstm"}, systems{"fluxion", "libtorch"};
  auto split = [](const std::string& list) {
    std::set<std::string> out;
    std::stringstream in(list);
    for (std::string m; std::getline(in, m, ',');) out.insert(m);
    return out;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--threads") {
      std::string v = value();
      threads = v == "all" ? static_cast<int>(std::thread::hardware_concurrency()) : std::atoi(v.c_str());
    } else if (a == "--epochs") {
      epochs = std::atoi(value().c_str());
    } else if (a == "--models") {
      models = split(value());
    } else if (a == "--systems") {
      systems = split(value());
    } else if (a == "--backend") {
      backend_name = value();
    } else if (a == "--json") {
      json = value();
    } else if (a == "--append") {
      append = true;
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (threads < 1 || epochs < 1) usage("--threads and --epochs take positive numbers");
  fx::Backend backend = backend_name == "vulkan" ? fx::Backend::Vulkan : fx::Backend::Cpu;
  setenv("FLUXION_DISK_CACHE", "0", 0);
  fx::set_num_threads(threads);
  bench::set_torch_threads(threads);

  fx::data::Dataset train = fx::data::fashion_mnist("train");
  fx::data::Loader loader(train, {.batch_size = 128, .shuffle = true, .seed = 0});
  Batches batches;
  for (int64_t i = 0; i < loader.size(); ++i) batches.push_back(loader.batch(i));
  std::fprintf(stderr, "fluxion_train_bench: %d thread(s), %d timed epochs of %zu batches of 128 per cell\n", threads,
               epochs, batches.size());

  std::vector<bench::Record> records;
  std::string fx_system = "fluxion-" + backend_name;
  auto run = [&](const std::string& name, const std::string& workload, auto fluxion_model, auto torch_run) {
    if (!models.count(name)) return;
    std::fprintf(stderr, "  %s ...\n", workload.c_str());
    if (systems.count("fluxion"))
      records.push_back(record(workload, fx_system, threads, time_fluxion(fluxion_model, batches, epochs, backend)));
    if (backend == fx::Backend::Cpu && systems.count("libtorch"))
      records.push_back(record(workload, "libtorch", threads, torch_run()));
  };
  run("mlp", "train-mlp", samples::mlp_model(32), [&] { return time_torch<TorchMlp>(batches, epochs); });
  run("lenet", "train-lenet", samples::lenet_model(), [&] { return time_torch<TorchLeNet>(batches, epochs); });
  run("lstm", "train-lstm", samples::rnn_model("lstm", 128), [&] { return time_torch<TorchLstm>(batches, epochs); });

  std::printf("\nEpoch of Fashion-MNIST training (469 steps of batch 128, Adam), %d thread(s)\n", threads);
  std::printf("%-12s %-14s %12s %12s %10s %16s\n", "model", "system", "median s", "min s", "last loss",
              "x libtorch (med)");
  for (const bench::Record& r : records) {
    double torch_median = 0;
    for (const bench::Record& o : records)
      if (o.workload == r.workload && o.system == "libtorch") torch_median = o.median_us;
    std::printf("%-12s %-14s %12.3f %12.3f %10.4f %16s\n", r.workload.c_str(), r.system.c_str(), r.median_us / 1e6,
                r.min_us / 1e6, r.value,
                torch_median > 0 ? std::to_string(r.median_us / torch_median).substr(0, 5).c_str() : "-");
  }
  if (!json.empty() && !bench::write_json(json, records, append)) return 1;
  return 0;
}
