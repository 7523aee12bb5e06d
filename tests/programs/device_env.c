// The device environment the plugin writes at load: inside a kernel,
// omp_get_num_devices() is the plugin's device count and
// omp_get_device_num() the device's plugin-local number.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int n = omp_get_num_devices();
  for (int d = 0; d < n; d++) {
    int out[2] = {-1, -1};
#pragma omp target device(d) map(from : out[0:2])
    {
      out[0] = omp_get_num_devices();
      out[1] = omp_get_device_num();
    }
    printf("device %d sees num_devices=%d device_num=%d\n", d, out[0], out[1]);
  }
  return 0;
}
