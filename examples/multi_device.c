// HSA_SIM_GPUS=2
// Two devices: work split across both with `device(d) nowait`, a buffer
// filled on one device and copied to the other with omp_target_memcpy, then
// used by a `device(1)` region. With fewer than two devices (or on the host)
// the program uses what it has, so stdout is the same everywhere; the devices
// actually used are reported on stderr.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 6000

int main(void) {
  int ndev = omp_get_num_devices();
  int host = omp_get_initial_device();
  int d0 = ndev > 0 ? 0 : host;
  int d1 = ndev > 1 ? 1 : d0;
  fprintf(stderr, "multi_device: devices %d %d of %d\n", d0, d1, ndev);

  // LLVM 16's C++ AMDGPU plugin cannot initialize two devices at once: each
  // device builds its memory pool objects with the plugin-wide
  // llvm::BumpPtrAllocator, which has no lock, so the two threads can be
  // handed the same object and one device then allocates from the other's
  // memory (its kernels fault). The tests run LLVM's plugin with this
  // variable set: an empty region on each device, one after the other, makes
  // every first use below find both devices ready. Our plugin runs without it.
  if (getenv("OMPTARGET_WORKAROUND_LLVM16_CONCURRENT_DEVICE_INIT")) {
#pragma omp target device(d0)
    {}
#pragma omp target device(d1)
    {}
  }

  // 1. Split a loop across both devices, concurrently.
  static double x[N], y[N];
  for (int i = 0; i < N; i++) {
    x[i] = i * 0.5;
    y[i] = 1.0;
  }
  int devs[2] = {d0, d1};
  for (int k = 0; k < 2; k++) {
    int lo = k * (N / 2), len = N / 2, dev = devs[k];
#pragma omp target teams distribute parallel for device(dev) nowait \
    map(to : x[lo:len]) map(tofrom : y[lo:len]) firstprivate(lo, len)
    for (int i = lo; i < lo + len; i++)
      y[i] = 2.0 * x[i] + y[i] * (i % 3);
  }
#pragma omp taskwait
  double sy = 0;
  for (int i = 0; i < N; i++)
    sy += y[i];
  printf("split: sum=%.3f y[0]=%.3f y[%d]=%.3f y[%d]=%.3f\n", sy, y[0], N / 2, y[N / 2], N - 1,
         y[N - 1]);

  // 2. Fill on device 0, copy device 0 -> device 1, transform on device 1.
  long *a = omp_target_alloc(N * sizeof(long), d0);
  long *b = omp_target_alloc(N * sizeof(long), d1);
  if (!a || !b) {
    printf("omp_target_alloc failed\n");
    return 1;
  }
#pragma omp target teams distribute parallel for is_device_ptr(a) device(d0)
  for (int i = 0; i < N; i++)
    a[i] = (long)i * i - 7 * i;
  if (omp_target_memcpy(b, a, N * sizeof(long), 0, 0, d1, d0)) {
    printf("omp_target_memcpy failed\n");
    return 1;
  }
#pragma omp target teams distribute parallel for is_device_ptr(b) device(d1)
  for (int i = 0; i < N; i++)
    b[i] = b[i] / 3 + i;
  // And back again, with offsets: the second half of b onto the first of a.
  omp_target_memcpy(a, b, (N / 2) * sizeof(long), 0, (N / 2) * sizeof(long), d0, d1);
  long *back = calloc(N, sizeof(long));
  omp_target_memcpy(back, a, N * sizeof(long), 0, 0, host, d0);
  long s = 0;
  for (int i = 0; i < N; i++)
    s += back[i] % 100003;
  printf("copy: sum=%ld back[0]=%ld back[%d]=%ld back[%d]=%ld\n", s, back[0], N / 2 - 1,
         back[N / 2 - 1], N - 1, back[N - 1]);
  omp_target_free(a, d0);
  omp_target_free(b, d1);
  free(back);

  // 3. A mapped array kept on device 1 across regions.
  static int z[N];
  for (int i = 0; i < N; i++)
    z[i] = i % 97;
#pragma omp target enter data map(to : z) device(d1)
  for (int r = 0; r < 3; r++) {
#pragma omp target teams distribute parallel for device(d1) firstprivate(r)
    for (int i = 0; i < N; i++)
      z[i] = z[i] * 2 + r;
  }
#pragma omp target exit data map(from : z) device(d1)
  long sz = 0;
  for (int i = 0; i < N; i++)
    sz += z[i];
  printf("device1: sum=%ld z[1]=%d z[%d]=%d\n", sz, z[1], N - 1, z[N - 1]);

  // 4. Four host threads at once, two per device. (`target parallel for`:
  // the host fallback of a `teams` region nested in a host `parallel` trips
  // assertions of LLVM 16's libomp.)
  static int w[4][1024];
#pragma omp parallel num_threads(4)
  {
    int t = omp_get_thread_num(), dev = devs[t % 2];
    int *v = w[t];
    for (int i = 0; i < 1024; i++)
      v[i] = t + i;
    for (int r = 0; r < 4; r++) {
#pragma omp target parallel for device(dev) map(tofrom : v[0:1024]) firstprivate(r)
      for (int i = 0; i < 1024; i++)
        v[i] = (v[i] * 5 + r) % 10007;
    }
  }
  for (int t = 0; t < 4; t++) {
    long st = 0;
    for (int i = 0; i < 1024; i++)
      st += w[t][i];
    printf("thread %d on device slot %d: sum=%ld\n", t, t % 2, st);
  }
  return 0;
}
