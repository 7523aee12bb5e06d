/* libcgpu-amdgpu.a: the part of LLVM's GPU C library that Debian's LLVM 19
 * OpenMP device runtime and OpenMP target regions expect, over the
 * project's RPC client (device/src/rpc.c), served by LLVM 19's own RPC
 * server inside libomptarget.so.19.
 *
 * Why: Debian builds LLVM 19's device runtime with OMPTARGET_HAS_LIBC
 * (offload/DeviceRTL/CMakeLists.txt), so its `__llvm_omp_vprintf` (what
 * clang-19 turns a target region's printf into) calls
 * `rpc_fprintf(stdout, format, args, size)` (offload/DeviceRTL/src/LibC.cpp),
 * but Debian ships no GPU libc to define it: without this library a
 * printing program fails to link (undefined symbol: rpc_fprintf, stdout).
 * The name is the one LLVM's offload lit configuration links
 * (`libcgpu-amdgpu.a`, offload/test/lit.cfg), so the library takes its
 * place as is.
 *
 * Each entry point lives in its own archive member (as in LLVM's libc), so
 * a program takes only what it calls; a program that calls none of them
 * links nothing from here, and libomptarget then sets up no RPC server for
 * it (it looks for `__llvm_libc_rpc_client`, offload/plugins-nextgen/
 * common/src/RPC.cpp).
 *
 * Every member is OpenMP device code (`clang-19 -fopenmp
 * --offload-arch=gfx90a -c`) with an empty host half. Opcodes and packet
 * order follow LLVM 19's libc (libc/src/gpu/rpc_fprintf.cpp,
 * libc/src/stdio/gpu/, libc/src/stdlib/gpu/, libc/src/assert/gpu/) and its
 * server (libc/utils/gpu/server/rpc_server.cpp). */
#ifndef CGPU19_H
#define CGPU19_H

#include "../src/rpc.h"

/* LLVM 19's opcodes beyond those rpc.h names (rpc_opcodes_t.h). */
enum {
  CGPU19_PRINTF_TO_STDOUT = 21,
  CGPU19_PRINTF_TO_STDERR = 22,
  CGPU19_PRINTF_TO_STREAM = 23,
  /* The *_PACKED opcodes are these plus 3: arguments packed back to back,
   * as clang-19 lays out an AMDGPU va_list. */
  CGPU19_PACKED = 3,
};

/* Streams on the device: stdout and stderr point at two distinct objects
 * (their addresses are all that matters: every write to them is sent with
 * the STDOUT or STDERR opcode); any other FILE* is taken to be a host
 * stream pointer, as LLVM's libc does. */
typedef struct cgpu19_file FILE;
extern FILE *stdout;
extern FILE *stderr;

/* Whether a server wrote the client object (libomptarget does so at image
 * load when the image defines `__llvm_libc_rpc_client`). */
bool cgpu19_ready(void);

/* Length of a NUL-terminated string. */
uint64_t cgpu19_strlen(const char *s);

/* One printf request: `format`, then the `size` bytes of arguments at
 * `args` (at most what the server asks for), then each lane's %s strings
 * until the server answers with none. `packed` selects the *_PACKED opcode
 * (va_list layout). Returns the server's count of bytes printed, or -1
 * without a server. */
int cgpu19_print(FILE *stream, const char *format, const void *args,
                 uint64_t size, bool packed);

/* Writes `size` bytes to `stream` (plus a newline with `newline`, stdout
 * only); returns the bytes the host wrote. */
uint64_t cgpu19_write(FILE *stream, const void *data, uint64_t size,
                      bool newline);

#endif
