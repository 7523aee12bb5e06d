/* Every thread allocates with malloc, calloc and realloc, checks the memory
 * and frees it; a thread prints only when something is wrong, and the exit
 * status says whether any thread failed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid.h"

static int body(int argc, char **argv, unsigned block, unsigned thread,
                unsigned threads) {
  (void)argc;
  (void)argv;
  unsigned gid = block * threads + thread;
  unsigned n = 16 + gid % 64;
  uint32_t *a = malloc(n * sizeof *a);
  if (!a) {
    printf("thread %u: malloc failed\n", gid);
    return 1;
  }
  for (unsigned i = 0; i < n; ++i)
    a[i] = gid * 1000 + i;
  uint8_t *z = calloc(n, 3);
  if (!z) {
    printf("thread %u: calloc failed\n", gid);
    return 1;
  }
  int bad = 0;
  for (unsigned i = 0; i < n * 3; ++i)
    bad |= z[i] != 0;
  a = realloc(a, 2 * n * sizeof *a);
  if (!a) {
    printf("thread %u: realloc failed\n", gid);
    return 1;
  }
  for (unsigned i = 0; i < n; ++i)
    bad |= a[i] != gid * 1000 + i;
  for (unsigned i = n; i < 2 * n; ++i)
    a[i] = i;
  char *s = malloc(32);
  strcpy(s, "thread-private");
  bad |= strcmp(s, "thread-private") != 0;
  free(s);
  free(z);
  free(a);
  free(NULL);
  if (bad)
    printf("thread %u: memory contents wrong\n", gid);
  return bad ? 3 : 0;
}

int main(int argc, char **argv) {
  int r = GRID_RUN(body, argc, argv);
  return r;
}
