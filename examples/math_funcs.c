// Math library calls on the device (sqrt, exp, log, sin, cos, pow, fabs,
// floor, fmin/fmax, ... in float and double). Device and host libraries may
// differ in the last bit for transcendental functions, so those results are
// printed with 6 significant digits; exactly rounded operations (sqrt of
// squares, floor, fabs, fmin, ldexp) are printed exactly.
#include <math.h>
#include <stdio.h>

#define N 64

int main(void) {
  static double in[N], exact[N][6], approx[N][7];
  static float fin[N], fexact[N][3], fapprox[N][4];
  for (int i = 0; i < N; i++) {
    in[i] = (i - 20) * 0.375;
    fin[i] = (float)(i + 1) * 0.125f;
  }

#pragma omp target teams distribute parallel for map(to : in, fin) \
    map(from : exact, approx, fexact, fapprox)
  for (int i = 0; i < N; i++) {
    double x = in[i];
    exact[i][0] = sqrt((double)(i * i));
    exact[i][1] = fabs(x);
    exact[i][2] = floor(x);
    exact[i][3] = fmax(x, 1.5) + fmin(x, -1.5);
    exact[i][4] = ldexp(x, 5);
    exact[i][5] = ceil(x) + trunc(x) + round(x);
    approx[i][0] = exp(x * 0.25);
    approx[i][1] = sin(x);
    approx[i][2] = cos(x);
    approx[i][3] = pow(fabs(x) + 1.0, 1.5);
    approx[i][4] = log(fabs(x) + 0.5);
    approx[i][5] = atan2(x, 2.0) + tanh(x * 0.1);
    approx[i][6] = sqrt(fabs(x) + 2.0);
    float y = fin[i];
    fexact[i][0] = sqrtf((float)(i * i));
    fexact[i][1] = fabsf(-y);
    fexact[i][2] = floorf(y * 3.0f);
    fapprox[i][0] = expf(y * 0.5f);
    fapprox[i][1] = sinf(y) + cosf(y);
    fapprox[i][2] = powf(y, 2.5f);
    fapprox[i][3] = logf(y) + sqrtf(y);
  }

  for (int k = 0; k < 6; k++) {
    double s = 0;
    for (int i = 0; i < N; i++)
      s += exact[i][k];
    printf("exact[%d] sum=%.17g e[13]=%.17g\n", k, s, exact[13][k]);
  }
  for (int k = 0; k < 3; k++) {
    float s = 0;
    for (int i = 0; i < N; i++)
      s += fexact[i][k];
    printf("fexact[%d] sum=%.9g\n", k, s);
  }
  for (int i = 0; i < N; i += 9) {
    printf("x=%g:", in[i]);
    for (int k = 0; k < 7; k++)
      printf(" %.6g", approx[i][k]);
    printf(" |");
    for (int k = 0; k < 4; k++)
      printf(" %.6g", fapprox[i][k]);
    printf("\n");
  }
  return 0;
}
