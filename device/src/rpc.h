/* The device half of LLVM 19 libc's GPU RPC protocol (the "client").
 *
 * Shared memory, set up by the host (the "server") and described by the
 * client object the host copies over `__llvm_libc_rpc_client`:
 *   inbox[port_count]   uint32, written by the server, read here
 *   outbox[port_count]  uint32, written here, read by the server
 *   header[port_count]  { uint64 lane mask; uint16 opcode }
 *   packet[port_count][64]  64-byte buffers, one per lane of a wavefront
 * A port belongs to the client while its inbox and outbox bits are equal.
 * Every send or receive here is mirrored by one on the server. */
#ifndef GPU_DEVICE_RPC_H
#define GPU_DEVICE_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Opcode numbers of LLVM 19 (llvmlibc_rpc_opcodes.h). */
enum {
  GPU_RPC_NOOP = 0,
  GPU_RPC_EXIT = 1,
  GPU_RPC_WRITE_TO_STDOUT = 2,
  GPU_RPC_WRITE_TO_STDERR = 3,
  GPU_RPC_WRITE_TO_STREAM = 4,
  GPU_RPC_WRITE_TO_STDOUT_NEWLINE = 5,
  GPU_RPC_READ_FROM_STREAM = 6,
  GPU_RPC_READ_FGETS = 7,
  GPU_RPC_OPEN_FILE = 8,
  GPU_RPC_CLOSE_FILE = 9,
  GPU_RPC_MALLOC = 10,
  GPU_RPC_FREE = 11,
  GPU_RPC_HOST_CALL = 12,
  GPU_RPC_ABORT = 13,
  GPU_RPC_FFLUSH = 19,
  GPU_RPC_PRINTF_TO_STDOUT_PACKED = 24,
  GPU_RPC_PRINTF_TO_STDERR_PACKED = 25,
  GPU_RPC_PRINTF_TO_STREAM_PACKED = 26,
};

/* One lane's 64-byte slot of a port. */
typedef struct {
  uint64_t data[8];
} gpu_rpc_buffer_t;

/* An open port, held by the lanes that opened it together. */
typedef struct {
  uint32_t index;     /* port number */
  uint32_t out;       /* our last outbox value */
  uint64_t lane_mask; /* lanes that opened the port */
  bool receive;       /* the last operation was a receive */
  bool owns_buffer;   /* the buffer is known to be ours */
} gpu_rpc_port_t;

/* Lane helpers (wavefront of 64). */
__attribute__((convergent)) uint32_t gpu_lane_id(void);
__attribute__((convergent)) uint64_t gpu_lane_mask(void);
__attribute__((convergent)) uint64_t gpu_ballot(uint64_t mask, bool x);

__attribute__((convergent)) gpu_rpc_port_t gpu_rpc_open(uint16_t opcode);
__attribute__((convergent)) void gpu_rpc_close(gpu_rpc_port_t *port);

/* A send is begin (wait for the buffer, get this lane's slot), fill, end. */
__attribute__((convergent)) gpu_rpc_buffer_t *
gpu_rpc_send_begin(gpu_rpc_port_t *port);
__attribute__((convergent)) void gpu_rpc_send_end(gpu_rpc_port_t *port);
/* A receive is begin (wait for the server's answer), read, and nothing more:
 * the buffer goes back to the server at the next operation. */
__attribute__((convergent)) gpu_rpc_buffer_t *
gpu_rpc_recv_begin(gpu_rpc_port_t *port);

/* Streams `size` bytes of `src` (per lane) in 64-byte packets. */
__attribute__((convergent)) void gpu_rpc_send_n(gpu_rpc_port_t *port,
                                                const void *src,
                                                uint64_t size);
/* Receives a stream into `dst` (per lane, at least as large as what the
 * server sends); returns the size the server announced. */
__attribute__((convergent)) uint64_t gpu_rpc_recv_n(gpu_rpc_port_t *port,
                                                    void *dst);

/* `%n` for the printf family: the project's server ends a printf with the
 * counts to store (word 2 of the last reply is this value, words 3 to 7 up
 * to the first 0 one store each: the count in bits 0-31, the byte offset of
 * the pointer in the argument block in bits 32-47, the integer's size in
 * bits 48-55; the rpc crate's PRINTF_COUNT_STORES). LLVM's server writes no
 * such words. */
#define GPU_RPC_PRINTF_COUNT_STORES 0x73746f7200006e25ull

/* Stores the counts a printf's last reply carries through the pointers of
 * the `size`-byte argument block `args` the lane sent. */
void gpu_printf_store_counts(const gpu_rpc_buffer_t *reply, const void *args,
                             uint64_t size);

/* Byte copy that the compiler may not turn into a library call. */
void gpu_copy_bytes(void *dst, const void *src, uint64_t n);

/* The heap over the server's MALLOC and FREE: the semantics of C's malloc,
 * calloc, realloc and free (NULL on failure, freeing NULL does nothing).
 * Each block starts with a 16-byte header holding the requested size, so
 * realloc knows how much to copy (the protocol has no "size of" request).
 * All active lanes of a wavefront share one port: one round trip asks the
 * host for every lane's block. free returns once the host has taken the
 * block back (or reported it: a second free, or a pointer malloc did not
 * return, is the server's error, never a release). */
void *gpu_heap_malloc(uint64_t size);
void *gpu_heap_calloc(uint64_t count, uint64_t size);
void *gpu_heap_realloc(void *ptr, uint64_t size);
void gpu_heap_free(void *ptr);

#endif
