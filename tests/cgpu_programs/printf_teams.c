/* printf from 100 teams x 256 threads. */
#include <stdio.h>

int main(void) {
  long total = 0;
#pragma omp target teams distribute parallel for num_teams(100) \
    thread_limit(256) reduction(+ : total)
  for (int i = 0; i < 100 * 256; ++i)
    total += printf("thread %5d of 25600: %08x %.3f %s\n", i, i * 2654435761u,
                    i / 7.0, i % 2 ? "odd" : "even");
  printf("total bytes %ld\n", total);
  return 0;
}
