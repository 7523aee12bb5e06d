/* libcgpu-amdgpu.a: malloc, free, calloc, realloc over the server's MALLOC
 * and FREE (see cgpu19.h). LLVM 19's server allocates device memory for
 * them (offload/plugins-nextgen/common/src/RPC.cpp). A program that calls
 * none of them keeps the device runtime's own weak malloc and free
 * (offload/DeviceRTL/src/State.cpp). */
#include "cgpu19.h"

typedef __SIZE_TYPE__ size_t;

void *malloc(size_t size) { return cgpu19_ready() ? gpu_heap_malloc(size) : 0; }

void free(void *ptr) {
  if (cgpu19_ready())
    gpu_heap_free(ptr);
}

void *calloc(size_t count, size_t size) {
  return cgpu19_ready() ? gpu_heap_calloc(count, size) : 0;
}

void *realloc(void *ptr, size_t size) {
  return cgpu19_ready() ? gpu_heap_realloc(ptr, size) : 0;
}
