// Unified shared memory: device atomics on host memory racing host threads.
// Host threads add to the same counters with __atomic builtins for the whole
// time a kernel of many device threads adds with `omp atomic` and takes
// tickets with `omp atomic capture`; every update must count. Prints whether
// each total matches the arithmetic (the counts of host additions vary from
// run to run, so they are not printed); a host run
// (OMP_TARGET_OFFLOAD=DISABLED) prints the same lines.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#pragma omp requires unified_shared_memory

#define HOST_THREADS 3
#define HOST_ADDS 20000L
#define DEVICE_ITERS 65536L
#define SLOTS 8

struct shared {
  long counters[SLOTS];
  long tickets;
  int go;
  int stop;
};

struct worker {
  struct shared *s;
  long adds[SLOTS];
  pthread_t thread;
};

static void *host_worker(void *arg) {
  struct worker *w = arg;
  struct shared *s = w->s;
  while (!__atomic_load_n(&s->go, __ATOMIC_ACQUIRE))
    ;
  // Adds until the kernel has returned (and at least HOST_ADDS times), so
  // host and device update the same lines for the kernel's whole run.
  for (long i = 0; i < HOST_ADDS || !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE);
       ++i) {
    __atomic_fetch_add(&s->counters[i % SLOTS], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->tickets, 1, __ATOMIC_RELAXED);
    w->adds[i % SLOTS] += 1;
  }
  return NULL;
}

int main(void) {
  struct shared *s = calloc(1, sizeof *s);
  struct worker *w = calloc(HOST_THREADS, sizeof *w);
  if (!s || !w)
    return 2;
  for (int i = 0; i < HOST_THREADS; ++i) {
    w[i].s = s;
    pthread_create(&w[i].thread, NULL, host_worker, &w[i]);
  }
  long *counters = s->counters;
  long *tickets = &s->tickets;
  long last = -1;
  __atomic_store_n(&s->go, 1, __ATOMIC_RELEASE);
#pragma omp target teams distribute parallel for num_teams(8) thread_limit(256) \
    reduction(max : last)
  for (long i = 0; i < DEVICE_ITERS; ++i) {
    long mine;
#pragma omp atomic update
    counters[i % SLOTS] += 3;
#pragma omp atomic capture
    mine = (*tickets)++;
    if (mine > last)
      last = mine;
  }
  __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
  long host[SLOTS] = {0};
  long host_total = 0;
  for (int i = 0; i < HOST_THREADS; ++i) {
    pthread_join(w[i].thread, NULL);
    for (int k = 0; k < SLOTS; ++k) {
      host[k] += w[i].adds[k];
      host_total += w[i].adds[k];
    }
  }

  long total = 0;
  for (int k = 0; k < SLOTS; ++k) {
    long want = host[k] + 3 * (DEVICE_ITERS / SLOTS);
    total += s->counters[k];
    printf("slot %d: %s\n", k, s->counters[k] == want ? "expected" : "WRONG");
  }
  printf("total: %s\n",
         total == host_total + 3 * DEVICE_ITERS ? "expected" : "WRONG");
  printf("tickets: %s\n",
         s->tickets == host_total + DEVICE_ITERS ? "expected" : "WRONG");
  // Tickets are unique, so the device's largest is below the total.
  printf("device's last ticket below the total: %s\n",
         last >= DEVICE_ITERS - 1 && last < s->tickets ? "yes" : "NO");
  free(w);
  free(s);
  return 0;
}
