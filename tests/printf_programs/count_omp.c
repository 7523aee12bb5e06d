/* printf's %n in a target region (libcgpu): counts stored through
 * pointers to the device's stack and to mapped memory, per lane. */
#include <stdio.h>

int main(void) {
  int counts[64];
  int bad = 0;
#pragma omp target teams distribute parallel for num_teams(1) thread_limit(64) \
    map(from : counts) reduction(+ : bad)
  for (int i = 0; i < 64; ++i) {
    int before = -1;
    short after = -1;
    printf("lane %d%n says %*s%hn\n", i, &before, i % 7, "", &after);
    counts[i] = after;
    bad += before != (i < 10 ? 6 : 7);
  }
  int wrong = 0;
  for (int i = 0; i < 64; ++i)
    wrong += counts[i] != (i < 10 ? 6 : 7) + 6 + i % 7;
  printf("bad before %d, wrong after %d\n", bad, wrong);
  return 0;
}
