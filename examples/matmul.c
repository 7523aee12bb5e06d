// Dense matrix multiply three ways: collapse(2) SPMD, a `target parallel for`
// (one team) with a `simd` inner loop, and a teams-distribute outer loop with
// a parallel inner loop. Entries are small integers stored in doubles and
// floats, so every product and sum is exact whatever the evaluation order.
#include <stdio.h>

#define N 48

static double A[N][N], B[N][N], C1[N][N], C2[N][N], C3[N][N];
static float FA[N][N], FC[N][N];

int main(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = (i + 2 * j) % 7 - 3;
      B[i][j] = (3 * i + j) % 5 - 2;
      FA[i][j] = (float)((i * j) % 4);
    }

#pragma omp target teams distribute parallel for collapse(2) map(to : A, B) map(from : C1)
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < N; k++)
        s += A[i][k] * B[k][j];
      C1[i][j] = s;
    }

#pragma omp target parallel for map(to : A, B) map(from : C2)
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
#pragma omp simd reduction(+ : s)
      for (int k = 0; k < N; k++)
        s += A[i][k] * B[k][j];
      C2[i][j] = s;
    }

#pragma omp target teams distribute map(to : FA) map(from : FC)
  for (int i = 0; i < N; i++) {
#pragma omp parallel for
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int k = 0; k < N; k++)
        s += FA[i][k] * FA[j][k];
      FC[i][j] = s;
    }
  }

#pragma omp target teams distribute parallel for collapse(2) map(to : C1, C2) map(from : C3)
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      C3[i][j] = C1[i][j] - C2[i][j] + C1[j][i];

  double t1 = 0, t3 = 0;
  float tf = 0;
  int diff = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      t1 += C1[i][j] * (i + 1);
      t3 += C3[i][j];
      tf += FC[i][j];
      diff += C1[i][j] != C2[i][j];
    }
  printf("C1 weighted=%.1f C1[5][7]=%.1f diff=%d\n", t1, C1[5][7], diff);
  printf("C3 sum=%.1f FC sum=%.1f FC[10][11]=%.1f\n", t3, tf, FC[10][11]);
  return 0;
}
