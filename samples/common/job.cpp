#include "common/job.h"

#include <cstdio>
#include <cstdlib>

#ifdef FLUXION_SAMPLES_WITH_MPI
#include <fluxion/distributed.h>
#endif

namespace samples {
namespace {

// Whether a launcher started this process as one rank of several (Open MPI, PMI, Slurm).
bool launched_as_job() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const char* v = std::getenv(var);
    if (v && std::atoi(v) > 1) return true;
  }
  return false;
}

}  // namespace

Job join_job() {
  Job job;
#ifdef FLUXION_SAMPLES_WITH_MPI
  if (launched_as_job()) {
    fluxion::distributed::init();
    job.rank = fluxion::distributed::rank();
    job.size = fluxion::distributed::size();
  }
#else
  if (launched_as_job()) {
    std::fprintf(stderr,
                 "warning: started as one rank of a job, but this build has no fluxion::distributed: "
                 "training alone\n");
  }
#endif
  if (!job.leader() && !std::freopen("/dev/null", "w", stdout))
    std::fprintf(stderr, "warning: cannot silence rank %d\n", job.rank);
  return job;
}

}  // namespace samples
