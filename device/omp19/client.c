/* libcgpu-amdgpu.a: the RPC client object (see cgpu19.h). */
/* Protected visibility alone keeps the client symbols through LTO (see
 * rpc.c). */
#define GPU_RPC_KEEP __attribute__((visibility("protected")))
#include "../src/rpc.c"

#include "cgpu19.h"

bool cgpu19_ready(void) {
  return __atomic_load_n(&gpu_client.port_count, __ATOMIC_RELAXED) != 0;
}

uint64_t cgpu19_strlen(const char *s) {
  uint64_t n = 0;
  while (s[n])
    ++n;
  return n;
}
