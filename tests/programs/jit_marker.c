// A target region that stores one recognisable constant: the JIT tests
// (tests/jit.rs) edit that constant in the module LLVM's JIT knobs dump,
// and the program prints whatever the device stored.
#include <stdio.h>

int main(void) {
  int x = 0;
#pragma omp target map(from : x)
  { x = 4242; }
  printf("x=%d\n", x);
  return 0;
}
