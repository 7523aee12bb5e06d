// One SPMD kernel over 1000 elements; the result is checked on the host.
#include <stdio.h>

int main(void) {
  int n = 1000;
  float a = 2.0f, x[1000], y[1000];
  for (int i = 0; i < n; i++) { x[i] = (float)i; y[i] = 1.0f; }
#pragma omp target teams distribute parallel for map(to : x[0:n]) map(tofrom : y[0:n])
  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
  int bad = 0;
  for (int i = 0; i < n; i++)
    if (y[i] != 2.0f * (float)i + 1.0f) bad++;
  printf("bad=%d\n", bad);
  return bad != 0;
}
