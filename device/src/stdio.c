/* stdio over RPC: each call opens a port with LLVM 19's opcode for it and
 * exchanges the same packets as LLVM 19's GPU libc. */
#include <stdio.h>
#include <string.h>

#include "rpc.h"

/* Distinct, 4-byte aligned objects: the server tells the standard streams
 * apart by the low two bits of the pointer (1 stdin, 2 stdout, 3 stderr). */
struct __gpu_file {
  uint32_t unused;
};
FILE __gpu_stdin, __gpu_stdout, __gpu_stderr;

static uint64_t encode_stream(FILE *f) {
  uint64_t p = (uint64_t)(uintptr_t)f;
  if (f == stdin)
    return p | 1;
  if (f == stdout)
    return p | 2;
  if (f == stderr)
    return p | 3;
  return p;
}

static uint64_t write_bytes(FILE *f, const void *data, uint64_t size,
                            bool newline) {
  uint16_t op = newline           ? GPU_RPC_WRITE_TO_STDOUT_NEWLINE
                : f == stdout     ? GPU_RPC_WRITE_TO_STDOUT
                : f == stderr     ? GPU_RPC_WRITE_TO_STDERR
                                  : GPU_RPC_WRITE_TO_STREAM;
  gpu_rpc_port_t port = gpu_rpc_open(op);
  if (op == GPU_RPC_WRITE_TO_STREAM) {
    gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
    b->data[0] = (uint64_t)(uintptr_t)f;
    gpu_rpc_send_end(&port);
  }
  gpu_rpc_send_n(&port, data, size);
  uint64_t written = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_close(&port);
  return written;
}

int puts(const char *str) {
  uint64_t n = strlen(str);
  return write_bytes(stdout, str, n, true) == n + 1 ? 0 : EOF;
}

int fputs(const char *str, FILE *stream) {
  uint64_t n = strlen(str);
  return write_bytes(stream, str, n, false) == n ? 0 : EOF;
}

int putchar(int c) {
  unsigned char byte = (unsigned char)c;
  return write_bytes(stdout, &byte, 1, false) == 1 ? 0 : EOF;
}

size_t fwrite(const void *buffer, size_t size, size_t count, FILE *stream) {
  if (size == 0 || count == 0)
    return 0;
  return write_bytes(stream, buffer, size * count, false) / size;
}

size_t fread(void *buffer, size_t size, size_t count, FILE *stream) {
  if (size == 0 || count == 0)
    return 0;
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_READ_FROM_STREAM);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  b->data[0] = size * count;
  b->data[1] = encode_stream(stream);
  gpu_rpc_send_end(&port);
  gpu_rpc_recv_n(&port, buffer);
  uint64_t got = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_close(&port);
  return got / size;
}

char *fgets(char *str, int count, FILE *stream) {
  if (count < 1)
    return NULL;
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_READ_FGETS);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  b->data[0] = (uint64_t)count;
  b->data[1] = encode_stream(stream);
  gpu_rpc_send_end(&port);
  uint64_t got = gpu_rpc_recv_n(&port, str);
  gpu_rpc_close(&port);
  return got == 0 ? NULL : str;
}

FILE *fopen(const char *path, const char *mode) {
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_OPEN_FILE);
  gpu_rpc_send_n(&port, path, strlen(path) + 1);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  uint64_t mode_len = strlen(mode) + 1;
  gpu_copy_bytes(b->data, mode, mode_len > 64 ? 64 : mode_len);
  gpu_rpc_send_end(&port);
  uint64_t file = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_close(&port);
  return (FILE *)(uintptr_t)file;
}

int fclose(FILE *stream) {
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_CLOSE_FILE);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  b->data[0] = (uint64_t)(uintptr_t)stream;
  gpu_rpc_send_end(&port);
  uint64_t ret = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_close(&port);
  return ret != 0 ? EOF : 0;
}

int fflush(FILE *stream) {
  gpu_rpc_port_t port = gpu_rpc_open(GPU_RPC_FFLUSH);
  gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
  b->data[0] = encode_stream(stream);
  gpu_rpc_send_end(&port);
  int ret = (int)gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_close(&port);
  return ret;
}

/* Largest packed argument block: 32 arguments of 8 bytes. */
#define MAX_PACKED 256

/* The server parses the format, says how many argument bytes it needs,
 * takes them, then asks for the text behind each %s pointer (one per round,
 * any lane) until it answers with a null pointer and the result. */
int __gpu_fprintf(FILE *stream, const char *format, const __gpu_arg_t *args) {
  _Alignas(8) unsigned char packed[MAX_PACKED];
  uint64_t packed_len = 0;
  for (const __gpu_arg_t *a = args; a->size != 0; ++a) {
    if (packed_len + a->size > MAX_PACKED)
      break;
    gpu_copy_bytes(packed + packed_len, &a->bits, a->size);
    packed_len += a->size;
  }

  uint64_t mask = gpu_lane_mask();
  uint16_t op = stream == stdout   ? GPU_RPC_PRINTF_TO_STDOUT_PACKED
                : stream == stderr ? GPU_RPC_PRINTF_TO_STDERR_PACKED
                                   : GPU_RPC_PRINTF_TO_STREAM_PACKED;
  gpu_rpc_port_t port = gpu_rpc_open(op);
  if (op == GPU_RPC_PRINTF_TO_STREAM_PACKED) {
    gpu_rpc_buffer_t *b = gpu_rpc_send_begin(&port);
    b->data[0] = (uint64_t)(uintptr_t)stream;
    gpu_rpc_send_end(&port);
  }
  gpu_rpc_send_n(&port, format, strlen(format) + 1);
  uint64_t wanted = gpu_rpc_recv_begin(&port)->data[0];
  gpu_rpc_send_n(&port, packed, wanted < packed_len ? wanted : packed_len);

  uint32_t ret = 0;
  for (;;) {
    gpu_rpc_buffer_t *b = gpu_rpc_recv_begin(&port);
    ret = (uint32_t)b->data[0];
    const char *str = (const char *)(uintptr_t)b->data[1];
    if (!gpu_ballot(mask, str != NULL)) {
      gpu_printf_store_counts(b, packed, packed_len);
      break;
    }
    gpu_rpc_send_n(&port, str, str ? strlen(str) + 1 : 0);
  }
  gpu_rpc_close(&port);
  return (int)ret;
}
