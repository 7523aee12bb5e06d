/* A failing assert in a target region: the device prints the message
 * (expression, file, line) and traps; the region fails. */
#include <assert.h>
#include <stdio.h>

int main(void) {
  int x = 2;
  printf("before\n");
  fflush(stdout);
#pragma omp target map(to : x)
  { assert(x == 3); }
  printf("after\n");
  return 0;
}
