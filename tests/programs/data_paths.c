// Data movement through the plugin without kernels: omp_target_alloc +
// omp_target_memcpy host <-> device <-> device (same device and, with two
// devices, between them), target enter/exit data and update of small and
// large arrays, and pinned host memory. Every check compares with the
// host's own copy of the data and prints "<what>: ok" or "<what>: BAD".
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *llvm_omp_target_alloc_host(size_t size, int device);
void llvm_omp_target_free_host(void *ptr, int device);

static int failures = 0;

static void report(const char *what, size_t n, const void *a, const void *b) {
  int same = memcmp(a, b, n) == 0;
  printf("%s %zu: %s\n", what, n, same ? "ok" : "BAD");
  if (!same) failures++;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 2654435761u) >> 13) ^ seed;
}

int main(void) {
  int ndev = omp_get_num_devices();
  int host = omp_get_initial_device();
  printf("devices=%d\n", ndev);
  size_t sizes[] = {8, 4000, 3u << 20};
  for (int k = 0; k < 3; k++) {
    size_t n = sizes[k];
    unsigned char *src = malloc(n), *back = calloc(n, 1);
    fill(src, n, (unsigned)k);
    void *d0 = omp_target_alloc(n, 0), *d0b = omp_target_alloc(n, 0);
    if (!d0 || !d0b) { printf("alloc %zu: BAD\n", n); return 1; }
    omp_target_memcpy(d0, src, n, 0, 0, 0, host);
    omp_target_memcpy(d0b, d0, n, 0, 0, 0, 0);
    void *last = d0b;
    int last_dev = 0;
    if (ndev > 1) {
      void *d1 = omp_target_alloc(n, 1);
      omp_target_memcpy(d1, d0b, n, 0, 0, 1, 0);
      last = d1;
      last_dev = 1;
    }
    omp_target_memcpy(back, last, n, 0, 0, host, last_dev);
    report("memcpy", n, src, back);
    omp_target_free(d0, 0);
    omp_target_free(d0b, 0);
    if (last_dev) omp_target_free(last, 1);
    free(src);
    free(back);
  }

  // Mapped arrays: 4 MiB (locked for the transfer) and 128 B (staged).
  size_t N = 1u << 19;
  double *big = malloc(N * sizeof(double)), *ref = malloc(N * sizeof(double));
  double small[16], small_ref[16];
  for (size_t i = 0; i < N; i++) big[i] = ref[i] = (double)i * 0.5;
  for (int i = 0; i < 16; i++) small[i] = small_ref[i] = i * 3.0;
#pragma omp target enter data map(to : big[0:N], small[0:16])
  for (size_t i = 0; i < N; i++) big[i] = -1.0;
  for (int i = 0; i < 16; i++) small[i] = -1.0;
#pragma omp target update from(big[0:N], small[0:16])
  report("update-from-big", N * sizeof(double), big, ref);
  report("update-from-small", sizeof small, small, small_ref);
  for (size_t i = 0; i < N; i++) big[i] = ref[i] = (double)i + 7.0;
  for (int i = 0; i < 16; i++) small[i] = small_ref[i] = i + 0.25;
#pragma omp target update to(big[0:N], small[0:16])
  memset(big, 0, N * sizeof(double));
  memset(small, 0, sizeof small);
#pragma omp target exit data map(from : big[0:N], small[0:16])
  report("exit-data-big", N * sizeof(double), big, ref);
  report("exit-data-small", sizeof small, small, small_ref);

  // Pinned host memory from the plugin: direct copies.
  size_t P = 100000;
  unsigned char *pinned = llvm_omp_target_alloc_host(P, 0);
  unsigned char *expect = malloc(P);
  if (!pinned) { printf("alloc-host: BAD\n"); return 1; }
  fill(pinned, P, 99);
  memcpy(expect, pinned, P);
  void *dp = omp_target_alloc(P, 0);
  omp_target_memcpy(dp, pinned, P, 0, 0, 0, host);
  memset(pinned, 0, P);
  omp_target_memcpy(pinned, dp, P, 0, 0, host, 0);
  report("pinned", P, pinned, expect);
  omp_target_free(dp, 0);
  llvm_omp_target_free_host(pinned, 0);

  printf("failures=%d\n", failures);
  return failures != 0;
}
