// A kernel that writes far outside any device allocation: on hardware a GPU
// memory fault; on the virtual device the same, reported, and the host must
// end cleanly (no crash of the plugin, no hang).
#include <omp.h>
#include <stdio.h>

int main(void) {
  int *p = (int *)omp_target_alloc(64, omp_get_default_device());
  printf("before\n");
  fflush(stdout);
#pragma omp target is_device_ptr(p)
  { p[1L << 38] = 42; }
  printf("after\n");
  return 0;
}
