/* printf's %n from a GPU program: every length modifier, after text, a
 * conversion and a %s, in the same call; then the counts, printed. The
 * host build of the same file is the oracle. */
#include <stdio.h>

int main(void) {
  int a = -1;
  signed char hh = -1;
  short h = -1;
  long l = -1;
  long long ll = -1;
  int r = printf("abc%n def %d%hhn xyz %s%hn!%ln%lln\n", &a, 42, &hh, "str",
                 &h, &l, &ll);
  printf("a=%d hh=%d h=%d l=%ld ll=%lld r=%d\n", a, hh, h, l, ll, r);
  int z = -1;
  printf("%n", &z);
  printf("z=%d\n", z);
  return 0;
}
