/* malloc/free in every thread of 64 teams x 256, the memory written and
 * checked; calloc zeroed; realloc keeping contents; free(NULL); a failed
 * allocation returns NULL. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int bad_malloc = 0, bad_calloc = 0, bad_realloc = 0, got = 0;
#pragma omp target teams distribute parallel for num_teams(64) thread_limit(256) \
    reduction(+ : bad_malloc, bad_calloc, bad_realloc, got)
  for (int i = 0; i < 64 * 256; ++i) {
    int n = 1 + i % 37;
    int *p = malloc(n * sizeof(int));
    if (!p) {
      ++bad_malloc;
      continue;
    }
    ++got;
    for (int j = 0; j < n; ++j)
      p[j] = i * 1000 + j;
    long *z = calloc(n, sizeof(long));
    if (!z)
      ++bad_calloc;
    else
      for (int j = 0; j < n; ++j)
        bad_calloc += z[j] != 0;
    int *q = realloc(p, (n + 50) * sizeof(int));
    if (!q) {
      ++bad_realloc;
      free(p);
    } else {
      for (int j = 0; j < n; ++j)
        bad_realloc += q[j] != i * 1000 + j;
      q[n + 49] = 7;
      free(q);
    }
    free(z);
    free(NULL);
  }
  int huge_null = 0, zero_ok = 0;
  void *volatile escaped = NULL;
#pragma omp target map(from : huge_null, zero_ok, escaped)
  {
    void *h = malloc((size_t)1 << 60);
    huge_null = h == NULL;
    escaped = h; /* keeps the compiler from assuming success */
    free(h);
    void *r = realloc(NULL, 24);
    zero_ok = r != NULL;
    free(r);
  }
  printf("allocated %d bad malloc %d calloc %d realloc %d\n", got, bad_malloc,
         bad_calloc, bad_realloc);
  printf("huge allocation NULL %d realloc(NULL) works %d\n", huge_null, zero_ok);
  return 0;
}
