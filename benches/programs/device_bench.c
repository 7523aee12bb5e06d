// Memory- and compute-bound OpenMP offload kernels for `cargo xtask bench-device`.
//
// The same binary runs on the host (OMP_TARGET_OFFLOAD=DISABLED) and on a
// device; each mode prints `key value` lines: timings/bandwidths to compare
// and `check_*` values that must agree with the host's run.
//
//   device_bench stream [N_LOG2 [REPS]]   copy, scale, add, triad, dot over doubles
//   device_bench gather [REPS]            random indexed reads into a 64 MiB table
//   device_bench saxpy  [N_LOG2 [REPS]]   y = a*x + y over floats
//   device_bench matmul [N [REPS]]        N x N float matrix product
//   device_bench stencil [N [SWEEPS]]     Jacobi sweeps of an N x N grid, each
//                                         with a max reduction of the change
//   device_bench calls [N_LOG2 [REPS]]    a small noinline device function
//                                         called many times per element
//
// Bandwidths count bytes as STREAM does: copy and scale move 2 arrays per
// element, add and triad 3, dot reads 2. Every timing is the best of REPS runs
// (the first run of a kernel is not timed, so one-off costs don't count).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double best(double a, double b) { return a < b ? a : b; }

static int stream(long n, int reps) {
  double *a = malloc(n * sizeof(double));
  double *b = malloc(n * sizeof(double));
  double *c = malloc(n * sizeof(double));
  if (!a || !b || !c) return 1;
  for (long i = 0; i < n; ++i) {
    a[i] = 1.0;
    b[i] = 2.0;
    c[i] = 0.0;
  }
  const double s = 3.0;
  double t[5] = {1e30, 1e30, 1e30, 1e30, 1e30};
  double dot = 0.0;
#pragma omp target enter data map(to : a[0:n], b[0:n], c[0:n])
  for (int r = 0; r <= reps; ++r) {
    double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for simd
    for (long i = 0; i < n; ++i) c[i] = a[i];
    double t1 = omp_get_wtime();
#pragma omp target teams distribute parallel for simd
    for (long i = 0; i < n; ++i) b[i] = s * c[i];
    double t2 = omp_get_wtime();
#pragma omp target teams distribute parallel for simd
    for (long i = 0; i < n; ++i) c[i] = a[i] + b[i];
    double t3 = omp_get_wtime();
#pragma omp target teams distribute parallel for simd
    for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    double t4 = omp_get_wtime();
    double sum = 0.0;
#pragma omp target teams distribute parallel for simd reduction(+ : sum)
    for (long i = 0; i < n; ++i) sum += a[i] * b[i];
    double t5 = omp_get_wtime();
    dot = sum;
    if (r > 0) {
      t[0] = best(t[0], t1 - t0);
      t[1] = best(t[1], t2 - t1);
      t[2] = best(t[2], t3 - t2);
      t[3] = best(t[3], t4 - t3);
      t[4] = best(t[4], t5 - t4);
    }
  }
#pragma omp target exit data map(from : a[0:n], b[0:n], c[0:n])
  const double mb = 8.0 * (double)n / 1e9;
  printf("stream_elements %ld\n", n);
  printf("copy_gbs %.4f\n", 2 * mb / t[0]);
  printf("scale_gbs %.4f\n", 2 * mb / t[1]);
  printf("add_gbs %.4f\n", 3 * mb / t[2]);
  printf("triad_gbs %.4f\n", 3 * mb / t[3]);
  printf("dot_gbs %.4f\n", 2 * mb / t[4]);
  double sa = 0, sb = 0, sc = 0;
  for (long i = 0; i < n; ++i) {
    sa += a[i];
    sb += b[i];
    sc += c[i];
  }
  printf("check_a %.17g\ncheck_b %.17g\ncheck_c %.17g\ncheck_dot %.17g\n", sa, sb, sc, dot);
  free(a);
  free(b);
  free(c);
  return 0;
}

