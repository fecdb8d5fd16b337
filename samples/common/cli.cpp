#include "common/cli.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

namespace samples {

namespace {

std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out += p;
  return out;
}

}  // namespace

fluxion::Backend TrainingOptions::backend_kind() const {
  if (backend == "cpu") return fluxion::Backend::Cpu;
  if (backend == "vulkan") return fluxion::Backend::Vulkan;
  if (backend == "interp") return fluxion::Backend::Interp;
  std::fprintf(stderr, "error: --backend %s: expected cpu, vulkan or interp\n", backend.c_str());
  std::exit(2);
}

std::string TrainingOptions::checkpoint_path(const std::string& program) const {
  if (checkpoint == "none") return "";
  return checkpoint.empty() ? program + "_checkpoint.safetensors" : checkpoint;
}

std::string TrainingOptions::best_checkpoint_path(const std::string& program) const {
  std::string path = checkpoint_path(program), ext = ".safetensors";
  if (path.empty()) return "";
  bool has_ext = path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  return (has_ext ? path.substr(0, path.size() - ext.size()) : path) + "_best" + ext;
}

void Cli::add(const std::string& flag, int64_t* value, const std::string& help) { add_flag({flag, help, value, {}}); }
void Cli::add(const std::string& flag, double* value, const std::string& help) { add_flag({flag, help, value, {}}); }
void Cli::add(const std::string& flag, std::string* value, const std::string& help) {
  add_flag({flag, help, value, {}});
}
void Cli::add_choice(const std::string& flag, std::string* value, std::vector<std::string> choices,
                     const std::string& help) {
  add_flag({flag, help, value, std::move(choices)});
}

void Cli::add_flag(Flag flag) {
  std::erase_if(flags_, [&](const Flag& f) { return f.name == flag.name; });
  flags_.push_back(std::move(flag));
}

void Cli::add_training(TrainingOptions* o) {
  add_choice("--backend", &o->backend, {"cpu", "vulkan", "interp"}, "the backend that trains");
  add("--epochs", &o->epochs, "passes over the training set");
  add("--batch-size", &o->batch_size, "examples per training step");
  add("--lr", &o->lr, "learning rate (the schedule's factor 1)");
  add("--seed", &o->seed, "seed of the initial parameters, of the shuffling and of dropout");
  add("--threads", &o->threads, "CPU threads (0: all cores)");
  add_choice("--precision", &o->precision, {"f32", "bf16", "f16"},
             "the forward and backward passes' dtype; parameters, optimizer and loss stay f32\n(f16 with dynamic "
             "loss scaling)");
  add("--save", &o->save, "write a checkpoint (safetensors) after training");
  add("--load", &o->load, "start from a checkpoint's state, training from epoch 1");
  add("--csv", &o->csv, "file for the per-epoch curves (default: <program>_curves.csv)");
  add("--svg", &o->svg, "file for the plot of the curves (default: <program>_curves.svg)");
  add("--limit", &o->limit, "train on the first N examples only (0: all)");
  add_choice("--optimizer", &o->optimizer, {"adam", "adamw", "sgd"}, "the optimizer");
  add("--momentum", &o->momentum, "momentum of sgd");
  add("--weight-decay", &o->weight_decay, "weight decay (L2 for sgd and adam, decoupled for adamw)");
  add_choice("--schedule", &o->schedule, {"constant", "step", "cosine", "exp"},
             "the learning rate's factor at step s (S steps an epoch, T = epochs x S):\n"
             "constant: 1; step: 0.5^floor(s / S), halved after every epoch; exp: 0.5^(s / S),\n"
             "the same halving, smoothly; cosine: from 0 at s = 0 linearly to 1 at s = W =\n"
             "round(0.05 T), then a half cosine to 0 at s = T");
  add("--clip", &o->clip, "clip the gradients to this global L2 norm before the optimizer (0: no clipping)");
  add("--checkpoint", &o->checkpoint,
      "written after every epoch with the epoch and the best score so far; the best epoch's\n"
      "also to PATH less .safetensors + _best.safetensors (default:\n"
      "<program>_checkpoint.safetensors; none: no checkpoints)");
  add("--resume", &o->resume,
      "continue the run that wrote this checkpoint after its epoch (with the same flags:\n"
      "bitwise the uninterrupted run's result)");
  add("--stop-after", &o->stop_after, "stop after this epoch, to --resume later (0: train every epoch)");
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
    std::string help = f.help;
    if (!f.choices.empty()) {
      std::string names;
      for (const std::string& c : f.choices) names += (names.empty() ? "" : "|") + c;
      help = join({names, ": ", help});
    }
    if (help.find("(default:") == std::string::npos)
      help += " (default: " + (current.empty() ? std::string("none") : current) + ")";
    for (size_t at = help.find('\n'); at != std::string::npos; at = help.find('\n', at + 1))
      help.insert(at + 1, std::string(18, ' '));
    std::string name = "  " + f.name;
    name.resize(std::max<size_t>(name.size() + 1, 17), ' ');
    s += join({name, " ", help, "\n"});
  }
  return s + "  --help          this text\n";
}

void Cli::parse(int argc, char** argv) {
  auto bad = [&](const std::string& what) {
    std::fprintf(stderr, "%s: error: %s\n\n%s", program_.c_str(), what.c_str(), usage().c_str());
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
            bool allowed = flag->choices.empty();
            std::string names;
            for (const std::string& c : flag->choices) {
              allowed = allowed || c == text;
              names += (names.empty() ? "" : c == flag->choices.back() ? " or " : ", ") + c;
            }
            if (!allowed) bad(join({name, " ", text, ": expected ", names}));
            *v = text;
          } else {
            T parsed{};
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
            if (ec != std::errc() || end != text.data() + text.size()) bad(join({name, " ", text, ": not a number"}));
            *v = parsed;
          }
        },
        flag->value);
  }
}

int report_error(const std::string& program, const std::exception& e) {
  std::string what = e.what();
  for (size_t at = what.find('\n'); at != std::string::npos; at = what.find('\n', at)) {
    size_t end = what.find_first_not_of(' ', at + 1);
    what.replace(at, (end == std::string::npos ? what.size() : end) - at, at > 0 && what[at - 1] == ':' ? " " : "; ");
  }
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), what.c_str());
  return 1;
}

}  // namespace samples
