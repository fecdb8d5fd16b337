// Every test of fluxion_distributed_tests runs in the job mpirun started: it is joined once,
// before the first test.
#include <gtest/gtest.h>

#include <fluxion/distributed.h>

namespace {

class JoinJob : public ::testing::Environment {
 public:
  void SetUp() override { fluxion::distributed::init(); }
};

const ::testing::Environment* const join_job = ::testing::AddGlobalTestEnvironment(new JoinJob);

}  // namespace
