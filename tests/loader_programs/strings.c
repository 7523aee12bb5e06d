/* The string and stdlib helpers, printed so the host build can check them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sign(int v) { return v < 0 ? -1 : v > 0 ? 1 : 0; }

int main(void) {
  char buf[64];
  memset(buf, 'z', sizeof buf);
  strcpy(buf, "hello, world");
  printf("strcpy: %s (len %zu, byte after NUL %c)\n", buf, strlen(buf), buf[13]);
  char copy[64];
  memcpy(copy, buf, strlen(buf) + 1);
  printf("memcpy: %s\n", copy);
  printf("memcmp: %d %d %d\n", sign(memcmp(buf, copy, 13)),
         sign(memcmp("abc", "abd", 3)), sign(memcmp("b", "a", 1)));
  printf("strcmp: %d %d %d %d\n", sign(strcmp("abc", "abc")),
         sign(strcmp("abc", "abcd")), sign(strcmp("b", "abc")),
         sign(strcmp("\xff", "a")));
  printf("strncmp: %d %d %d\n", sign(strncmp("abcx", "abcy", 3)),
         sign(strncmp("abcx", "abcy", 4)), sign(strncmp("a", "b", 0)));
  const char *comma = strchr(buf, ',');
  printf("strchr: %s | %s | %s | %d\n", comma, strchr(buf, 'w'),
         strchr(buf, 'q') ? "found" : "NULL", strchr(buf, '\0') == buf + strlen(buf));
  memset(buf, '-', 10);
  buf[10] = 0;
  printf("memset: %s\n", buf);
  const char *nums[] = {"0", "42", "-17", "  +9x", "2147483647", "-2147483648", "abc", "\t 12 3"};
  for (int i = 0; i < 8; ++i)
    printf("atoi(\"%s\") = %d\n", nums[i], atoi(nums[i]));
  return 0;
}
