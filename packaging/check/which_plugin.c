/* The package test's OpenMP program: runs one target region and prints the
 * device count, where the region ran, and which AMDGPU plugin and HSA
 * runtime files the process mapped (from /proc/self/maps), so the test
 * knows which files served it. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  int devices = omp_get_num_devices(), on_host = -1, sum = 0;
#pragma omp target teams distribute parallel for map(tofrom : on_host, sum) reduction(+ : sum)
  for (int i = 1; i <= 1000; ++i) {
    sum += i;
    if (i == 1)
      on_host = omp_is_initial_device();
  }
  printf("devices %d on_host %d sum %d\n", devices, on_host, sum);
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[4096];
  while (maps && fgets(line, sizeof line, maps)) {
    char *path = strchr(line, '/');
    if (path && (strstr(path, "libomptarget.rtl.amdgpu") || strstr(path, "libhsa-runtime64")))
      printf("mapped %s", path);
  }
  return 0;
}
