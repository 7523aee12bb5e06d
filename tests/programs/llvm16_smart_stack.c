// A known LLVM 16 bug, reduced from HeCBench's secp256k1-omp (issue 35): a
// thread's globalized locals share LLVM 16's device-runtime "smart stack",
// whose per-thread usage counter is an unsigned char
// (SharedMemorySmartStackTy::Usage in DeviceRTL/src/State.cpp). With one
// thread per team the thread may use 512 bytes, but the counter wraps at
// 256: six 40-byte locals (48 bytes each once aligned) sit at offsets 0, 48,
// ..., 240, the seventh at 288 mod 256 = 32, over the first two. The device
// result is then what that layout computes (the model below), not what the
// host computes; real hardware runs the same instructions on the same LDS.
//
// clang-16 keeps the locals on the smart stack because `fill` captures the
// pointer (OpenMPOpt: "Could not move globalized variable to the stack");
// clang-19 turns them into allocas and computes the host's answer.
//
// Prints: host6 dev6 host7 model7 dev7 (hex); the test checks
// dev6 == host6 and dev7 == model7 != host7.
#include <stdio.h>
#include <string.h>

#pragma omp declare target
unsigned *last_filled;

__attribute__((noinline)) void fill(unsigned *p, unsigned v) {
  last_filled = p; // captured: the local stays globalized
  for (int i = 0; i < 10; i++) p[i] = v * 16 + i;
}

__attribute__((noinline)) unsigned digest(const unsigned *p) {
  unsigned s = 0;
  for (int i = 0; i < 10; i++) s = s * 31 + p[i];
  return s;
}

unsigned six_locals(unsigned k) {
  unsigned a[10], b[10], c[10], d[10], e[10], f[10];
  fill(a, k + 1); fill(b, k + 2); fill(c, k + 3);
  fill(d, k + 4); fill(e, k + 5); fill(f, k + 6);
  return digest(a) ^ digest(b) ^ digest(c) ^ digest(d) ^ digest(e) ^ digest(f);
}

unsigned seven_locals(unsigned k) {
  unsigned a[10], b[10], c[10], d[10], e[10], f[10], g[10];
  fill(a, k + 1); fill(b, k + 2); fill(c, k + 3); fill(d, k + 4);
  fill(e, k + 5); fill(f, k + 6); fill(g, k + 7);
  return digest(a) ^ digest(b) ^ digest(c) ^ digest(d) ^ digest(e) ^
         digest(f) ^ digest(g);
}
#pragma omp end declare target

// seven_locals with its arrays where LLVM 16's smart stack puts them: the
// i-th at (48 * i) mod 256 of one byte buffer.
static unsigned seven_in_wrapped_stack(unsigned k) {
  unsigned words[512 / 4];
  unsigned *at[7];
  memset(words, 0, sizeof words);
  for (int i = 0; i < 7; i++) at[i] = &words[((48 * i) % 256) / 4];
  for (int i = 0; i < 7; i++) fill(at[i], k + 1 + i);
  unsigned x = 0;
  for (int i = 0; i < 7; i++) x ^= digest(at[i]);
  return x;
}

int main(void) {
  unsigned dev6 = 0, dev7 = 0;
#pragma omp target teams distribute parallel for num_teams(1) thread_limit(1) \
    map(from : dev6, dev7)
  for (int i = 0; i < 1; i++) {
    dev6 = six_locals(5);
    dev7 = seven_locals(5);
  }
  printf("host6=%08x dev6=%08x host7=%08x model7=%08x dev7=%08x\n",
         six_locals(5), dev6, seven_locals(5), seven_in_wrapped_stack(5), dev7);
  return 0;
}
