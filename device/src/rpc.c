/* RPC client: the port state machine of LLVM 19's protocol, one lane per
 * slot. See rpc.h for the shared memory layout. */
#include "rpc.h"

/* Layout of LLVM 19's rpc::Client (= rpc::Process<false>), which the host
 * copies here byte for byte: 552 bytes. */
#define GPU_RPC_MAX_PORTS 4096u
#define GPU_RPC_LANES 64u

typedef struct {
  uint64_t mask;
  uint16_t opcode;
} gpu_rpc_header_t;

typedef struct {
  uint32_t port_count;
  uint32_t *inbox;
  uint32_t *outbox;
  gpu_rpc_header_t *header;
  gpu_rpc_buffer_t *packet;
  uint32_t lock[GPU_RPC_MAX_PORTS / 32];
} gpu_rpc_client_t;

_Static_assert(sizeof(gpu_rpc_client_t) == 552, "client size of LLVM 19");
_Static_assert(sizeof(gpu_rpc_header_t) == 16, "header size of LLVM 19");

static gpu_rpc_client_t gpu_client;

/* How the two symbols below are kept through LTO. clang-16's builds mark
 * them `used`; the LLVM 19 OpenMP library (device/omp19/) defines
 * GPU_RPC_KEEP as protected visibility alone, as LLVM 19 libc's
 * rpc_client.cpp does, because clang-linker-wrapper 19 fails a program's
 * device link ("invalid llvm.compiler.used member") when an archive member
 * it did not need carries `used` globals. */
#ifndef GPU_RPC_KEEP
#define GPU_RPC_KEEP __attribute__((visibility("protected"), used))
#endif

/* The host finds the client through this pointer and overwrites *it. */
GPU_RPC_KEEP const void *__llvm_libc_rpc_client = &gpu_client;

/* Fixed clock frequency in Hz, written by the loader when present. */
GPU_RPC_KEEP uint64_t __llvm_libc_clock_freq;

uint32_t gpu_lane_id(void) {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

uint64_t gpu_lane_mask(void) { return __builtin_amdgcn_read_exec(); }

uint64_t gpu_ballot(uint64_t mask, bool x) {
  return mask & __builtin_amdgcn_ballot_w64(x);
}

static __attribute__((convergent)) bool is_first_lane(uint64_t mask) {
  return gpu_lane_id() == (uint32_t)__builtin_ctzll(mask);
}

static __attribute__((convergent)) uint32_t load_inbox(uint32_t index) {
  uint32_t v = __atomic_load_n(&gpu_client.inbox[index], __ATOMIC_RELAXED);
  return __builtin_amdgcn_readfirstlane(v);
}

static __attribute__((convergent)) uint32_t load_outbox(uint32_t index) {
  uint32_t v = __atomic_load_n(&gpu_client.outbox[index], __ATOMIC_RELAXED);
  return __builtin_amdgcn_readfirstlane(v);
}

static uint32_t invert_outbox(uint32_t index, uint32_t out) {
  uint32_t flipped = !out;
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&gpu_client.outbox[index], flipped, __ATOMIC_RELAXED);
  return flipped;
}