static int gather(int reps) {
  const long table_n = 1L << 23;   // 64 MiB of doubles
  const long lookups = 1L << 22;
  double *table = malloc(table_n * sizeof(double));
  unsigned *idx = malloc(lookups * sizeof(unsigned));
  if (!table || !idx) return 1;
  for (long j = 0; j < table_n; ++j) table[j] = (double)(j % 1009) * 0.25;
  unsigned long x = 0x9e3779b97f4a7c15ul;
  for (long i = 0; i < lookups; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    idx[i] = (unsigned)(x % (unsigned long)(table_n - 1));
  }
  double t = 1e30, sum = 0.0;
#pragma omp target enter data map(to : table[0:table_n], idx[0:lookups])
  for (int r = 0; r <= reps; ++r) {
    double s = 0.0;
    double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for simd reduction(+ : s)
    for (long i = 0; i < lookups; ++i) {
      unsigned k = idx[i];
      s += table[k] + 0.5 * table[k + 1];
    }
    double t1 = omp_get_wtime();
    if (r > 0) t = best(t, t1 - t0);
    sum = s;
  }
#pragma omp target exit data map(delete : table[0:table_n], idx[0:lookups])
  printf("gather_lookups %ld\n", lookups);
  printf("gather_ms %.4f\n", t * 1e3);
  printf("check_gather %.17g\n", sum);
  free(table);
  free(idx);
  return 0;
}

static int saxpy(long n, int reps) {
  float *x = malloc(n * sizeof(float));
  float *y = malloc(n * sizeof(float));
  if (!x || !y) return 1;
  for (long i = 0; i < n; ++i) {
    x[i] = (float)(i % 1000);
    y[i] = 1.0f;
  }
  const float a = 0.5f;
  double t = 1e30;
#pragma omp target enter data map(to : x[0:n], y[0:n])
  for (int r = 0; r <= reps; ++r) {
    double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for simd
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
    double t1 = omp_get_wtime();
    if (r > 0) t = best(t, t1 - t0);
  }
#pragma omp target exit data map(from : y[0:n]) map(delete : x[0:n])
  double sy = 0;
  for (long i = 0; i < n; ++i) sy += y[i];
  printf("saxpy_ms %.4f\n", t * 1e3);
  printf("check_saxpy %.17g\n", sy);
  free(x);
  free(y);
  return 0;
}

static int matmul(long n, int reps) {
  float *A = malloc(n * n * sizeof(float));
  float *B = malloc(n * n * sizeof(float));
  float *C = malloc(n * n * sizeof(float));
  if (!A || !B || !C) return 1;
  for (long i = 0; i < n * n; ++i) {
    A[i] = (float)(i % 7);
    B[i] = (float)(i % 5);
    C[i] = 0.0f;
  }
  double t = 1e30;
#pragma omp target enter data map(to : A[0:n * n], B[0:n * n]) map(alloc : C[0:n * n])
  for (int r = 0; r <= reps; ++r) {
    double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for collapse(2)
    for (long i = 0; i < n; ++i)
      for (long j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (long k = 0; k < n; ++k) acc += A[i * n + k] * B[k * n + j];
        C[i * n + j] = acc;
      }
    double t1 = omp_get_wtime();
    if (r > 0) t = best(t, t1 - t0);
  }
#pragma omp target exit data map(from : C[0:n * n]) map(delete : A[0:n * n], B[0:n * n])
  double sc = 0;
  for (long i = 0; i < n * n; ++i) sc += C[i];
  printf("matmul_ms %.4f\n", t * 1e3);
  printf("check_matmul %.17g\n", sc);
  free(A);
  free(B);
  free(C);
  return 0;
}

