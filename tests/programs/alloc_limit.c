// Allocation failures must come back as NULL / errors, not crashes: a
// request larger than the device's memory, then normal use afterwards.
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  void *huge = omp_target_alloc((size_t)1 << 30, 0);
  printf("huge=%s\n", huge ? "non-null" : "null");
  char msg[32] = "still works", back[32] = {0};
  void *d = omp_target_alloc(sizeof msg, 0);
  omp_target_memcpy(d, msg, sizeof msg, 0, 0, 0, omp_get_initial_device());
  omp_target_memcpy(back, d, sizeof msg, 0, 0, omp_get_initial_device(), 0);
  printf("after=%s\n", strcmp(msg, back) == 0 ? "ok" : "BAD");
  omp_target_free(d, 0);
  // Freeing a pointer the device never handed out.
  omp_target_free((void *)0x123450, 0);
  printf("end\n");
  return 0;
}
