// Prints how many offload devices libomptarget sees, and the default device.
// Used by the virtual device's tests: with N virtual gfx90a agents it must
// print N, through either of LLVM's C++ AMDGPU plugins or ours.
#include <omp.h>
#include <stdio.h>

int main(void) {
  printf("devices=%d\n", omp_get_num_devices());
  printf("default=%d\n", omp_get_default_device());
  return 0;
}
