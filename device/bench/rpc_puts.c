/* Times `count` (argv[1], default 500) calls of puts from one lane with the
 * device's 100 MHz real-time counter; prints the median to stderr. With
 * argv[2] = N > 0, every thread of the other blocks prints N lines
 * meanwhile (the round trip under load); lane 0 of block 0 measures. */
#include <gpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX 4096

int main(int argc, char **argv) {
  int count = argc > 1 ? atoi(argv[1]) : 500;
  int load = argc > 2 ? atoi(argv[2]) : 0;
  if (count < 1 || count > MAX)
    count = 500;
  if (gpu_block_id() != 0) {
    unsigned id = gpu_block_id() * gpu_num_threads() + gpu_thread_id();
    for (int i = 0; i < load; ++i)
      printf("load thread %u line %d\n", id, i);
    return 0;
  }
  if (gpu_thread_id() != 0)
    return 0;
  uint64_t *ticks = malloc(sizeof(uint64_t) * (size_t)count);
  for (int i = 0; i < count; ++i) {
    uint64_t t0 = __builtin_amdgcn_s_memrealtime();
    puts("x");
    ticks[i] = __builtin_amdgcn_s_memrealtime() - t0;
  }
  /* insertion sort: small, and the device library has no qsort */
  for (int i = 1; i < count; ++i) {
    uint64_t v = ticks[i];
    int j = i - 1;
    while (j >= 0 && ticks[j] > v) {
      ticks[j + 1] = ticks[j];
      --j;
    }
    ticks[j + 1] = v;
  }
  uint64_t median = ticks[count / 2];
  fprintf(stderr,
          "puts_round_trip_median_ns=%lu p10_ns=%lu p90_ns=%lu calls=%d\n",
          (unsigned long)(median * 10), (unsigned long)(ticks[count / 10] * 10),
          (unsigned long)(ticks[count * 9 / 10] * 10), count);
  free(ticks);
  return 0;
}