// Jacobi relaxation of an N x N grid (fixed boundary: 1.0 on the top row),
// one target region per sweep that also reduces the largest change (max), as
// a solver tests convergence. Timed: all sweeps after a first, untimed one.
static int stencil(long n, int sweeps) {
  double *u = malloc(n * n * sizeof(double));
  double *v = malloc(n * n * sizeof(double));
  if (!u || !v) return 1;
  for (long i = 0; i < n * n; ++i) u[i] = v[i] = i < n ? 1.0 : 0.0;
  double t = 1e30, change = 0.0;
#pragma omp target enter data map(to : u[0:n * n], v[0:n * n])
  for (int r = 0; r <= 1; ++r) {
    double t0 = omp_get_wtime();
    for (int s = 0; s < (r ? sweeps : 1); ++s) {
      double m = 0.0;
#pragma omp target teams distribute parallel for collapse(2) reduction(max : m)
      for (long i = 1; i < n - 1; ++i)
        for (long j = 1; j < n - 1; ++j) {
          double x = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] +
                             u[i * n + j - 1] + u[i * n + j + 1]);
          double d = x - u[i * n + j];
          v[i * n + j] = x;
          m = m > (d < 0 ? -d : d) ? m : (d < 0 ? -d : d);
        }
      double *w = u;
      u = v;
      v = w;
      change = m;
    }
    double t1 = omp_get_wtime();
    if (r > 0) t = t1 - t0;
  }
#pragma omp target exit data map(from : u[0:n * n]) map(delete : v[0:n * n])
  double su = 0;
  for (long i = 0; i < n * n; ++i) su += u[i];
  printf("stencil_ms %.4f\n", t * 1e3);
  printf("check_stencil %.17g\n", su);
  printf("check_stencil_change %.17g\n", change);
  free(u);
  free(v);
  return 0;
}

// A small device function, never inlined: -O2 code calls it too, so the
// call and its stack frame cost at every level.
#pragma omp declare target
__attribute__((noinline)) static float poly_step(float acc, float x, int k) {
  float p = acc * x;  // two statements: no contraction to an fma anywhere
  return p + (float)(k & 7) * 0.125f;
}
#pragma omp end declare target

static int calls(long n, int reps) {
  float *x = malloc(n * sizeof(float));
  float *y = malloc(n * sizeof(float));
  if (!x || !y) return 1;
  for (long i = 0; i < n; ++i) x[i] = (float)(i % 100) * 0.01f;
  double t = 1e30;
#pragma omp target enter data map(to : x[0:n]) map(alloc : y[0:n])
  for (int r = 0; r <= reps; ++r) {
    double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for
    for (long i = 0; i < n; ++i) {
      float acc = 0.0f;
      for (int k = 0; k < 16; ++k) acc = poly_step(acc, x[i], k);
      y[i] = acc;
    }
    double t1 = omp_get_wtime();
    if (r > 0) t = best(t, t1 - t0);
  }
#pragma omp target exit data map(from : y[0:n]) map(delete : x[0:n])
  double sy = 0;
  for (long i = 0; i < n; ++i) sy += y[i];
  printf("calls_ms %.4f\n", t * 1e3);
  printf("check_calls %.9g\n", sy);
  free(x);
  free(y);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  long p1 = argc > 2 ? atol(argv[2]) : 0;
  int p2 = argc > 3 ? atoi(argv[3]) : 0;
  if (!strcmp(mode, "stream")) return stream(1L << (p1 ? p1 : 24), p2 ? p2 : 2);
  if (!strcmp(mode, "gather")) return gather(p1 ? (int)p1 : 3);
  if (!strcmp(mode, "saxpy")) return saxpy(1L << (p1 ? p1 : 24), p2 ? p2 : 3);
  if (!strcmp(mode, "matmul")) return matmul(p1 ? p1 : 512, p2 ? p2 : 2);
  if (!strcmp(mode, "stencil")) return stencil(p1 ? p1 : 256, p2 ? p2 : 20);
  if (!strcmp(mode, "calls")) return calls(1L << (p1 ? p1 : 20), p2 ? p2 : 2);
  fprintf(stderr, "usage: %s stream|gather|saxpy|matmul|stencil|calls [args]\n", argv[0]);
  return 2;
}
