/* libcgpu-amdgpu.a: abort and a failing assert (see cgpu19.h). As in LLVM
 * 19's GPU libc (libc/src/assert/gpu/__assert_fail.cpp,
 * libc/src/stdlib/gpu/abort.cpp): one wavefront of the whole program
 * prints `FILE:LINE: Assertion failed: 'EXPR' in function: 'FUNC'` on the
 * host's stderr, then asks the host to abort; every other caller ends its
 * wavefront. */
#include "cgpu19.h"

void abort(void) {
  if (cgpu19_ready()) {
    /* The server answers first, so it is known to be listening, then
     * aborts the host process on the second packet. */
    gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_ABORT);
    gpu_rpc_send_begin(&port);
    gpu_rpc_send_end(&port);
    gpu_rpc_recv_begin(&port);
    gpu_rpc_send_begin(&port);
    gpu_rpc_send_end(&port);
    gpu_rpc_close(&port);
  }
  __builtin_amdgcn_endpgm();
}

static uint32_t assert_claimed;

static void write_err(const char *s) {
  cgpu19_write(stderr, s, cgpu19_strlen(s), false);
}

void __assert_fail(const char *expr, const char *file, unsigned int line,
                   const char *function) {
  uint64_t mask = gpu_lane_mask();
  bool first = gpu_lane_id() == (uint32_t)__builtin_ctzll(mask);
  uint32_t won = 0;
  if (first)
    won = !__atomic_fetch_or(&assert_claimed, 1u, __ATOMIC_ACQUIRE);
  won = __builtin_amdgcn_readfirstlane(won);
  if (!won)
    __builtin_amdgcn_endpgm();
  if (first) {
    char digits[12];
    int at = (int)sizeof(digits) - 1;
    digits[at] = 0;
    do {
      digits[--at] = (char)('0' + line % 10);
      line /= 10;
    } while (line != 0);
    write_err(file);
    write_err(":");
    write_err(&digits[at]);
    write_err(": Assertion failed: '");
    write_err(expr);
    write_err("' in function: '");
    write_err(function);
    write_err("'\n");
  }
  __builtin_amdgcn_wave_barrier();
  abort();
}
