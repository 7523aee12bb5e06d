// STREAM copy and triad over malloc'ed arrays under unified shared memory,
// for `cargo xtask bench-device`: the kernels get the host pointers
// themselves (no map, no device copy), so on the virtual gfx90a they run
// with XNACK on (HSA_XNACK=1) over the process's own heap. A program of its
// own because `requires` holds for a whole translation unit; the same
// kernels over mapped device arrays are device_bench.c's `stream`.
//
//   device_bench_usm stream [N_LOG2 [REPS]]       arrays from plain malloc
//   device_bench_usm stream-thp [N_LOG2 [REPS]]   2 MiB-aligned, madvise(MADV_HUGEPAGE)
//
// Prints `usm_copy_gbs` and `usm_triad_gbs` (`usm_thp_*` for stream-thp;
// bytes counted as STREAM does: copy moves 2 arrays per element, triad 3;
// best of REPS timed runs after one untimed) and `check_*` sums that must
// equal the host run's.
//
// Why two: where the system leaves transparent huge pages to madvise (as the
// machine this was written on does), malloc gives 4 KiB pages, while the
// virtual device's own memory pools ask for huge pages; the same kernels then
// stream the malloc'ed arrays at about 0.7-0.8 of the pool's speed (callgrind
// counts the same instructions for both: the difference is the memory, not
// the path). stream-thp shows the same kernels over malloc'ed memory with
// huge pages.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#pragma omp requires unified_shared_memory

static double best(double a, double b) { return a < b ? a : b; }

// n doubles from malloc, or 2 MiB-aligned and advised to use huge pages.
static double *array(long n, int thp) {
  if (!thp)
    return malloc(n * sizeof(double));
  void *p = NULL;
  if (posix_memalign(&p, 2UL << 20, n * sizeof(double)) != 0)
    return NULL;
  // Advisory: without transparent huge pages the memory works the same.
  madvise(p, n * sizeof(double), MADV_HUGEPAGE);
  return p;
}

static int stream(long n, int reps, int thp) {
  double *a = array(n, thp);
  double *b = array(n, thp);
  double *c = array(n, thp);
  if (!a || !b || !c)
    return 1;
  for (long i = 0; i < n; ++i) {
    a[i] = 1.0;
    b[i] = 2.0;
    c[i] = 0.0;
  }
  const double s = 3.0;
  double t[2] = {1e30, 1e30};
  for (int r = 0; r <= reps; ++r) {
    double t0 = omp_get_wtime();
#pragma omp target teams distribute parallel for simd
    for (long i = 0; i < n; ++i)
      c[i] = a[i];
    double t1 = omp_get_wtime();
#pragma omp target teams distribute parallel for simd
    for (long i = 0; i < n; ++i)
      a[i] = b[i] + s * c[i];
    double t2 = omp_get_wtime();
    if (r > 0) {
      t[0] = best(t[0], t1 - t0);
      t[1] = best(t[1], t2 - t1);
    }
  }
  const double gb = 8.0 * (double)n / 1e9;
  printf("stream_elements %ld\n", n);
  const char *kind = thp ? "usm_thp" : "usm";
  printf("%s_copy_gbs %.4f\n", kind, 2 * gb / t[0]);
  printf("%s_triad_gbs %.4f\n", kind, 3 * gb / t[1]);
  double sa = 0, sc = 0;
  for (long i = 0; i < n; ++i) {
    sa += a[i];
    sc += c[i];
  }
  printf("check_usm_a %.17g\ncheck_usm_c %.17g\n", sa, sc);
  free(a);
  free(b);
  free(c);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  long p1 = argc > 2 ? atol(argv[2]) : 0;
  int p2 = argc > 3 ? atoi(argv[3]) : 0;
  if (!strcmp(mode, "stream") || !strcmp(mode, "stream-thp"))
    return stream(1L << (p1 ? p1 : 24), p2 ? p2 : 2, !strcmp(mode, "stream-thp"));
  fprintf(stderr, "usage: %s stream|stream-thp [N_LOG2 [REPS]]\n", argv[0]);
  return 2;
}
