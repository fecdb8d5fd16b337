// Command-line options of the sample programs: each program registers its flags with a help
// line; --help prints them all. Every sample takes the shared training flags (add_training).
#pragma once

#include <fluxion/backend.h>

#include <cstdint>
#include <exception>
#include <string>
#include <variant>
#include <vector>

namespace samples {

// The flags every training sample takes.
struct TrainingOptions {
  std::string backend = fluxion::backend_name(fluxion::default_backend());
  int64_t epochs = 5;
  int64_t batch_size = 128;
  double lr = 1e-3;
  int64_t seed = 0;
  int64_t threads = 0;             // 0: all cores
  std::string save;                // checkpoint written after training
  std::string load;                // checkpoint read before training (training starts at epoch 1)
  std::string csv;                 // curves; default <program>_curves.csv
  std::string svg;                 // plot; default <program>_curves.svg
  int64_t limit = 0;               // train on the first `limit` examples only (0: all)
  std::string optimizer = "adam";  // adam, adamw or sgd
  double momentum = 0.9;           // sgd only
  double weight_decay = 0;
  std::string schedule = "constant";  // the learning-rate schedule (make_schedule)
  double clip = 0;                    // > 0: gradients clipped to this global norm first
  std::string checkpoint;             // written after every epoch; default
                                      // <program>_checkpoint.safetensors, "none": never
  std::string resume;                 // an epoch checkpoint to continue the run from
  int64_t stop_after = 0;             // stop after this epoch, resumable (0: run every epoch)
  std::string precision = "f32";      // the forward and backward passes' dtype (nn::MixedPrecision::named)

  fluxion::Backend backend_kind() const;
  // The epoch checkpoint's path ("" for none) and the best one's: "x.safetensors" -> "x_best.safetensors".
  std::string checkpoint_path(const std::string& program) const;
  std::string best_checkpoint_path(const std::string& program) const;
};

class Cli {
 public:
  Cli(std::string program, std::string description)
      : program_(std::move(program)), description_(std::move(description)) {}
  // Help lines may hold '\n': the usage indents the lines after the first. A flag added again
  // (a program's own --clip after add_training's) replaces the one added before.
  void add(const std::string& flag, int64_t* value, const std::string& help);
  void add(const std::string& flag, double* value, const std::string& help);
  void add(const std::string& flag, std::string* value, const std::string& help);
  // A string that must be one of `choices` (parse rejects anything else; the usage lists them).
  void add_choice(const std::string& flag, std::string* value, std::vector<std::string> choices,
                  const std::string& help);
  void add_training(TrainingOptions* o);
  // Parses argv; prints usage and exits 0 for --help, prints the problem and exits 2 for a
  // bad flag or value.
  void parse(int argc, char** argv);
  std::string usage() const;
  const std::string& program() const { return program_; }

 private:
  struct Flag {
    std::string name, help;
    std::variant<int64_t*, double*, std::string*> value;
    std::vector<std::string> choices;  // for strings: the values allowed (any when empty)
  };
  void add_flag(Flag flag);

  std::string program_, description_;
  std::vector<Flag> flags_;
};

// What every sample's main does with an exception that reaches it: prints one line,
// "<program>: error: <what>" (a multi-line message joined with "; "), to standard error and
// returns the exit status 1.
int report_error(const std::string& program, const std::exception& e);

}  // namespace samples
