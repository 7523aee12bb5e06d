// printf and fprintf(stderr, ...) from 64 lanes of an LLVM 19 target region
// (one team of 64 threads: one wavefront), every conversion of C's printf
// with flags, widths, precisions and length modifiers; run by `cargo xtask
// test` through LLVM 19's libomptarget on the virtual gfx90a, linked with
// the project's libcgpu-amdgpu.a (device/omp19/), and on the host
// (OMP_TARGET_OFFLOAD=DISABLED), whose lines are the expected ones.
// %n is left out: LLVM 19's RPC server does not store the count back.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int main(void) {
#pragma omp target teams distribute parallel for num_teams(1) thread_limit(64)
  for (int i = 0; i < 64; ++i) {
    int neg = -i * 1000003;
    unsigned u = 4000000000u - (unsigned)i;
    double d = (i - 31) * 1234.5678 / 7.0;
    const char *word = (i % 3 == 0) ? "fizz" : (i % 3 == 1) ? "buzz" : "";
    printf("%2d: d=%d i=%i u=%u o=%o x=%x X=%X c=%c s=%s %%\n", i, neg, i * 7,
           u, (unsigned)i * 9, u, (unsigned)i * 0xabcu, 'A' + i % 26, word);
    printf("%2d: f=%f F=%F e=%e E=%E g=%g G=%G a=%a A=%A\n", i, d, d * 3, d,
           d / 1e9, d * 1e12, 1.0 / (i + 1), d, 1.0 / (i + 2));
    printf("%2d: [%-8d] [%+d] [% d] [%08.3f] [%#o] [%#x] [%.3s] [%*d] [%-*.*f]\n",
           i, i, i - 32, i, d, (unsigned)i, (unsigned)i, "truncate", i % 10, i,
           12, i % 5, d);
    printf("%2d: hh=%hhd h=%hd l=%ld ll=%lld hhu=%hhu hu=%hu lu=%lu llu=%llu\n",
           i, (signed char)(i * 5), (short)(i * -999), (long)i * -100000000l,
           (long long)i * 1000000000000ll, (unsigned char)(i * 7),
           (unsigned short)(i * 1111), (unsigned long)i * 3000000000ul,
           (unsigned long long)i << 40);
    printf("%2d: j=%jd z=%zu t=%td p=%p lx=%lx llX=%llX\n", i,
           (intmax_t)i * -77, (size_t)i * 123, (ptrdiff_t)(i - 40),
           (void *)(uintptr_t)(0x1000u + (unsigned)i), (unsigned long)i * 0xfeedul,
           (unsigned long long)i * 0xdeadbeefull);
    fprintf(stderr, "%2d: to stderr %s %d %.2f\n", i, word, neg, d);
  }
  printf("after the region\n");
  return 0;
}
