// nn::Trainer's data-parallel mode on whatever number of ranks mpirun started: every rank holds
// the same parameters bit for bit after every step (on every backend), the gradient buckets'
// size does not change a bit, reruns repeat the bits, a run resumed from rank 0's checkpoint
// ends with the bits of an uninterrupted one, training on the ranks' shards follows one process
// training on the whole global batches, and ranks running different programs get an Error.
#include <gtest/gtest.h>

#include <fluxion/data.h>
#include <fluxion/distributed.h>
#include <fluxion/error.h>
#include <fluxion/nn.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_util.h"

namespace fx = fluxion;
namespace nn = fluxion::nn;
namespace dist = fluxion::distributed;
using fx::Array;

namespace {

constexpr int64_t kGlobalBatch = 16;

// 64 examples of 6 features in 3 classes (the class shifts the features), the same on every rank.
fx::data::Dataset dataset() {
  std::vector<float> x(64 * 6);
  std::vector<int32_t> y(64);
  for (int i = 0; i < 64; ++i) {
    y[static_cast<size_t>(i)] = i % 3;
    for (int j = 0; j < 6; ++j)
      x[static_cast<size_t>(i * 6 + j)] = static_cast<float>(std::sin(0.7 * i + 1.3 * j) + 0.5 * (i % 3 == j % 3));
  }
  return {Array(x, {64, 6}), Array(y, {64})};
}

nn::Model model() { return nn::Sequential{nn::Dense(6, 16), nn::Tanh(), nn::Dense(16, 3)}; }

fx::Tensor cross_entropy(const fx::Tensor& out, const fx::Tensor& y) { return nn::softmax_cross_entropy(out, y); }

nn::Trainer trainer(nn::TrainerOptions options, nn::LossFn loss = cross_entropy,
                    fx::Backend backend = fx::Backend::Cpu) {
  return nn::Trainer(model(), loss, nn::sgd({.lr = 0.1, .momentum = 0.9}), backend, options);
}

// Every parameter's and model state tensor's bytes, in order.
std::vector<char> bytes_of(const nn::TrainState& s) {
  std::vector<char> out;
  for (const std::vector<Array>* part : {&s.params, &s.model_state}) {
    for (const Array& a : *part) {
      const char* p = static_cast<const char*>(a.data());
      out.insert(out.end(), p, p + a.size() * fx::dtype_size(a.dtype()));
    }
  }
  return out;
}

// Whether every rank's bytes are this rank's.
bool same_on_every_rank(const std::vector<char>& mine) {
  Array local(fx::i32, {static_cast<int64_t>(mine.size() + 3) / 4});
  std::memcpy(local.mutable_data(), mine.data(), mine.size());
  Array all = dist::all_gather(local);
  const char* p = static_cast<const char*>(all.data());
  size_t stride = static_cast<size_t>(local.size()) * 4;
  for (int r = 1; r < dist::size(); ++r) {
    if (std::memcmp(p, p + stride * static_cast<size_t>(r), stride) != 0) return false;
  }
  return true;
}

Array as(fx::DType t, const Array& a) {
  return a.dtype() == t || !fx::is_float(a.dtype()) ? a : fx::testing::make(t, a.to_doubles(), a.shape());
}

// Trainer t's initial state (seed 11), its floats in dtype t.
nn::TrainState init(const nn::Trainer& trainer, fx::DType t = fx::f32) {
  nn::TrainState s = trainer.init(11);
  for (Array& a : s.params) a = as(t, a);
  for (Array& a : s.opt_state) a = as(t, a);
  return s;
}

struct Shard {
  int rank = dist::rank(), ranks = dist::size();
};

// Epochs [first, last) of steps on shard `shard` of every global batch, inputs in dtype t; the
// steps' losses.
std::vector<double> run_epochs(const nn::Trainer& t, nn::TrainState& s, int64_t first, int64_t last,
                               bool check_every_step = false, fx::DType dtype = fx::f32, Shard shard = {}) {
  fx::data::Loader loader(
      dataset(), {.batch_size = kGlobalBatch, .shuffle = true, .seed = 5, .rank = shard.rank, .ranks = shard.ranks});
  std::vector<double> losses;
  for (int64_t e = first; e < last; ++e) {
    loader.set_epoch(e);
    for (int64_t i = 0; i < loader.size(); ++i) {
      auto [x, y] = loader.batch(i);
      losses.push_back(t.step(s, as(dtype, x), y).item());
      if (check_every_step) {
        EXPECT_TRUE(same_on_every_rank(bytes_of(s))) << "epoch " << e << " step " << i;
      }
    }
  }
  return losses;
}

nn::TrainState train(const nn::Trainer& t, int64_t epochs, bool check_every_step = false) {
  nn::TrainState s = init(t);
  run_epochs(t, s, 0, epochs, check_every_step);
  return s;
}

TEST(DataParallel, EveryRankHoldsTheSameParametersAfterEveryStep) {
  for (fx::Backend b : fx::available_backends()) {
    SCOPED_TRACE(fx::backend_name(b));
    train(trainer({.data_parallel = true, .bucket_bytes = 256}, cross_entropy, b), 2, true);
  }
}

TEST(DataParallel, BatchNormStatisticsAndDropoutKeepEveryRankTheSame) {
  nn::Model stateful(
      nn::Sequential{nn::Dense(6, 16), nn::BatchNorm1d(16), nn::Tanh(), nn::Dropout(0.2), nn::Dense(16, 3)});
  for (fx::Backend b : fx::available_backends()) {
    SCOPED_TRACE(fx::backend_name(b));
    nn::Trainer t(stateful, cross_entropy, nn::adam({.lr = 1e-2}), b, {.data_parallel = true, .bucket_bytes = 256});
    nn::TrainState s = t.init(11);
    std::vector<double> fresh = s.model_state[0].to_doubles();
    run_epochs(t, s, 0, 2, true);
    EXPECT_NE(s.model_state[0].to_doubles(), fresh) << "the running mean moved";
  }
}

TEST(DataParallel, ACheckpointOfRank0ResumesTheSameRun) {
  // 50 epochs of 4 steps, interrupted after step 100.
  nn::Trainer t = trainer({.data_parallel = true, .bucket_bytes = 256});
  std::vector<char> straight = bytes_of(train(t, 50));
  nn::TrainState s = train(t, 25);
  std::string path = ::testing::TempDir() + "data_parallel_" + std::to_string(dist::size()) + ".safetensors";
  if (dist::rank() == 0) nn::save_checkpoint(path, t.model(), t.optimizer(), s);
  dist::barrier();
  nn::TrainState resumed = t.init(99);  // other values, replaced by the checkpoint's
  nn::load_checkpoint(path, t.model(), t.optimizer(), resumed);
  run_epochs(t, resumed, 25, 50);
  EXPECT_EQ(bytes_of(resumed), straight);
}

TEST(DataParallel, BucketSizesAndRerunsGiveTheSameBits) {
  std::vector<char> one_bucket = bytes_of(train(trainer({.data_parallel = true}), 3));
  std::vector<char> small_buckets = bytes_of(train(trainer({.data_parallel = true, .bucket_bytes = 100}), 3));
  std::vector<char> again = bytes_of(train(trainer({.data_parallel = true, .bucket_bytes = 100}), 3));
  EXPECT_EQ(one_bucket, small_buckets);
  EXPECT_EQ(small_buckets, again);
}

// 200 steps (50 epochs of 4) on the ranks' shards against one process stepping on each whole
// global batch: the losses (the ranks' mean) and parameters differ by rounding only.
TEST(DataParallel, FollowsOneProcessTrainingOnTheGlobalBatches) {
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    SCOPED_TRACE(fx::dtype_name(dtype));
    double tolerance = dtype == fx::f64 ? 1e-10 : 1e-4;
    nn::Trainer shared = trainer({.data_parallel = true}), alone = trainer({});
    nn::TrainState shards = init(shared, dtype), whole = init(alone, dtype);
    std::vector<double> got = run_epochs(shared, shards, 0, 50, false, dtype);
    std::vector<double> want = run_epochs(alone, whole, 0, 50, false, dtype, {0, 1});
    ASSERT_EQ(got.size(), 200u);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance * std::abs(want[i])) << "step " << i;
    for (size_t k = 0; k < whole.params.size(); ++k) {
      std::vector<double> a = shards.params[k].to_doubles(), b = whole.params[k].to_doubles();
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_NEAR(a[i], b[i], tolerance * (1 + std::abs(b[i]))) << "parameter " << k << " element " << i;
      }
    }
  }
}

TEST(DataParallel, RanksRunningDifferentProgramsGetAnError) {
  if (dist::size() == 1) GTEST_SKIP() << "needs two ranks";
  // Rank 1's loss is scaled: another program, with the same collectives.
  nn::LossFn loss = [](const fx::Tensor& out, const fx::Tensor& y) {
    fx::Tensor l = nn::softmax_cross_entropy(out, y);
    return dist::rank() == 1 ? l * 2.0 : l;
  };
  nn::Trainer t = trainer({.data_parallel = true}, loss);
  nn::TrainState s = t.init(11);
  fx::data::Loader loader(dataset(),
                          {.batch_size = kGlobalBatch, .shuffle = false, .rank = dist::rank(), .ranks = dist::size()});
  auto [x, y] = loader.batch(0);
  try {
    t.step(s, x, y);
    FAIL() << "expected an Error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the program of rank(s) 1"), std::string::npos) << e.what();
  }
}

}  // namespace
