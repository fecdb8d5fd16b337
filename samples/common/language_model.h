// What the character-level language-model samples (char_rnn, gpt_train) share: the text split
// into training and validation windows, and the training loop with its validation loss per
// character, curves and checkpoints.
#pragma once

#include <fluxion/nn.h>

#include <cstdint>
#include <string>

#include "common/classifier.h"

namespace samples {

inline constexpr const char* kDefaultText = "/usr/share/common-licenses/GPL-3";

struct TextData {
  fluxion::data::CharText text;
  fluxion::data::Dataset train, valid;  // windows of seq_len; the last tenth held out
};
// Raises an error naming the package of the default text when it is missing. `limit` > 0 keeps
// the first `limit` training windows.
TextData load_text_data(const std::string& path, int64_t seq_len, int64_t limit);

// The mean loss per character over `valid`, in batches of `batch` windows.
double validation_loss(const fluxion::nn::Trainer& trainer, const fluxion::nn::TrainState& state,
                       const fluxion::data::Dataset& valid, int64_t batch);

// Trains epochs `first` (what checkpoints.start returned) to checkpoints.last_epoch(), printing
// each epoch's losses, writing the curves and the checkpoints; returns the last validation loss.
double train_language_model(const std::string& program, const TrainingOptions& opt, const std::string& text_path,
                            const fluxion::nn::Trainer& trainer, fluxion::nn::TrainState& state,
                            fluxion::data::Loader& loader, const fluxion::data::Dataset& valid,
                            RunCheckpoints& checkpoints, int64_t first);

}  // namespace samples