/* The client may use the buffer when inbox == outbox. */
static __attribute__((convergent)) void wait_for_ownership(uint32_t index,
                                                           uint32_t out,
                                                           uint32_t in) {
  while (in != out) {
    __builtin_amdgcn_s_sleep(2);
    in = load_inbox(index);
  }
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

/* One lane takes the wavefront's lock bit for the port; all learn the
 * outcome. The lock array is the client's own (the server has another). */
static __attribute__((convergent)) bool try_lock(uint64_t mask,
                                                 uint32_t index) {
  uint32_t bit = 1u << (index % 32);
  uint32_t before = 0;
  if (is_first_lane(mask))
    before = __atomic_fetch_or(&gpu_client.lock[index / 32], bit,
                               __ATOMIC_RELAXED) &
             bit;
  before = __builtin_amdgcn_readfirstlane(before);
  if (before != 0)
    return false;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return true;
}

static __attribute__((convergent)) void unlock(uint64_t mask, uint32_t index) {
  __atomic_thread_fence(__ATOMIC_RELEASE);
  if (is_first_lane(mask))
    __atomic_fetch_and(&gpu_client.lock[index / 32], ~(1u << (index % 32)),
                       __ATOMIC_RELAXED);
  __builtin_amdgcn_wave_barrier();
}

gpu_rpc_port_t gpu_rpc_open(uint16_t opcode) {
  for (uint32_t index = 0;; ++index) {
    if (index >= gpu_client.port_count)
      index = 0;
    uint64_t mask = gpu_lane_mask();
    if (!try_lock(mask, index))
      continue;
    uint32_t in = load_inbox(index);
    uint32_t out = load_outbox(index);
    if (in != out) {
      unlock(mask, index);
      continue;
    }
    if (is_first_lane(mask)) {
      gpu_client.header[index].opcode = opcode;
      gpu_client.header[index].mask = mask;
    }
    __builtin_amdgcn_wave_barrier();
    gpu_rpc_port_t port = {index, out, mask, false, true};
    return port;
  }
}

void gpu_rpc_close(gpu_rpc_port_t *port) {
  __builtin_amdgcn_wave_barrier();
  unlock(port->lane_mask, port->index);
}

static gpu_rpc_buffer_t *slot(const gpu_rpc_port_t *port) {
  return &gpu_client.packet[port->index * GPU_RPC_LANES + gpu_lane_id()];
}

gpu_rpc_buffer_t *gpu_rpc_send_begin(gpu_rpc_port_t *port) {
  uint32_t in = port->owns_buffer ? port->out : load_inbox(port->index);
  wait_for_ownership(port->index, port->out, in);
  return slot(port);
}

void gpu_rpc_send_end(gpu_rpc_port_t *port) {
  port->out = invert_outbox(port->index, port->out);
  port->owns_buffer = false;
  port->receive = false;
}

gpu_rpc_buffer_t *gpu_rpc_recv_begin(gpu_rpc_port_t *port) {
  if (port->receive) {
    port->out = invert_outbox(port->index, port->out);
    port->owns_buffer = false;
  }
  uint32_t in = port->owns_buffer ? port->out : load_inbox(port->index);
  wait_for_ownership(port->index, port->out, in);
  port->receive = true;
  port->owns_buffer = true;
  return slot(port);
}

void gpu_copy_bytes(void *dst, const void *src, uint64_t n) {
  uint64_t i = 0;
  /* Whole words while both sides are 8-byte aligned (packets always are):
   * an eighth of the loads and stores of the byte loop. */
  if ((((uintptr_t)dst | (uintptr_t)src) & 7u) == 0) {
    volatile uint64_t *dw = dst;
    const uint64_t *sw = src;
#pragma clang loop unroll(disable)
    for (; i + 8 <= n; i += 8)
      dw[i / 8] = sw[i / 8];
  }
  volatile unsigned char *d = dst;
  const unsigned char *s = src;
#pragma clang loop unroll(disable)
  for (; i < n; ++i)
    d[i] = s[i];
}

void gpu_printf_store_counts(const gpu_rpc_buffer_t *reply, const void *args,
                             uint64_t size) {
  if (reply->data[2] != GPU_RPC_PRINTF_COUNT_STORES)
    return;
  for (uint32_t i = 3; i < 8; ++i) {
    uint64_t word = reply->data[i];
    if (word == 0)
      break;
    uint64_t offset = (word >> 32) & 0xffffu;
    uint64_t bytes = (word >> 48) & 0xffu;
    uint32_t count = (uint32_t)word;
    if (offset + 8 > size)
      continue;
    uint64_t target = 0;
    gpu_copy_bytes(&target, (const unsigned char *)args + offset, 8);
    if (target == 0)
      continue;
    if (bytes == 1)
      *(volatile uint8_t *)(uintptr_t)target = (uint8_t)count;
    else if (bytes == 2)
      *(volatile uint16_t *)(uintptr_t)target = (uint16_t)count;
    else if (bytes == 4)
      *(volatile uint32_t *)(uintptr_t)target = count;
    else if (bytes == 8)
      *(volatile uint64_t *)(uintptr_t)target = count;
  }
}

#define GPU_HEAP_HEADER 16

void *gpu_heap_malloc(uint64_t size) {
  if (size > ~(uint64_t)0 - GPU_HEAP_HEADER)
    return 0;
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_MALLOC);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  b->data[0] = size + GPU_HEAP_HEADER;
  gpu_rpc_send_end(&port);
  unsigned char *base =
      (unsigned char *)(uintptr_t)gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_close(&port);
  if (!base)
    return 0;
  *(uint64_t *)base = size;
  return base + GPU_HEAP_HEADER;
}

