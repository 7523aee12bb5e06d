/* A kernel that writes through a bad pointer: the loader must report the
 * fault (address, reason) and exit non-zero, without hanging. */
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argv;
  volatile int *bad = (volatile int *)(uintptr_t)(0xdead0000ull + (unsigned)argc);
  *bad = 42;
  return *bad;
}
