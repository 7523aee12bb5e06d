// The demo: a 2D Jacobi heat stencil. The grid stays on the device for all
// sweeps inside one `target data` region; every sweep is a collapse(2) SPMD
// kernel followed by a max-residual reduction, and the loop stops when the
// residual is small or after a fixed number of sweeps. Each new value is
// 0.25 * (sum of four neighbours): the same IEEE operations in the same order
// on host and device, and max is order-independent, so results match exactly.
#include <math.h>
#include <stdio.h>

#define NX 64
#define NY 48
#define SWEEPS 60

static double u[NY][NX], unew[NY][NX];

int main(void) {
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++)
      u[j][i] = 0.0;
  // Hot top edge, warm left edge.
  for (int i = 0; i < NX; i++)
    u[0][i] = 100.0;
  for (int j = 0; j < NY; j++)
    u[j][0] = 50.0;
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++)
      unew[j][i] = u[j][i];

  double residual = 0.0;
  int sweep = 0;
#pragma omp target data map(tofrom : u) map(to : unew)
  {
    for (sweep = 1; sweep <= SWEEPS; sweep++) {
#pragma omp target teams distribute parallel for collapse(2)
      for (int j = 1; j < NY - 1; j++)
        for (int i = 1; i < NX - 1; i++)
          unew[j][i] = 0.25 * (u[j - 1][i] + u[j + 1][i] + u[j][i - 1] + u[j][i + 1]);
      residual = 0.0;
#pragma omp target teams distribute parallel for collapse(2) reduction(max : residual)
      for (int j = 1; j < NY - 1; j++)
        for (int i = 1; i < NX - 1; i++) {
          double d = fabs(unew[j][i] - u[j][i]);
          residual = d > residual ? d : residual;
          u[j][i] = unew[j][i];
        }
      if (sweep % 20 == 0)
        printf("sweep %d residual %.17g\n", sweep, residual);
      if (residual < 1e-3)
        break;
    }
  }
  double total = 0.0;
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++)
      total += u[j][i];
  printf("final residual %.17g total %.17g centre %.17g\n", residual, total, u[NY / 2][NX / 2]);
  return 0;
}
