// Training curves: one row per epoch, written as CSV and as an SVG line plot that opens in any
// browser: train and test loss on the left axis, test accuracy on the right; rows without an
// accuracy (a language model) plot train and validation loss and no right axis.
#pragma once

#include <string>
#include <vector>

namespace samples {

struct EpochRecord {
  int epoch = 0;
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = -1;  // < 0: not measured (a language model)
  double seconds = 0;         // the epoch's training time
};

// Both files are written to a temporary name and renamed into place.
void write_csv(const std::string& path, const std::vector<EpochRecord>& rows);
void write_svg(const std::string& path, const std::string& title, const std::vector<EpochRecord>& rows);
// The rows of a file write_csv wrote; none when there is no such file.
std::vector<EpochRecord> read_csv(const std::string& path);

}  // namespace samples
