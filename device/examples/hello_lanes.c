/* The loader demo: main runs on every thread of the launch; the lanes that
 * have an argument print it, and one lane sums over all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpu.h>

int main(int argc, char **argv) {
  unsigned lane = gpu_thread_id();
  if (lane == 0)
    printf("hello from main on the GPU: %u threads, %d arguments\n",
           gpu_num_threads(), argc);
  if (lane < (unsigned)argc)
    printf("lane %2u: argv[%u] = \"%s\" (%zu bytes)\n", lane, lane, argv[lane],
           strlen(argv[lane]));
  if (lane == gpu_num_threads() - 1) {
    int total = 0;
    for (int i = 1; i < argc; ++i)
      total += atoi(argv[i]);
    printf("lane %2u: the numeric arguments add up to %d\n", lane, total);
  }
  return 0;
}
