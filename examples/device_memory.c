// Device memory managed by hand: omp_target_alloc / omp_target_free,
// omp_target_memcpy in all directions (host<->device, device<->device),
// is_device_ptr, and omp_target_associate_ptr.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 3000

int main(void) {
  int dev = omp_get_num_devices() > 0 ? omp_get_default_device() : omp_get_initial_device();
  int host = omp_get_initial_device();
  long *h = malloc(N * sizeof(long));
  for (int i = 0; i < N; i++)
    h[i] = i * 3 - 100;

  long *d1 = omp_target_alloc(N * sizeof(long), dev);
  long *d2 = omp_target_alloc(N * sizeof(long), dev);
  if (!d1 || !d2) {
    printf("omp_target_alloc failed\n");
    return 1;
  }
  omp_target_memcpy(d1, h, N * sizeof(long), 0, 0, dev, host);

#pragma omp target teams distribute parallel for is_device_ptr(d1, d2) device(dev)
  for (int i = 0; i < N; i++)
    d2[i] = d1[i] * d1[i];

  // Device-to-device copy of the second half onto the first, with offsets.
  omp_target_memcpy(d1, d2, (N / 2) * sizeof(long), 0, (N / 2) * sizeof(long), dev, dev);

  long *back = calloc(N, sizeof(long));
  omp_target_memcpy(back, d1, N * sizeof(long), 0, 0, host, dev);
  long s = 0;
  for (int i = 0; i < N; i++)
    s += back[i] % 1000003;
  printf("memcpy: back[0]=%ld back[1499]=%ld back[1500]=%ld sum=%ld\n", back[0], back[1499],
         back[1500], s);

  // A device buffer associated with a host buffer: maps of the host buffer use it.
  int *hv = malloc(64 * sizeof(int));
  int *dv = omp_target_alloc(64 * sizeof(int), dev);
  for (int i = 0; i < 64; i++)
    hv[i] = i;
  omp_target_memcpy(dv, hv, 64 * sizeof(int), 0, 0, dev, host);
  // (Association with the host device fails by definition; only the effect is printed.)
  (void)omp_target_associate_ptr(hv, dv, 64 * sizeof(int), 0, dev);
#pragma omp target map(tofrom : hv[0:64]) device(dev)
  for (int i = 0; i < 64; i++)
    hv[i] += 1000;
  // An associated buffer is never copied by maps; `update from` brings it back.
#pragma omp target update from(hv[0:64]) device(dev)
  omp_target_disassociate_ptr(hv, dev);
  int hs = 0;
  for (int i = 0; i < 64; i++)
    hs += hv[i];
  printf("associate: sum=%d hv[63]=%d\n", hs, hv[63]);

  omp_target_free(d1, dev);
  omp_target_free(d2, dev);
  omp_target_free(dv, dev);
  free(h);
  free(back);
  free(hv);
  return 0;
}
