/* libcgpu: printf, puts, malloc and friends for OpenMP target regions
 * built by clang-16 for gfx90a, served over RPC by the project's plugin.
 *
 * Compiled as OpenMP (`clang-16 -fopenmp --offload-arch=gfx90a -c`): the
 * whole file is device-only, so the host half of the fat object is empty
 * and the host program keeps its own libc. Linked after the program
 * (`-lcgpu`), its `__llvm_omp_vprintf` takes the place of LLVM 16's device
 * runtime stub (which returns -1) and its `malloc`/`free` resolve what the
 * device runtime leaves undefined.
 *
 * When no server was set up (LLVM's C++ plugin knows nothing of RPC), the
 * client object is still all zeros: every entry point then fails the way
 * LLVM 16 does without this library (printf -1, malloc NULL) and never
 * touches the protocol. */
#if defined(__AMDGCN__)

#pragma omp begin declare target device_type(nohost)

/* The RPC client of device/src, the same code the standalone loader uses. */
#include "../src/rpc.c"

/* Whether a server wrote the client object (port count > 0). */
/* LLVM 19's PRINTF_TO_STDOUT and PRINTF_TO_STDERR: arguments aligned as
 * in a C struct. */
#define CGPU_RPC_PRINTF_TO_STDOUT 21
#define CGPU_RPC_PRINTF_TO_STDERR 22

static bool rpc_ready(void) {
  return __atomic_load_n(&gpu_client.port_count, __ATOMIC_RELAXED) != 0;
}

static uint64_t cgpu_strlen(const char *s) {
  uint64_t n = 0;
  while (s[n])
    ++n;
  return n;
}

/* clang-16 rewrites `printf(fmt, ...)` in device code into this call with
 * the promoted arguments in a struct laid out by C's alignment rules, which
 * is what LLVM 19's non-packed PRINTF_TO_STDOUT opcode reads. The server
 * parses the format, says how many argument bytes it needs, takes them,
 * then asks for the text behind each %s pointer (one string per lane a
 * round) until it answers with a null pointer and the return value. */
static int print_to(uint16_t opcode, const char *format, const void *args,
                    uint32_t size) {
  if (!rpc_ready())
    return -1;
  uint64_t mask = gpu_lane_mask();
  gpu_rpc_port_t port = gpu_rpc_open(opcode);
  gpu_rpc_send_n(&port, format, cgpu_strlen(format) + 1);
  uint64_t wanted = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_send_n(&port, args, wanted < size ? wanted : size);
  uint32_t ret = 0;
  for (;;) {
    gpu_rpc_buffer_t *b = gpu_rpc_recv_begin(&port);
    ret = (uint32_t)b->data[0];
    const char *str = (const char *)(uintptr_t)b->data[1];
    if (!gpu_ballot(mask, str != 0)) {
      gpu_printf_store_counts(b, args, size);
      break;
    }
    gpu_rpc_send_n(&port, str, str ? cgpu_strlen(str) + 1 : 0);
  }
  gpu_rpc_close(&port);
  return (int)ret;
}

int __llvm_omp_vprintf(const char *format, void *args, uint32_t size) {
  return print_to(CGPU_RPC_PRINTF_TO_STDOUT, format, args, size);
}

/* What a failing `assert` calls (glibc's assert.h). LLVM 16's device
 * runtime has one too, but its message goes through its own printf stub
 * and is lost; this one prints it to the host's stderr, in the words of
 * the runtime's, then traps, so the target region fails. */
void __assert_fail(const char *expr, const char *file, unsigned int line,
                   const char *function) {
  struct {
    const char *file;
    unsigned int line;
    const char *function;
    const char *expr;
  } args = {file, line, function, expr};
  print_to(CGPU_RPC_PRINTF_TO_STDERR, "%s:%u: %s: Assertion `%s' failed.\n",
           &args, sizeof(args));
  __builtin_trap();
}

int puts(const char *str) {
  if (!rpc_ready())
    return -1;
  uint64_t n = cgpu_strlen(str);
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_WRITE_TO_STDOUT_NEWLINE);
  gpu_rpc_send_n(&port, str, n);
  uint64_t written = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_close(&port);
  return written == n + 1 ? (int)(n + 1) : -1;
}

/* The heap is the RPC client's (rpc.c); without a server (LLVM's plugin)
 * every allocation fails, as LLVM 16 has none. */
void *malloc(size_t size) { return rpc_ready() ? gpu_heap_malloc(size) : 0; }

void free(void *ptr) {
  if (rpc_ready())
    gpu_heap_free(ptr);
}

void *calloc(size_t count, size_t size) {
  return rpc_ready() ? gpu_heap_calloc(count, size) : 0;
}

void *realloc(void *ptr, size_t size) {
  return rpc_ready() ? gpu_heap_realloc(ptr, size) : 0;
}

#pragma omp end declare target

#endif
