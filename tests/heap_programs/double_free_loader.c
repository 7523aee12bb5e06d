/* Device heap misuse under contention, for the loader's C library and
 * amdhsa-loader: every thread of the grid mallocs a block and frees it; the
 * thread argv[1] frees its block a second time, racing the other threads'
 * next malloc; then every thread mallocs a block, tags it, checks the tag
 * and frees it. The server must report the second free (the loader then
 * ends the program with status 1); a wrong tag, which a block given to two
 * threads would show, prints a line and sets exit status 3. argv[2] = 1
 * makes the victim free a pointer malloc never returned instead. */
#include <gpu.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  unsigned victim = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
  int foreign = argc > 2 && atoi(argv[2]) == 1;
  unsigned id = gpu_block_id() * gpu_num_threads() + gpu_thread_id();
  long *a = malloc(64);
  if (a) {
    a[0] = id;
    free(a);
    if (id == victim)
      free(foreign ? (void *)(a + 2) : a);
  }
  volatile long *b = malloc(64);
  if (!b)
    return 2;
  b[0] = id;
  b[7] = ~(long)id;
  for (int k = 0; k < 32; ++k)
    b[1] = b[1] + k;
  int bad = b[0] != id || b[7] != ~(long)id;
  if (bad)
    printf("thread %u: block %p shared with another thread\n", id, (void *)b);
  free((void *)b);
  return bad ? 3 : 0;
}
