/* The stdlib subset of the GPU device library. */
#ifndef GPU_DEVICE_STDLIB_H
#define GPU_DEVICE_STDLIB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1

/* Memory from the host's allocator (RPC), usable by every thread. */
void *malloc(size_t size);
void *calloc(size_t count, size_t size);
void *realloc(void *ptr, size_t size);
void free(void *ptr);

/* exit runs the atexit handlers, then asks the host to end the process
 * with `status`; abort asks the host to abort. */
_Noreturn void exit(int status);
_Noreturn void abort(void);
int atexit(void (*fn)(void));

int atoi(const char *str);
char *getenv(const char *name);

#ifdef __cplusplus
}
#endif

#endif
