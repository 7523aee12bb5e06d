// `declare target` globals: a table initialised statically and read on the
// device, a counter and an array written on the device and brought back with
// `target update from`, and a device function called from a kernel.
#include <stdio.h>

#define N 1024

#pragma omp declare target
int table[8] = {1, 1, 2, 3, 5, 8, 13, 21};
int calls;
double results[N];
long scale = 10;

static long weigh(int i) { return table[i & 7] * scale + i; }
#pragma omp end declare target

int main(void) {
  // The device copy of `scale` changes only through `target update to`.
  scale = 1000;
#pragma omp target update to(scale)

#pragma omp target teams distribute parallel for
  for (int i = 0; i < N; i++)
    results[i] = (double)weigh(i) * 0.5;

#pragma omp target
  {
    for (int k = 0; k < 8; k++)
      table[k] *= 2;
    calls += 1;
  }
#pragma omp target
  { calls += 10; }

#pragma omp target update from(results, table, calls)
  double s = 0;
  for (int i = 0; i < N; i++)
    s += results[i];
  printf("results sum=%.1f r[9]=%.1f calls=%d\n", s, results[9], calls);
  printf("table:");
  for (int k = 0; k < 8; k++)
    printf(" %d", table[k]);
  printf("\n");

  // Host-side changes reach the device with `update to`.
  for (int k = 0; k < 8; k++)
    table[k] = k;
#pragma omp target update to(table)
  long dev = 0;
#pragma omp target map(tofrom : dev)
  {
    for (int k = 0; k < 8; k++)
      dev += weigh(k);
  }
  printf("dev=%ld\n", dev);
  return 0;
}
