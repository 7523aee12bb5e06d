// Unified shared memory: kernels reach host memory through plain host
// pointers (heap, stack, a static array, a linked list built on the host),
// and what the host writes between kernels is what the next kernel reads,
// with no map, update or copy in between. Prints one line per check; the
// lines must equal those of a host run (OMP_TARGET_OFFLOAD=DISABLED).
#include <stdio.h>
#include <stdlib.h>

#pragma omp requires unified_shared_memory

#define N 4096

struct node {
  long value;
  long twice;
  struct node *next;
};

// Host data the device reaches only through pointers: not declare target,
// never named inside a target region.
static long table[N];

static long sum_on_device(const long *p, int n) {
  long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s)
  for (int i = 0; i < n; ++i)
    s += p[i];
  return s;
}

static void scale_on_device(long *p, int n, long k) {
#pragma omp target teams distribute parallel for
  for (int i = 0; i < n; ++i)
    p[i] = p[i] * k + i;
}

int main(void) {
  long *heap = malloc(N * sizeof(long));
  long stack[N];
  long *global = table;
  if (!heap)
    return 2;
  for (int i = 0; i < N; ++i) {
    heap[i] = i;
    stack[i] = 2 * i + 1;
    global[i] = (long)i * i % 1000;
  }

  // Reads of each kind of host memory.
  printf("heap sum %ld\n", sum_on_device(heap, N));
  printf("stack sum %ld\n", sum_on_device(stack, N));
  printf("global sum %ld\n", sum_on_device(global, N));

  // Writes of each kind, read back by the host.
  scale_on_device(heap, N, 3);
  scale_on_device(stack, N, 5);
  scale_on_device(global, N, 7);
  long h = 0, s = 0, g = 0;
  for (int i = 0; i < N; ++i) {
    h += heap[i] ^ i;
    s += stack[i] ^ i;
    g += global[i] ^ i;
  }
  printf("after device writes: heap %ld stack %ld global %ld\n", h, s, g);

  // A linked list built on the host, walked on the device: one thread
  // follows the next pointers, writing each node.
  struct node *head = NULL;
  for (int i = 0; i < 1000; ++i) {
    struct node *n = malloc(sizeof *n);
    if (!n)
      return 2;
    n->value = (i * 37) % 101;
    n->twice = -1;
    n->next = head;
    head = n;
  }
  long walked = 0, count = 0;
#pragma omp target map(tofrom : walked, count)
  {
    for (struct node *n = head; n; n = n->next) {
      n->twice = 2 * n->value;
      walked += n->value;
      ++count;
    }
  }
  long twice = 0;
  for (struct node *n = head; n; n = n->next)
    twice += n->twice;
  printf("list: %ld nodes, sum %ld, twice %ld\n", count, walked, twice);

  // Host writes between kernels are seen by the next kernel, no update.
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < N; ++i)
      heap[i] = (long)round * i + round;
    printf("round %d: device sum %ld\n", round, sum_on_device(heap, N));
  }

  while (head) {
    struct node *n = head->next;
    free(head);
    head = n;
  }
  free(heap);
  return 0;
}
