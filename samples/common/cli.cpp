#include "common/cli.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace samples {

fluxion::Backend TrainingOptions::backend_kind() const {
  if (backend == "cpu") return fluxion::Backend::Cpu;
  if (backend == "vulkan") return fluxion::Backend::Vulkan;
  if (backend == "interp") return fluxion::Backend::Interp;
  std::fprintf(stderr, "error: --backend %s: expected cpu, vulkan or interp\n", backend.c_str());
  std::exit(2);
}

void Cli::add(const std::string& flag, int64_t* value, const std::string& help) { flags_.push_back({flag, help, value}); }
void Cli::add(const std::string& flag, double* value, const std::string& help) { flags_.push_back({flag, help, value}); }
void Cli::add(const std::string& flag, std::string* value, const std::string& help) {
  flags_.push_back({flag, help, value});
}

void Cli::add_training(TrainingOptions* o) {
  add("--backend", &o->backend, "cpu, vulkan or interp");
  add("--epochs", &o->epochs, "passes over the training set");
  add("--batch-size", &o->batch_size, "examples per training step");
  add("--lr", &o->lr, "learning rate");
  add("--seed", &o->seed, "seed of the initial parameters and of the shuffling");
  add("--threads", &o->threads, "CPU threads (0: all cores)");
  add("--save", &o->save, "write a checkpoint (safetensors) after training");
  add("--load", &o->load, "start from a checkpoint written by --save");
  add("--csv", &o->csv, "file for the per-epoch curves (default: <program>_curves.csv)");
  add("--svg", &o->svg, "file for the plot of the curves (default: <program>_curves.svg)");
  add("--limit", &o->limit, "train on the first N examples only (0: all)");
  add("--optimizer", &o->optimizer, "adam, adamw or sgd");
  add("--momentum", &o->momentum, "momentum of sgd");
  add("--weight-decay", &o->weight_decay, "weight decay (L2 for sgd and adam, decoupled for adamw)");
}

std::string Cli::usage() const {
  std::string s = "usage: " + program_ + " [options]\n" + description_ + "\n\noptions:\n";
  for (const Flag& f : flags_) {
    std::string current = std::visit(
        [](auto* v) {
          if constexpr (std::is_same_v<decltype(v), std::string*>) return *v;
          else return std::to_string(*v);
        },
        f.value);
    char line[256];
    std::snprintf(line, sizeof line, "  %-14s %s (default: %s)\n", f.name.c_str(), f.help.c_str(),
                  current.empty() ? "none" : current.c_str());
    s += line;
  }
  return s + "  --help         this text\n";
}

void Cli::parse(int argc, char** argv) {
  auto bad = [&](const std::string& what) {
    std::fprintf(stderr, "error: %s\n\n%s", what.c_str(), usage().c_str());
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("%s", usage().c_str());
      std::exit(0);
    }
    std::string name = arg, text;
    size_t eq = arg.find('=');
    bool inline_value = eq != std::string::npos;
    if (inline_value) name = arg.substr(0, eq), text = arg.substr(eq + 1);
    const Flag* flag = nullptr;
    for (const Flag& f : flags_) flag = f.name == name ? &f : flag;
    if (!flag) bad("unknown option '" + arg + "'");
    if (!inline_value) {
      if (i + 1 >= argc) bad(name + " needs a value");
      text = argv[++i];
    }
    std::visit(
        [&](auto* v) {
          using T = std::remove_pointer_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            *v = text;
          } else {
            T parsed{};
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
            if (ec != std::errc() || end != text.data() + text.size()) bad(name + " " + text + ": not a number");
            *v = parsed;
          }
        },
        flag->value);
  }
}

}  // namespace samples
