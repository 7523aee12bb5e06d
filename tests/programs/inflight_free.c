/* Frees host memory under transfers still in flight, then exits with them in
   flight (a program bug that a real application had): per round, two arrays
   of argv[1] bytes are mapped, a nowait update copies one to the device, a
   nowait kernel doubles it into the other, a nowait update copies that back,
   and both arrays are unmapped at once, without waiting; after argv[2] rounds
   the process exits at once. What may happen: the copies finish first, or one
   finds its memory gone and its target construct fails (libomptarget then
   aborts). What must never happen: a signal from touching the unmapped
   memory, or a hang. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
  size_t bytes = argc > 1 ? strtoul(argv[1], 0, 0) : (size_t)4 << 20;
  int rounds = argc > 2 ? atoi(argv[2]) : 4;
  size_t n = bytes / sizeof(double);
  for (int r = 0; r < rounds; r++) {
    double *a = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double *b = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED || b == MAP_FAILED)
      return 2;
    for (size_t i = 0; i < n; i++) {
      a[i] = (double)i;
      b[i] = 0;
    }
#pragma omp target enter data map(alloc : a[0:n], b[0:n])
#pragma omp target update to(a[0:n]) nowait
#pragma omp target teams distribute parallel for nowait
    for (size_t i = 0; i < n; i++)
      b[i] = 2 * a[i];
#pragma omp target update from(b[0:n]) nowait
    munmap(a, bytes);
    munmap(b, bytes);
  }
  printf("issued %d rounds\n", rounds);
  fflush(stdout);
  _exit(0);
}
