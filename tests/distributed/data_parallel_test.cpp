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

namespace fx = fluxion;
namespace nn = fluxion::nn;
namespace dist = fluxion::distributed;
using fx::Array;

namespace {

class DataParallel : public ::testing::Test {
 protected:
  void SetUp() override { dist::init(); }
};

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

// Every parameter's bytes, in order.
std::vector<char> bytes_of(const nn::TrainState& s) {
  std::vector<char> out;
  for (const Array& a : s.params) {
    const char* p = static_cast<const char*>(a.data());
    out.insert(out.end(), p, p + a.size() * fx::dtype_size(a.dtype()));
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

// Epochs [first, last) of data-parallel steps, this rank on its shard of every batch.
void run_epochs(const nn::Trainer& t, nn::TrainState& s, int64_t first, int64_t last, bool check_every_step = false) {
  fx::data::Loader loader(
      dataset(), {.batch_size = kGlobalBatch, .shuffle = true, .seed = 5, .rank = dist::rank(), .ranks = dist::size()});
  for (int64_t e = first; e < last; ++e) {
    loader.set_epoch(e);
    for (int64_t i = 0; i < loader.size(); ++i) {
      auto [x, y] = loader.batch(i);
      t.step(s, x, y);
      if (check_every_step) {
        EXPECT_TRUE(same_on_every_rank(bytes_of(s))) << "epoch " << e << " step " << i;
      }
    }
  }
}

nn::TrainState train(const nn::Trainer& t, int64_t epochs, bool check_every_step = false) {
  nn::TrainState s = t.init(11);
  run_epochs(t, s, 0, epochs, check_every_step);
  return s;
}

TEST_F(DataParallel, EveryRankHoldsTheSameParametersAfterEveryStep) {
  for (fx::Backend b : fx::available_backends()) {
    SCOPED_TRACE(fx::backend_name(b));
    train(trainer({.data_parallel = true, .bucket_bytes = 256}, cross_entropy, b), 2, true);
  }
}

TEST_F(DataParallel, ACheckpointOfRank0ResumesTheSameRun) {
  nn::Trainer t = trainer({.data_parallel = true, .bucket_bytes = 256});
  std::vector<char> straight = bytes_of(train(t, 4));
  nn::TrainState s = train(t, 2);
  std::string path = ::testing::TempDir() + "data_parallel_" + std::to_string(dist::size()) + ".safetensors";
  if (dist::rank() == 0) nn::save_checkpoint(path, t.model(), t.optimizer(), s);
  dist::barrier();
  nn::TrainState resumed = t.init(99);  // other values, replaced by the checkpoint's
  nn::load_checkpoint(path, t.model(), t.optimizer(), resumed);
  run_epochs(t, resumed, 2, 4);
  EXPECT_EQ(bytes_of(resumed), straight);
}

TEST_F(DataParallel, BucketSizesAndRerunsGiveTheSameBits) {
  std::vector<char> one_bucket = bytes_of(train(trainer({.data_parallel = true}), 3));
  std::vector<char> small_buckets = bytes_of(train(trainer({.data_parallel = true, .bucket_bytes = 100}), 3));
  std::vector<char> again = bytes_of(train(trainer({.data_parallel = true, .bucket_bytes = 100}), 3));
  EXPECT_EQ(one_bucket, small_buckets);
  EXPECT_EQ(small_buckets, again);
}

TEST_F(DataParallel, FollowsOneProcessTrainingOnTheGlobalBatches) {
  // 50 epochs of 4 steps; one process here sees each step's whole global batch.
  nn::TrainState shards = train(trainer({.data_parallel = true}), 50);
  nn::Trainer alone = trainer({});
  fx::data::Loader loader(dataset(), {.batch_size = kGlobalBatch, .shuffle = true, .seed = 5});
  nn::TrainState whole = alone.init(11);
  for (int64_t e = 0; e < 50; ++e) {
    loader.set_epoch(e);
    for (int64_t i = 0; i < loader.size(); ++i) {
      auto [x, y] = loader.batch(i);
      alone.step(whole, x, y);
    }
  }
  for (size_t k = 0; k < whole.params.size(); ++k) {
    std::vector<float> a = shards.params[k].to_vector<float>(), b = whole.params[k].to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-4 * (1 + std::abs(b[i]))) << "parameter " << k << " element " << i;
  }
}

TEST_F(DataParallel, RanksRunningDifferentProgramsGetAnError) {
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
