/* The host's output after a region's completion comes after every line
 * the region printed: a target region, nowait regions completed by
 * taskwait, and a region in another host thread. */
#include <stdio.h>

int main(void) {
#pragma omp target teams distribute parallel for num_teams(2) thread_limit(64)
  for (int i = 0; i < 128; ++i)
    printf("phase 1 line %d\n", i);
  printf("host: after phase 1\n");
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    for (int r = 0; r < 4; ++r) {
#pragma omp target teams distribute parallel for num_teams(1) \
    thread_limit(64) nowait firstprivate(r)
      for (int i = 0; i < 64; ++i)
        printf("phase 2 region %d line %d\n", r, i);
    }
#pragma omp taskwait
    printf("host: after phase 2\n");
  }
  return 0;
}
