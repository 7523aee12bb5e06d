// Asynchronous offload: `target nowait` with `depend` chains, independent
// kernels overlapping, `target enter/exit data nowait`, and taskwait.
#include <stdio.h>

#define N 4096

int main(void) {
  static int a[N], b[N], c[N];
  for (int i = 0; i < N; i++)
    a[i] = i;

#pragma omp target enter data map(to : a) map(alloc : b, c) nowait depend(out : a, b, c)

  // a -> b -> c is a chain; the second stage must see the first one's output.
#pragma omp target teams distribute parallel for nowait depend(in : a) depend(out : b)
  for (int i = 0; i < N; i++)
    b[i] = a[i] * 2 + 1;
#pragma omp target teams distribute parallel for nowait depend(in : b) depend(out : c)
  for (int i = 0; i < N; i++)
    c[i] = b[i] + b[N - 1 - i];
  // Independent of c: updates a in place once b has been read by stage two.
#pragma omp target teams distribute parallel for nowait depend(in : b) depend(inout : a)
  for (int i = 0; i < N; i++)
    a[i] = -a[i];

#pragma omp target exit data map(from : a, b, c) nowait depend(inout : a, b, c)
#pragma omp taskwait

  long sa = 0, sb = 0, sc = 0;
  for (int i = 0; i < N; i++) {
    sa += a[i];
    sb += b[i];
    sc += c[i];
  }
  printf("chain: a=%ld b=%ld c=%ld c[0]=%d c[100]=%d\n", sa, sb, sc, c[0], c[100]);

  // Several independent nowait regions writing disjoint slices, then a join.
  static double parts[8][256];
  for (int p = 0; p < 8; p++) {
#pragma omp target teams distribute parallel for nowait map(from : parts[p][0:256]) \
    firstprivate(p)
    for (int i = 0; i < 256; i++)
      parts[p][i] = (double)(p * 256 + i) * 0.25;
  }
#pragma omp taskwait
  double total = 0;
  for (int p = 0; p < 8; p++)
    for (int i = 0; i < 256; i++)
      total += parts[p][i];
  printf("slices total=%.2f last=%.2f\n", total, parts[7][255]);
  return 0;
}
