/* libcgpu-amdgpu.a: rpc_host_call, LLVM libc's extension that runs a host
 * function on a copy of the lane's argument bytes (see cgpu19.h). */
#include "cgpu19.h"

typedef __SIZE_TYPE__ size_t;

void rpc_host_call(void *fn, void *args, size_t size) {
  if (!cgpu19_ready())
    return;
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_HOST_CALL);
  gpu_rpc_send_n(&port, args, size);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  b->data[0] = (uint64_t)(uintptr_t)fn;
  gpu_rpc_send_end(&port);
  /* The server answers once the call has returned. */
  gpu_rpc_recv_begin(&port);
  gpu_rpc_close(&port);
}
