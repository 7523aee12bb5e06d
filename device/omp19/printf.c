/* libcgpu-amdgpu.a: stdout, stderr and the printf family (see cgpu19.h). */
#include "cgpu19.h"

struct cgpu19_file {
  uint32_t unused;
};
static FILE stdout_object, stderr_object;
FILE *stdout = &stdout_object;
FILE *stderr = &stderr_object;

int cgpu19_print(FILE *stream, const char *format, const void *args,
                 uint64_t size, bool packed) {
  if (!cgpu19_ready())
    return -1;
  uint16_t opcode = stream == stdout   ? CGPU19_PRINTF_TO_STDOUT
                    : stream == stderr ? CGPU19_PRINTF_TO_STDERR
                                       : CGPU19_PRINTF_TO_STREAM;
  bool to_stream = opcode == CGPU19_PRINTF_TO_STREAM;
  if (packed)
    opcode += CGPU19_PACKED;
  uint64_t mask = gpu_lane_mask();
  gpu_rpc_port_t port = gpu_rpc_open(opcode);
  if (to_stream) {
    gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
    b->data[0] = (uint64_t)(uintptr_t)stream;
    gpu_rpc_send_end(&port);
  }
  gpu_rpc_send_n(&port, format, cgpu19_strlen(format) + 1);
  /* The server parses the format and says how many argument bytes it
   * reads; a va_list's size is not known here, so it is given as the most
   * and the server's figure is sent. */
  uint64_t wanted = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_send_n(&port, args, wanted < size ? wanted : size);
  uint32_t ret;
  for (;;) {
    gpu_rpc_buffer_t *b = gpu_rpc_recv_begin(&port);
    ret = (uint32_t)b->data[0];
    const char *str = (const char *)(uintptr_t)b->data[1];
    if (!gpu_ballot(mask, str != 0))
      break;
    gpu_rpc_send_n(&port, str, str ? cgpu19_strlen(str) + 1 : 0);
  }
  gpu_rpc_close(&port);
  return (int)ret;
}

/* What LLVM 19's device runtime calls for a target region's printf, with
 * the arguments laid out as a C struct (libc/src/gpu/rpc_fprintf.cpp). */
int rpc_fprintf(FILE *stream, const char *format, void *args, uint64_t size) {
  return cgpu19_print(stream, format, args, size, false);
}

int vfprintf(FILE *stream, const char *format, __builtin_va_list ap) {
  return cgpu19_print(stream, format, (const void *)ap, ~(uint64_t)0, true);
}

int fprintf(FILE *stream, const char *format, ...) {
  __builtin_va_list ap;
  __builtin_va_start(ap, format);
  int ret = vfprintf(stream, format, ap);
  __builtin_va_end(ap);
  return ret;
}

int vprintf(const char *format, __builtin_va_list ap) {
  return vfprintf(stdout, format, ap);
}
