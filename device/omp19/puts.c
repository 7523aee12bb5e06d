/* libcgpu-amdgpu.a: puts, fputs, fputc, putchar, fwrite (see cgpu19.h). */
#include "cgpu19.h"

uint64_t cgpu19_write(FILE *stream, const void *data, uint64_t size,
                      bool newline) {
  if (!cgpu19_ready())
    return 0;
  uint16_t opcode = newline            ? GPU_RPC_WRITE_TO_STDOUT_NEWLINE
                    : stream == stdout ? GPU_RPC_WRITE_TO_STDOUT
                    : stream == stderr ? GPU_RPC_WRITE_TO_STDERR
                                       : GPU_RPC_WRITE_TO_STREAM;
  gpu_rpc_port_t port = gpu_rpc_open(opcode);
  if (opcode == GPU_RPC_WRITE_TO_STREAM) {
    gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
    b->data[0] = (uint64_t)(uintptr_t)stream;
    gpu_rpc_send_end(&port);
  }
  gpu_rpc_send_n(&port, data, size);
  uint64_t written = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_close(&port);
  return written;
}

int puts(const char *str) {
  uint64_t n = cgpu19_strlen(str);
  return cgpu19_write(stdout, str, n, true) == n + 1 ? 0 : -1;
}

int fputs(const char *str, FILE *stream) {
  uint64_t n = cgpu19_strlen(str);
  return cgpu19_write(stream, str, n, false) == n ? 0 : -1;
}

int fputc(int c, FILE *stream) {
  unsigned char byte = (unsigned char)c;
  return cgpu19_write(stream, &byte, 1, false) == 1 ? byte : -1;
}

int putchar(int c) { return fputc(c, stdout); }

typedef __SIZE_TYPE__ size_t;

size_t fwrite(const void *buffer, size_t size, size_t count, FILE *stream) {
  if (size == 0 || count == 0)
    return 0;
  return cgpu19_write(stream, buffer, size * count, false) / size;
}
