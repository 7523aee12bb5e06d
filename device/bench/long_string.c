/* Prints one string of argv[1] bytes (default 1 MiB) with printf's %s
 * from one lane, and reports to stderr how long that printf took on the
 * device's 100 MHz real-time counter (`printf_ns=`): the device's strlen,
 * the string's trip through the RPC buffer and the host's write. Filling
 * the string and starting the process are not in it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int size = argc > 1 ? atoi(argv[1]) : 1 << 20;
  if (size < 1)
    size = 1;
  char *text = malloc((size_t)size + 1);
  if (!text)
    return 1;
  for (int i = 0; i < size; ++i)
    text[i] = (char)('a' + i % 26);
  text[size] = 0;
  uint64_t t0 = __builtin_amdgcn_s_memrealtime();
  printf("%s\n", text);
  uint64_t t1 = __builtin_amdgcn_s_memrealtime();
  fprintf(stderr, "printf_ns=%lu bytes=%d\n", (unsigned long)((t1 - t0) * 10),
          size);
  free(text);
  return 0;
}
