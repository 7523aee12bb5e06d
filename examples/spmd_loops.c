// SPMD kernels: `target teams distribute parallel for`, with and without
// collapse(2), over int and double arrays. Values stay small integers so the
// host and the device compute bit-identical doubles.
#include <stdio.h>

#define N 4096
#define ROWS 48
#define COLS 40

int main(void) {
  static double x[N], y[N];
  static int m[ROWS][COLS], t[COLS][ROWS];
  for (int i = 0; i < N; i++) {
    x[i] = i % 97;
    y[i] = 2 * (i % 13);
  }
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++)
      m[r][c] = r * 1000 + c;

  double a = 3.0;
#pragma omp target teams distribute parallel for map(to : x[0:N]) map(tofrom : y[0:N])
  for (int i = 0; i < N; i++)
    y[i] = a * x[i] + y[i];

  // collapse(2): a transpose plus an offset, indexed by both loop variables.
#pragma omp target teams distribute parallel for collapse(2) map(to : m) map(from : t)
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++)
      t[c][r] = m[r][c] + r - c;

  // A loop whose bounds are not a multiple of any workgroup size, with a stride.
  static long sq[1000];
#pragma omp target teams distribute parallel for map(from : sq[0:1000])
  for (int i = 0; i < 1000; i++)
    sq[i] = (long)i * i * i - 7 * i;

  double sum = 0;
  for (int i = 0; i < N; i++)
    sum += y[i];
  long tsum = 0;
  for (int c = 0; c < COLS; c++)
    for (int r = 0; r < ROWS; r++)
      tsum += (long)t[c][r] * (c + 1);
  long ssum = 0;
  for (int i = 0; i < 1000; i++)
    ssum ^= sq[i] + i;
  printf("saxpy sum=%.1f y[0]=%.1f y[7]=%.1f y[4095]=%.1f\n", sum, y[0], y[7], y[N - 1]);
  printf("transpose t[3][5]=%d t[39][47]=%d weighted=%ld\n", t[3][5], t[39][47], tsum);
  printf("cubes sq[999]=%ld xor=%ld\n", sq[999], ssum);
  return 0;
}
