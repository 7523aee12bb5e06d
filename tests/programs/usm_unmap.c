// Unified shared memory: a host thread unmaps memory a running kernel is
// reading. The kernel's threads sweep an 8 MiB mapping until a stop flag in
// host memory is set; once the kernel has said it started, the host thread
// waits 20 ms and munmaps the mapping. The kernel must end with a GPU memory
// fault naming an address in the mapping (libomptarget then aborts); the
// process must never take SIGSEGV or SIGBUS. If no fault comes, the thread
// sets the stop flag after 30 s and the program says "kernel returned".
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#pragma omp requires unified_shared_memory

#define BYTES (8UL << 20)
#define THREADS 256

struct control {
  int started;
  int stop;
  long *region;
};

static void *unmapper(void *arg) {
  struct control *c = arg;
  while (!__atomic_load_n(&c->started, __ATOMIC_ACQUIRE))
    usleep(1000);
  usleep(20000);
  if (munmap(c->region, BYTES) != 0) {
    perror("munmap");
    exit(2);
  }
  printf("unmapped\n");
  fflush(stdout);
  sleep(30);
  __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
  return NULL;
}

int main(void) {
  struct control *c = calloc(1, sizeof *c);
  long *sums = calloc(THREADS, sizeof(long));
  if (!c || !sums)
    return 2;
  long *region = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED)
    return 2;
  for (unsigned long i = 0; i < BYTES / sizeof(long); ++i)
    region[i] = (long)i;
  c->region = region;
  printf("region %#lx %#lx\n", (unsigned long)region, (unsigned long)region + BYTES);
  fflush(stdout);
  pthread_t t;
  pthread_create(&t, NULL, unmapper, c);
  int *started = &c->started;
  volatile int *stop = &c->stop;
  const unsigned long per = BYTES / sizeof(long) / THREADS;
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(64)
  for (int k = 0; k < THREADS; ++k) {
    volatile long *p = region + k * per;
    long s = 0;
    if (k == 0)
      __atomic_store_n(started, 1, __ATOMIC_RELEASE);
    while (!*stop)
      for (unsigned long i = 0; i < per; i += 64)
        s += p[i];
    sums[k] = s;
  }
  printf("kernel returned\n");
  pthread_join(t, NULL);
  return 1;
}
