/* printf in target regions through libcgpu (link with -lcgpu):
 *   printf_bench lines    100 teams x 256 threads, one printf each, timed
 *   printf_bench roundtrip N   N printfs from one lane in one region, and
 *                              N empty iterations, timed
 * Device output goes to stdout (send it to /dev/null); the timings go to
 * stderr as "key value" lines. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "lines";
  /* Warm up: image loaded, server thread started. */
#pragma omp target
  { printf("warm-up\n"); }
  fflush(stdout);
  if (strcmp(mode, "lines") == 0) {
    int n = 100 * 256;
    double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for num_teams(100) thread_limit(256)
    for (int i = 0; i < n; ++i)
      printf("thread %5d: %08x %.3f\n", i, i * 2654435761u, i / 7.0);
    double t = omp_get_wtime() - t0;
    fprintf(stderr, "printf_lines %d\nprintf_seconds %.6f\nprintf_lines_per_s %.1f\n",
            n, t, n / t);
  } else {
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    double t0 = omp_get_wtime();
#pragma omp target map(to : n)
    for (int i = 0; i < n; ++i)
      printf("one lane %d\n", i);
    double t1 = omp_get_wtime();
    int sink = 0;
#pragma omp target map(to : n) map(tofrom : sink)
    for (int i = 0; i < n; ++i)
      sink += i;
    double t2 = omp_get_wtime();
    fprintf(stderr, "printf_roundtrip_us %.3f\n",
            ((t1 - t0) - (t2 - t1)) * 1e6 / n);
  }
  return 0;
}
