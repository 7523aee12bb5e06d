// Reductions across teams and threads: +, max, min on int, float and double.
// Float and double inputs are small integers or powers of two, so every
// partial sum is exact and the order of combination cannot change the result.
#include <stdio.h>

#define N 10000

int main(void) {
  static int a[N];
  static float f[N];
  static double d[N];
  for (int i = 0; i < N; i++) {
    a[i] = (i * 7919) % 10007 - 5000;
    f[i] = (float)((i % 17) - 8) * 0.25f;
    d[i] = (double)((i * 31) % 1009) * 0.5;
  }

  int isum = 0, imax = -1000000, imin = 1000000;
  float fsum = 0.0f, fmax = -1e30f, fmin = 1e30f;
  double dsum = 0.0, dmax = -1e300, dmin = 1e300;
  long lsum = 0;

#pragma omp target teams distribute parallel for map(to : a) reduction(+ : isum) \
    reduction(max : imax) reduction(min : imin)
  for (int i = 0; i < N; i++) {
    isum += a[i];
    imax = a[i] > imax ? a[i] : imax;
    imin = a[i] < imin ? a[i] : imin;
  }

#pragma omp target teams distribute parallel for map(to : f) reduction(+ : fsum) \
    reduction(max : fmax) reduction(min : fmin)
  for (int i = 0; i < N; i++) {
    fsum += f[i];
    fmax = f[i] > fmax ? f[i] : fmax;
    fmin = f[i] < fmin ? f[i] : fmin;
  }

#pragma omp target teams distribute parallel for map(to : d) reduction(+ : dsum) \
    reduction(max : dmax) reduction(min : dmin)
  for (int i = 0; i < N; i++) {
    dsum += d[i];
    dmax = d[i] > dmax ? d[i] : dmax;
    dmin = d[i] < dmin ? d[i] : dmin;
  }

  // A long reduction with an explicit team count, and a reduction over a
  // collapsed nest.
#pragma omp target teams distribute parallel for num_teams(7) map(to : a) reduction(+ : lsum)
  for (int i = 0; i < N; i++)
    lsum += (long)a[i] * a[i];

  int nest = 0;
#pragma omp target teams distribute parallel for collapse(2) reduction(+ : nest)
  for (int i = 0; i < 50; i++)
    for (int j = 0; j < 60; j++)
      nest += (i ^ j) & 7;

  printf("int: sum=%d max=%d min=%d\n", isum, imax, imin);
  printf("float: sum=%.4f max=%.4f min=%.4f\n", fsum, fmax, fmin);
  printf("double: sum=%.3f max=%.3f min=%.3f\n", dsum, dmax, dmin);
  printf("long: sum=%ld nest=%d\n", lsum, nest);
  return 0;
}
