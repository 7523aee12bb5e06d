/* Every printf conversion with flags, widths, precisions and length
 * modifiers. argv[1] = "all": each thread prints every case for a few
 * values; "by-block": each thread prints the case of its workgroup with its
 * global id as the value; otherwise each thread prints one case chosen by
 * its global id (so lanes diverge). */
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "grid.h"

#define CASES 24

static void emit(int c, long v) {
  int i = (int)v;
  double d = (double)v * 1.25 + 0.0625;
  const char *words[4] = {"alpha", "beta", "", "a longer string value"};
  const char *s = words[v & 3];
  switch (c) {
  case 0: printf("%d|%i|%u|%%\n", i, -i, (unsigned)i * 7u); break;
  case 1: printf("%x|%X|%o|%#x|%#X|%#o\n", i * 97, i * 97, i, i + 1, i + 2, i + 8); break;
  case 2: printf("[%5d][%-5d][%05d][%+d][% d][%+5d]\n", i, i, i, i, i, -i); break;
  case 3: printf("[%.3d][%8.4d][%-8.3x][%.0d]\n", i, -i, i, 0); break;
  case 4: printf("%c%c%c|%3c|%-3c|\n", 'A' + (i % 26), 'a' + (i % 26), '0' + (i % 10), 'x', 'y'); break;
  case 5: printf("%s|%10s|%-10s|%.2s|%*s|\n", s, s, s, s, (int)(v % 12), s); break;
  case 6: printf("%p %p\n", (void *)(uintptr_t)(0x1000 + v), (void *)(uintptr_t)0xdeadbeefull); break;
  case 7: printf("%f|%.2f|%10.3f|%-10.1f|%+.0f|%#.0f\n", d, d, -d, d, d, d); break;
  case 8: printf("%e|%.3e|%E|%12.2e|%+e\n", d, d * 1e10, -d / 1e7, d, d); break;
  case 9: printf("%g|%G|%.3g|%g|%#g|%g\n", d, d * 1e-7, d * 1000, 1e20 + d, d, 0.0001 * d); break;
  case 10: printf("%a|%A|%.2a|%a\n", d, -d, d, 1.0 + v); break;
  case 11: printf("%hhd|%hhu|%hd|%hu\n", (signed char)(i * 13), (unsigned char)(i * 13), (short)(i * 1000), (unsigned short)(i * 1000)); break;
  case 12: printf("%ld|%lu|%lx|%lo\n", v * 100000000000L, (unsigned long)v * 3000000000UL, (unsigned long)v << 36, (unsigned long)v << 20); break;
  case 13: printf("%lld|%llu|%llX\n", (long long)v * -123456789012LL, (unsigned long long)v * 99999999999ULL, (unsigned long long)v * 0xfedcba987ULL); break;
  case 14: printf("%zu|%zx|%td|%jd|%ju\n", (size_t)v * 4096, (size_t)v, (ptrdiff_t)-v, (intmax_t)v * -77, (uintmax_t)v * 77); break;
  case 15: printf("%*d|%-*d|%.*f|%*.*e\n", 6, i, 6, i, 2, d, 12, 3, d); break;
  case 16: printf("%d %s %f %c %x %ld\n", i, s, d, 'q', (unsigned)i, v); break;
  case 17: printf("line %d of many: %s and %s\n", i, words[(v + 1) & 3], words[(v + 2) & 3]); break;
  case 18: printf("%08.3f|%-+8.2f|% .4f|%+08d\n", d, d, d, i); break;
  case 19: printf("%#.3g|%.0e|%#.0e|%.10g\n", d, d, d, d / 3.0); break;
  case 20: printf("%u %u %u %u %u %u %u %u %u %u\n", (unsigned)v, (unsigned)v + 1, (unsigned)v + 2, (unsigned)v + 3, (unsigned)v + 4, (unsigned)v + 5, (unsigned)v + 6, (unsigned)v + 7, (unsigned)v + 8, (unsigned)v + 9); break;
  case 21: printf("%s%s%s%s\n", "multi", s, "-", words[(v + 3) & 3]); break;
  case 22: printf("%f %f %e %g\n", -0.0, 1e300 * (double)(v + 1), 5e-300, 123456789.0); break;
  default: printf("no conversions, thread value %d is in the next line\n%d\n", i, i); break;
  }
}

static int body(int argc, char **argv, unsigned block, unsigned thread,
                unsigned threads) {
  long gid = (long)block * threads + thread;
  if (argc > 1 && strcmp(argv[1], "all") == 0) {
    for (int c = 0; c < CASES; ++c)
      for (long v = 0; v < 4; ++v)
        emit(c, v * 37 + gid);
  } else if (argc > 1 && strcmp(argv[1], "by-block") == 0) {
    /* one case per workgroup: every wavefront prints with all its lanes */
    emit((int)(block % CASES), gid);
  } else {
    emit((int)(gid % CASES), gid);
  }
  return 0;
}

int main(int argc, char **argv) { return GRID_RUN(body, argc, argv); }
