/* Every thread prints argv[1] (default 1) lines with printf. */
#include <stdio.h>
#include <stdlib.h>
#include <gpu.h>

int main(int argc, char **argv) {
  int lines = argc > 1 ? atoi(argv[1]) : 1;
  unsigned id = gpu_block_id() * gpu_num_threads() + gpu_thread_id();
  for (int i = 0; i < lines; ++i)
    printf("thread %u line %d value %f\n", id, i, id * 0.5);
  return 0;
}
