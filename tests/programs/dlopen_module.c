// Loads offload_module.so with dlopen `argv[2]` times (dlclose after each
// round when argv[3] is "close"), runs its target region each time, and
// prints the sums. Built without -fopenmp: libomptarget arrives with the
// module, and its image is unregistered from the module's destructor
// (at dlclose, or at exit when the module is left open).
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  int rounds = atoi(argv[2]);
  int close_it = strcmp(argv[3], "close") == 0;
  for (int r = 0; r < rounds; r++) {
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
      printf("dlopen failed: %s\n", dlerror());
      return 1;
    }
    long (*sum)(int) = (long (*)(int))dlsym(h, "module_sum");
    if (!sum) {
      printf("dlsym failed: %s\n", dlerror());
      return 1;
    }
    printf("round %d: %ld\n", r, sum(1000 + r));
    fflush(stdout);
    if (close_it && dlclose(h) != 0) {
      printf("dlclose failed: %s\n", dlerror());
      return 1;
    }
  }
  return 0;
}
