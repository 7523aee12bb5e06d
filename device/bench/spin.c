/* Computes for argv[1] milliseconds (default 2000) without any RPC. */
#include <stdint.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int ms = argc > 1 ? atoi(argv[1]) : 2000;
  uint64_t end = __builtin_amdgcn_s_memrealtime() + (uint64_t)ms * 100000u;
  volatile uint32_t x = 1;
  while (__builtin_amdgcn_s_memrealtime() < end)
    for (int i = 0; i < 1000; ++i)
      x = x * 1664525u + 1013904223u;
  return 0;
}
