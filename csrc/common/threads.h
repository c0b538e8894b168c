// OpenMP thread count for a loop of a given amount of work (shared by the kernels of csrc/).
#pragma once

#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fastnips {

// n_threads > 0: that many; 0: OpenMP's default. Below `min_work` units one thread does it all (a thread
// costs more than it saves), and without OpenMP always one.
inline int thread_count(int n_threads, int64_t work, int64_t min_work) {
#ifdef _OPENMP
  if (work < min_work) return 1;
  return n_threads > 0 ? n_threads : omp_get_max_threads();
#else
  (void)n_threads;
  (void)work;
  (void)min_work;
  return 1;
#endif
}

// The processors this process may run on (omp_get_num_procs: the affinity mask); 1 without OpenMP.
inline int hardware_threads() {
#ifdef _OPENMP
  return omp_get_num_procs();
#else
  return 1;
#endif
}

}  // namespace fastnips
