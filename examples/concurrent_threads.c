// Several host threads offloading at once: four threads of a `parallel`
// region each run their own chain of plain (synchronous) `target` regions on
// private data; then one thread spawns `target nowait` tasks with `depend`
// chains that the team's threads execute concurrently. Every result is
// integer arithmetic, so the output does not depend on the schedule.
//
// The regions are `target parallel for` (one team): the host fallback of a
// `teams` region nested in a host `parallel` region trips assertions of LLVM
// 16's libomp, and LLVM 16's cross-team reduction keeps its state in device
// globals shared by every kernel of the image, so concurrent *teams*
// reductions on one device would race in the device runtime itself.
#include <omp.h>
#include <stdio.h>

#define THREADS 4
#define N 2048
#define ROUNDS 6
#define CHAINS 8
#define STAGES 5
#define M 512

static long data[THREADS][N];
static long chain[CHAINS][M];
static long scratch[CHAINS][M];

int main(void) {
  // Part 1: plain target regions from 4 host threads at once.
  long sums[THREADS] = {0};
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num();
    long *v = data[t];
    for (int i = 0; i < N; i++)
      v[i] = (long)t * 1000 + i;
    for (int r = 0; r < ROUNDS; r++) {
      // Each round depends on the previous one through the mapped array.
#pragma omp target parallel for map(tofrom : v[0:N]) firstprivate(r, t)
      for (int i = 0; i < N; i++)
        v[i] = (v[i] * 3 + r + t) % 1000003;
    }
    long s = 0;
#pragma omp target parallel for reduction(+ : s) map(to : v[0:N])
    for (int i = 0; i < N; i++)
      s += v[i] ^ i;
    sums[t] = s;
  }
  for (int t = 0; t < THREADS; t++)
    printf("thread %d: sum=%ld first=%ld last=%ld\n", t, sums[t], data[t][0], data[t][N - 1]);

  // Part 2: target nowait tasks with depend chains, run by the team's threads.
  // Chain c: STAGES kernels, each reading the previous stage's output; chains
  // are independent of each other, so several are in flight at once.
#pragma omp parallel num_threads(THREADS)
#pragma omp single
  {
    for (int c = 0; c < CHAINS; c++) {
      long *v = chain[c], *w = scratch[c];
#pragma omp target enter data map(alloc : v[0:M], w[0:M]) nowait depend(out : v[0])
#pragma omp target parallel for nowait depend(inout : v[0]) firstprivate(c)
      for (int i = 0; i < M; i++)
        v[i] = c * 7 + i;
      // Each stage reads a neighbour of the previous stage's output, so it
      // goes through the scratch array (w = f(v), then v = w).
      for (int s = 1; s <= STAGES; s++) {
#pragma omp target parallel for nowait depend(inout : v[0]) firstprivate(s)
        for (int i = 0; i < M; i++)
          w[i] = v[i] * 2 + s - (v[(i + 1) % M] & 3);
#pragma omp target parallel for nowait depend(inout : v[0])
        for (int i = 0; i < M; i++)
          v[i] = w[i];
      }
#pragma omp target exit data map(from : v[0:M]) map(release : w[0:M]) nowait depend(inout : v[0])
    }
#pragma omp taskwait
  }
  for (int c = 0; c < CHAINS; c++) {
    long s = 0;
    for (int i = 0; i < M; i++)
      s += chain[c][i] * (i % 5 + 1);
    printf("chain %d: sum=%ld v[0]=%ld v[%d]=%ld\n", c, s, chain[c][0], M - 1, chain[c][M - 1]);
  }
  return 0;
}
