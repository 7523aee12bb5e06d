// A program written against LLVM 19's GPU C library: `main` runs on every
// lane of the launch (`--threads N --blocks M` of the loader), each lane
// prints one line through the library's `printf`, lane 0 of block 0 also
// uses `puts` and `fputs(stderr)`. The exit status is the number of
// program arguments after the image, so both loaders' statuses compare too.
//
// Built and run by `cargo xtask libc-gpu` (README, "Programs written
// against LLVM's GPU libc"); not part of the OpenMP corpus of `examples/`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv, char **envp) {
  unsigned lane = __builtin_amdgcn_workitem_id_x();
  unsigned block = __builtin_amdgcn_workgroup_id_x();
  const char *name = argc > 1 ? argv[1] : "nobody";
  if (lane == 0 && block == 0) {
    puts("gpu_libc_hello: main on the GPU");
    fputs("gpu_libc_hello: stderr works too\n", stderr);
  }
  printf("block %u lane %u: hello, %s (%d args, %zu chars)\n", block, lane,
         name, argc, strlen(name));
  return argc - 1;
}
