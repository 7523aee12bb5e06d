/* Device heap misuse under contention, for libcgpu and our plugin.
 *
 * Each round (argv[1] of them, default 1000) is one target region of
 * TEAMS x THREADS threads: every thread mallocs a block and frees it; one
 * thread (another each round) frees its block a second time, racing the
 * other threads' next malloc; then every thread mallocs a block, tags it,
 * waits a little and checks the tag. The blocks of the second malloc stay
 * live until a second region frees them, and the host checks that no two
 * threads were given one address. The server must report the second free
 * every round (the test counts its messages) and never release the block. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TEAMS 4
#define THREADS 64
#define N (TEAMS * THREADS)

static int by_address(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 1000;
  uintptr_t addr[N], sorted[N];
  int aliased = 0, bad_tags = 0, nulls = 0;
  for (int r = 0; r < rounds; ++r) {
    int victim = (r * 97 + r / 7) % N;
    int bad = 0, null = 0;
#pragma omp target teams distribute parallel for num_teams(TEAMS)             \
    thread_limit(THREADS) map(from : addr) reduction(+ : bad, null)
    for (int i = 0; i < N; ++i) {
      long *a = malloc(64);
      if (a) {
        a[0] = i;
        free(a);
        if (i == victim)
          free(a); /* the double free */
      }
      volatile long *b = malloc(64);
      addr[i] = (uintptr_t)b;
      if (!b) {
        ++null;
        continue;
      }
      b[0] = (long)r * N + i;
      b[7] = i;
      for (int k = 0; k < 32; ++k)
        b[1] = b[1] + k;
      bad += b[0] != (long)r * N + i || b[7] != i;
    }
    for (int i = 0; i < N; ++i)
      sorted[i] = addr[i];
    qsort(sorted, N, sizeof sorted[0], by_address);
    for (int i = 1; i < N; ++i)
      aliased += sorted[i] != 0 && sorted[i] == sorted[i - 1];
    bad_tags += bad;
    nulls += null;
#pragma omp target teams distribute parallel for num_teams(TEAMS)             \
    thread_limit(THREADS) map(to : addr)
    for (int i = 0; i < N; ++i)
      free((void *)addr[i]);
  }
  printf("rounds %d aliased %d bad tags %d null %d\n", rounds, aliased,
         bad_tags, nulls);
  return 0;
}
