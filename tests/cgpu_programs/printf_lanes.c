/* printf from 64 lanes of one wavefront with per-lane arguments and a
 * divergent branch. */
#include <stdio.h>

int main(void) {
  const char *names[4] = {"zero", "one", "two", "three"};
  int sum = 0;
#pragma omp target teams distribute parallel for num_teams(1) thread_limit(64) \
    reduction(+ : sum)
  for (int i = 0; i < 64; ++i) {
    const char *name = i % 4 == 0   ? "zero"
                       : i % 4 == 1 ? "one"
                       : i % 4 == 2 ? "two"
                                    : "three";
    int r = printf("lane %2d sq=%4d half=%.1f name=%s hex=%#x\n", i, i * i,
                   i * 0.5, name, i * 4099);
    if (i % 3 == 0)
      r += printf("lane %d divisible by three, %lld\n", i, (long long)i << 33);
    sum += r;
  }
  (void)names;
  printf("sum of return values %d\n", sum);
  return 0;
}
