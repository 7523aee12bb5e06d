/* Runs `body(block, thread, threads)` for every thread of the grid: on the
 * GPU each thread of the launch runs it once; the host build loops over a
 * grid of HOST_BLOCKS x HOST_THREADS. */
#ifndef LOADER_TEST_GRID_H
#define LOADER_TEST_GRID_H

#ifdef __AMDGPU__
#include <gpu.h>
#define GRID_RUN(body, argc, argv)                                             \
  (body)(argc, argv, gpu_block_id(), gpu_thread_id(), gpu_num_threads())
#else
#ifndef HOST_BLOCKS
#define HOST_BLOCKS 1
#endif
#ifndef HOST_THREADS
#define HOST_THREADS 1
#endif
static inline int grid_run_host(int (*body)(int, char **, unsigned, unsigned,
                                            unsigned),
                                int argc, char **argv) {
  int ret = 0;
  for (unsigned b = 0; b < HOST_BLOCKS; ++b)
    for (unsigned t = 0; t < HOST_THREADS; ++t)
      ret |= body(argc, argv, b, t, HOST_THREADS);
  return ret;
}
#define GRID_RUN(body, argc, argv) grid_run_host(body, argc, argv)
#endif

#endif
