// Device data environment: `target data` regions, unstructured `enter data` /
// `exit data`, `target update` in both directions, `always` maps, and
// presence checks through omp_target_is_present.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 2048

int main(void) {
  int dev = omp_get_default_device();
  int *a = malloc(N * sizeof(int));
  int *b = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) {
    a[i] = i;
    b[i] = 0;
  }

#pragma omp target data map(to : a[0:N]) map(from : b[0:N])
  {
#pragma omp target teams distribute parallel for
    for (int i = 0; i < N; i++)
      b[i] = a[i] * 3;

    // Change a on the host and publish it with `update to`.
    for (int i = 0; i < N; i++)
      a[i] = 2 * i;
#pragma omp target update to(a[0:N])
#pragma omp target teams distribute parallel for
    for (int i = 0; i < N; i++)
      b[i] += a[i];
    // Bring b back early, change it on the host, and send it again.
#pragma omp target update from(b[0:N])
    for (int i = 0; i < N; i += 2)
      b[i] = -b[i];
#pragma omp target update to(b[0:N])
#pragma omp target teams distribute parallel for
    for (int i = 0; i < N; i++)
      b[i] += 1;
  }
  long sb = 0;
  for (int i = 0; i < N; i++)
    sb += b[i];
  printf("target data: b[10]=%d b[11]=%d sum=%ld\n", b[10], b[11], sb);

  // Unstructured mapping.
  double *v = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++)
    v[i] = i * 0.5;
#pragma omp target enter data map(to : v[0:N])
  int present = omp_target_is_present(v, dev);
#pragma omp target teams distribute parallel for
  for (int i = 0; i < N; i++)
    v[i] = v[i] * 4.0 + 1.0;
#pragma omp target update from(v[0:N / 2])
  double first_half = 0;
  for (int i = 0; i < N / 2; i++)
    first_half += v[i];
#pragma omp target exit data map(from : v[0:N])
  double after = 0;
  for (int i = 0; i < N; i++)
    after += v[i];
  printf("enter/exit: present=%d first=%.1f after=%.1f\n", present != 0, first_half, after);

  // `always` re-copies a mapped array at region entry.
  int c[16];
  for (int i = 0; i < 16; i++)
    c[i] = i;
#pragma omp target enter data map(to : c)
  for (int i = 0; i < 16; i++)
    c[i] = 100 + i;
  int csum = 0;
#pragma omp target map(always, to : c) map(tofrom : csum)
  for (int i = 0; i < 16; i++)
    csum += c[i];
#pragma omp target exit data map(delete : c)
  printf("always: csum=%d\n", csum);
  free(a);
  free(b);
  free(v);
  return 0;
}
