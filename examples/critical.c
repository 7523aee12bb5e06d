// `omp critical` inside a target region. LLVM 16's AMDGPU device runtime
// implements critical sections with locks that are `__builtin_trap()`, so on a
// real gfx90a (and on the virtual device) the kernel stops at `s_trap 2` and
// the program aborts: the expected outcome is the reported trap, not the
// host's output. The first kernel (no critical) must still run normally.
#include <stdio.h>

int main(void) {
  int before = 0;
#pragma omp target teams distribute parallel for reduction(+ : before)
  for (int i = 0; i < 100; i++)
    before += i;
  printf("before=%d\n", before);
  fflush(stdout);

  int total = 0;
#pragma omp target teams distribute parallel for map(tofrom : total)
  for (int i = 0; i < 256; i++) {
#pragma omp critical
    total += i;
  }
  printf("total=%d\n", total);
  return 0;
}