void gpu_heap_free(void *ptr) {
  if (!ptr)
    return;
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_FREE);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  b->data[0] = (uint64_t)(uintptr_t)((unsigned char *)ptr - GPU_HEAP_HEADER);
  gpu_rpc_send_end(&port);
  /* Wait for the server's (empty) answer: both servers answer FREE, and
   * waiting keeps this lane's requests in its own order at the server, so
   * a malloc made after this free is served after it, and a second free
   * of the same block is seen as one. */
  gpu_rpc_recv_begin(&port);
  gpu_rpc_close(&port);
}

void *gpu_heap_calloc(uint64_t count, uint64_t size) {
  if (size != 0 && count > ~(uint64_t)0 / size)
    return 0;
  volatile unsigned char *p = gpu_heap_malloc(count * size);
  if (p)
    for (uint64_t i = 0; i < count * size; ++i)
      p[i] = 0;
  return (void *)p;
}

void *gpu_heap_realloc(void *ptr, uint64_t size) {
  if (!ptr)
    return gpu_heap_malloc(size);
  if (size == 0) {
    gpu_heap_free(ptr);
    return 0;
  }
  uint64_t old = *(uint64_t *)((unsigned char *)ptr - GPU_HEAP_HEADER);
  void *fresh = gpu_heap_malloc(size);
  if (!fresh)
    return 0;
  gpu_copy_bytes(fresh, ptr, old < size ? old : size);
  gpu_heap_free(ptr);
  return fresh;
}

/* First packet: the size, then up to 56 bytes; then 64 bytes a packet
 * while any lane has data left. */
#define FIRST_BYTES (sizeof(gpu_rpc_buffer_t) - sizeof(uint64_t))

void gpu_rpc_send_n(gpu_rpc_port_t *port, const void *src, uint64_t size) {
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(port);
  b->data[0] = size;
  gpu_copy_bytes(&b->data[1], src, size > FIRST_BYTES ? FIRST_BYTES : size);
  gpu_rpc_send_end(port);
  for (uint64_t idx = FIRST_BYTES; gpu_ballot(port->lane_mask, idx < size);
       idx += sizeof(gpu_rpc_buffer_t)) {
    b = gpu_rpc_send_begin(port);
    if (idx < size) {
      uint64_t left = size - idx;
      gpu_copy_bytes(b->data, (const unsigned char *)src + idx,
                     left > sizeof(b->data) ? sizeof(b->data) : left);
    }
    gpu_rpc_send_end(port);
  }
}

uint64_t gpu_rpc_recv_n(gpu_rpc_port_t *port, void *dst) {
  gpu_rpc_buffer_t *b = gpu_rpc_recv_begin(port);
  uint64_t size = b->data[0];
  gpu_copy_bytes(dst, &b->data[1], size > FIRST_BYTES ? FIRST_BYTES : size);
  for (uint64_t idx = FIRST_BYTES; gpu_ballot(port->lane_mask, idx < size);
       idx += sizeof(gpu_rpc_buffer_t)) {
    b = gpu_rpc_recv_begin(port);
    if (idx < size) {
      uint64_t left = size - idx;
      gpu_copy_bytes((unsigned char *)dst + idx, b->data,
                     left > sizeof(b->data) ? sizeof(b->data) : left);
    }
  }
  return size;
}
