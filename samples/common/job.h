// The samples' part in a job of several processes: started by mpirun or srun (and built with
// fluxion::distributed), a sample joins the job and trains data-parallel; rank 0 prints and
// writes files, the other ranks stay quiet. Started alone, it is a job of one rank.
#pragma once

namespace samples {

struct Job {
  int rank = 0;
  int size = 1;
  bool leader() const { return rank == 0; }
};

// Joins the job the launcher started, if any, and silences standard output on ranks other
// than 0 (errors still reach standard error).
Job join_job();

}  // namespace samples
