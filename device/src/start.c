/* Startup kernels with the names and argument layouts LLVM 19's loaders
 * launch: _begin(argc, argv, envp) on one thread, _start(argc, argv, envp,
 * ret) on every thread the user asked for, _end(status) on one thread. */
#include <stdint.h>
#include <stdlib.h>

extern int main(int argc, char **argv, char **envp);
extern char **__gpu_environ;

__attribute__((amdgpu_kernel, visibility("protected"))) void
_begin(int argc, char **argv, char **envp) {
  (void)argc;
  (void)argv;
  __gpu_environ = envp;
}

/* Every thread runs main; the results are ORed into *ret. */
__attribute__((amdgpu_kernel, visibility("protected"))) void
_start(int argc, char **argv, char **envp, int *ret) {
  __gpu_environ = envp;
  __atomic_fetch_or(ret, main(argc, argv, envp), __ATOMIC_RELAXED);
}

__attribute__((amdgpu_kernel, visibility("protected"))) void _end(int status) {
  exit(status);
}
