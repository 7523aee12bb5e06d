/* One thread (not the first lane) calls exit(); the status is the
 * process's. */
#include <stdio.h>
#include <stdlib.h>

#include "grid.h"

static int body(int argc, char **argv, unsigned block, unsigned thread,
                unsigned threads) {
  (void)block;
  (void)threads;
  unsigned who = argc > 1 ? (unsigned)atoi(argv[1]) : 37;
  int code = argc > 2 ? atoi(argv[2]) : 5;
  if (thread == who) {
    printf("thread %u exits with %d\n", thread, code);
    exit(code);
  }
  return 0;
}

int main(int argc, char **argv) { return GRID_RUN(body, argc, argv); }
