/* The stdio subset of the GPU device library: every call is a request to
 * the host's RPC server (LLVM 19 libc's protocol). */
#ifndef GPU_DEVICE_STDIO_H
#define GPU_DEVICE_STDIO_H

#include <stddef.h>
#include <__gpu_printf_args.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A FILE* is the host's stream pointer (from fopen), or one of the three
 * standard stream objects below. */
typedef struct __gpu_file FILE;
extern FILE __gpu_stdin, __gpu_stdout, __gpu_stderr;
#define stdin (&__gpu_stdin)
#define stdout (&__gpu_stdout)
#define stderr (&__gpu_stderr)

#define EOF (-1)

FILE *fopen(const char *path, const char *mode);
int fclose(FILE *stream);
int fflush(FILE *stream);
size_t fread(void *buffer, size_t size, size_t count, FILE *stream);
size_t fwrite(const void *buffer, size_t size, size_t count, FILE *stream);
char *fgets(char *str, int count, FILE *stream);
int fputs(const char *str, FILE *stream);
int puts(const char *str);
int putchar(int c);

/* printf and fprintf are macros (see __gpu_printf_args.h); at most 32
 * arguments after the format. `long double` is passed as double. */
int __gpu_fprintf(FILE *stream, const char *format, const __gpu_arg_t *args);
#define printf(format, ...)                                                    \
  __gpu_fprintf(stdout, (format), __GPU_PACK(__VA_ARGS__))
#define fprintf(stream, format, ...)                                           \
  __gpu_fprintf((stream), (format), __GPU_PACK(__VA_ARGS__))

#ifdef __cplusplus
}
#endif

#endif
