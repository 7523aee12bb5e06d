// Micro-benchmarks of an AMDGPU offload plugin, driven through libomptarget:
//
//   plugin_bench roundtrip N      N empty `target` regions, each timed: median,
//                                 p10, p90 in microseconds
//   plugin_bench nowait N         N empty `target nowait` regions, then one
//                                 taskwait: total seconds and regions per second
//   plugin_bench launches N       N empty `target` regions, untimed (for
//                                 callgrind: instructions per launch)
//   plugin_bench map BYTES REPS   median microseconds of `target enter data
//                                 map(to)` + `target exit data map(from)` of a
//                                 BYTES buffer, and of `target update to` and
//                                 `target update from` of it while mapped
//
// Output lines are `key value...` for the driver (`cargo xtask bench`).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Sorts `v` and prints `key median p10 p90`.
static void report(const char *key, double *v, int n) {
  qsort(v, n, sizeof(double), cmp_double);
  printf("%s %.3f %.3f %.3f\n", key, v[n / 2], v[n / 10], v[(n * 9) / 10]);
}

static void empty_region(void) {
#pragma omp target
  {
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s roundtrip|nowait|launches N | map BYTES REPS\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  long n = atol(argv[2]);
  if (n <= 0) {
    fprintf(stderr, "N must be positive\n");
    return 2;
  }
  // The first region pays for the image load and device initialisation.
  empty_region();

  if (!strcmp(mode, "roundtrip")) {
    double *t = malloc(n * sizeof(double));
    for (long i = 0; i < n; i++) {
      double t0 = now_us();
      empty_region();
      t[i] = now_us() - t0;
    }
    report("roundtrip_us", t, (int)n);
  } else if (!strcmp(mode, "launches")) {
    for (long i = 0; i < n; i++)
      empty_region();
    printf("launches %ld\n", n);
  } else if (!strcmp(mode, "nowait")) {
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
#pragma omp target nowait
      {
      }
    }
#pragma omp taskwait
    double dt = (now_us() - t0) / 1e6;
    printf("nowait_s %.6f %.1f\n", dt, n / dt);
  } else if (!strcmp(mode, "map")) {
    int reps = argc > 3 ? atoi(argv[3]) : 20;
    size_t bytes = (size_t)n;
    char *a = malloc(bytes);
    memset(a, 1, bytes);
    double *tm = malloc(reps * sizeof(double));
    double *tt = malloc(reps * sizeof(double));
    double *tf = malloc(reps * sizeof(double));
    for (int r = 0; r < reps; r++) {
      double t0 = now_us();
#pragma omp target enter data map(to : a[0:bytes])
#pragma omp target exit data map(from : a[0:bytes])
      tm[r] = now_us() - t0;
    }
#pragma omp target enter data map(alloc : a[0:bytes])
    for (int r = 0; r < reps; r++) {
      double t0 = now_us();
#pragma omp target update to(a[0:bytes])
      tt[r] = now_us() - t0;
      t0 = now_us();
#pragma omp target update from(a[0:bytes])
      tf[r] = now_us() - t0;
    }
#pragma omp target exit data map(delete : a[0:bytes])
    report("map_tofrom_us", tm, reps);
    report("update_to_us", tt, reps);
    report("update_from_us", tf, reps);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  return 0;
}
