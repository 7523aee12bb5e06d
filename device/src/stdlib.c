/* The stdlib subset: memory from the host over RPC, exit and abort through
 * the server, and a few pure functions. */
#include <stdlib.h>
#include <string.h>

#include "rpc.h"

/* The heap is the RPC client's (rpc.c); these are its C names. */
void *malloc(size_t size) { return gpu_heap_malloc(size); }
void free(void *ptr) { gpu_heap_free(ptr); }
void *calloc(size_t count, size_t size) { return gpu_heap_calloc(count, size); }
void *realloc(void *ptr, size_t size) { return gpu_heap_realloc(ptr, size); }

#define MAX_ATEXIT 32
static void (*atexit_fns[MAX_ATEXIT])(void);
static uint32_t atexit_count;

int atexit(void (*fn)(void)) {
  uint32_t slot = __atomic_fetch_add(&atexit_count, 1u, __ATOMIC_RELAXED);
  if (slot >= MAX_ATEXIT)
    return -1;
  atexit_fns[slot] = fn;
  return 0;
}

/* The server ends the host process when it reads the status, so nothing
 * here returns; the wavefront stops in case it ever does. */
_Noreturn void exit(int status) {
  uint32_t n = __atomic_exchange_n(&atexit_count, 0u, __ATOMIC_RELAXED);
  if (n > MAX_ATEXIT)
    n = MAX_ATEXIT;
  while (n > 0)
    atexit_fns[--n]();
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_EXIT);
  gpu_rpc_send_begin(&port);
  gpu_rpc_send_end(&port);
  gpu_rpc_recv_begin(&port);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  *(uint32_t *)b->data = (uint32_t)status;
  gpu_rpc_send_end(&port);
  gpu_rpc_close(&port);
  __builtin_amdgcn_endpgm();
}

_Noreturn void abort(void) {
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_ABORT);
  gpu_rpc_send_begin(&port);
  gpu_rpc_send_end(&port);
  gpu_rpc_recv_begin(&port);
  gpu_rpc_send_begin(&port);
  gpu_rpc_send_end(&port);
  gpu_rpc_close(&port);
  __builtin_amdgcn_endpgm();
}

int atoi(const char *s) {
  while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
    ++s;
  int neg = 0;
  if (*s == '-' || *s == '+')
    neg = *s++ == '-';
  unsigned int v = 0;
  while (*s >= '0' && *s <= '9')
    v = v * 10u + (unsigned int)(*s++ - '0');
  return neg ? (int)(0u - v) : (int)v;
}

/* Set by _begin from the environment the loader copied to the device. */
char **__gpu_environ;

char *getenv(const char *name) {
  size_t n = strlen(name);
  for (char **e = __gpu_environ; e && *e; ++e)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
      return *e + n + 1;
  return NULL;
}
