// Links the installed fluxion::distributed and runs as a job of one rank.
#include <fluxion/distributed.h>

#include <cstdio>

int main() {
  fluxion::distributed::init();
  fluxion::Array x(std::vector<float>{1, 2, 3}, {3});
  fluxion::distributed::all_reduce(x, fluxion::ReduceOp::Sum);
  std::printf("rank %d of %d (%s): %s\n", fluxion::distributed::rank(), fluxion::distributed::size(),
              fluxion::distributed::engine().c_str(), x.str().c_str());
  fluxion::distributed::finalize();
  return fluxion::distributed::size() == 1 && x.to_vector<float>()[2] == 3 ? 0 : 1;
}
