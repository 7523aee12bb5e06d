// Unified shared memory: a kernel dereferences addresses drawn at random
// from memory of every kind the process has or lacks: heap, stack, a static
// array, a shared file mapping (loads and stores), a read-only mapping
// (loads; stores must fault), a PROT_NONE mapping, a hole the program
// unmapped, the first 64 KiB (never mappable) and non-canonical addresses
// (all must fault).
//
// Usage: usm_probe SEED FIRST END. The program draws the same probes for a
// given seed (the regions are laid out first, then probe i picks a region
// and an 8-byte aligned offset in it) and runs probes FIRST..END-1, one
// kernel each. Before each kernel it prints and flushes
//   probe I KIND ADDR load|store expect=value|fault
// then, when the kernel returns, `ok I` (a load read what the host reads
// there, a store's value is what the host reads afterwards) or `BAD I ...`.
// A probe that faults ends the process (libomptarget 16 aborts after a
// failed target region); the test checks the plugin's fault message names
// ADDR and starts a new process at the next probe. `done` ends a complete
// run.
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#pragma omp requires unified_shared_memory

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define REGION 65536UL
#define PROBES 1000

enum kind { HEAP, STACK, GLOBAL, FILEMAP, READONLY, PROTNONE, HOLE, LOW, NONCANON, KINDS };
static const char *const names[KINDS] = {"heap",     "stack",    "global",
                                         "file",     "readonly", "protnone",
                                         "unmapped", "low",      "noncanonical"};

static long global_buf[REGION / sizeof(long)];

static uint64_t rng_state;
static uint64_t next_random(void) {
  // splitmix64
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64's output function alone, for draws off the main sequence.
static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static long pattern(uintptr_t addr) { return (long)(addr * 0x2545f4914f6cdd1dULL); }

static void fill(void *base, size_t bytes) {
  long *p = base;
  for (size_t i = 0; i < bytes / sizeof(long); ++i)
    p[i] = pattern((uintptr_t)&p[i]);
}

// Whether [addr, addr + 8) lies in a mapping of /proc/self/maps.
static int mapped(uintptr_t addr) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f)
    return 1;
  unsigned long lo, hi;
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr + 8 > lo && addr < hi) {
      found = 1;
      break;
    }
  }
  fclose(f);
  return found;
}

// One kernel: loads or stores 8 bytes at `addr`; returns what it read or
// wrote (a store writes `value`).
static long touch(uintptr_t addr, int store, long value) {
  long got = 0;
#pragma omp target map(tofrom : got)
  {
    volatile long *p = (volatile long *)addr;
    if (store) {
      *p = value;
      got = value;
    } else {
      got = *p;
    }
  }
  return got;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s SEED FIRST END\n", argv[0]);
    return 2;
  }
  rng_state = strtoull(argv[1], NULL, 0);
  long first = atol(argv[2]), end = atol(argv[3]);
  long stack_buf[REGION / sizeof(long)];

  char path[] = "/tmp/usm_probe_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, REGION) != 0)
    return 2;
  unlink(path);
  void *base[KINDS] = {0};
  base[HEAP] = malloc(REGION);
  base[STACK] = stack_buf;
  base[GLOBAL] = global_buf;
  base[FILEMAP] = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  base[READONLY] = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  base[PROTNONE] = mmap(NULL, REGION, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // The hole lies far below where mmap places mappings (top down from
  // under the stack), so that the runtime's later mappings do not fill it.
  base[HOLE] = mmap((void *)0x3e0000000000UL, 16 * REGION, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (base[HOLE] == MAP_FAILED)
    base[HOLE] = mmap(NULL, 16 * REGION, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!base[HEAP] || base[FILEMAP] == MAP_FAILED || base[READONLY] == MAP_FAILED ||
      base[PROTNONE] == MAP_FAILED || base[HOLE] == MAP_FAILED)
    return 2;
  for (int k = HEAP; k <= READONLY; ++k)
    fill(base[k], REGION);
  if (mprotect(base[READONLY], REGION, PROT_READ) != 0 || munmap(base[HOLE], 16 * REGION) != 0)
    return 2;

  // Load the image and start the device first: the runtime maps code and
  // pools as it does, maybe into the hole, which the probes must see.
  int warm = 0;
#pragma omp target map(tofrom : warm)
  warm = 1;
  if (warm != 1)
    return 2;

  long bad = 0, skipped = 0;
  for (long i = 0; i < end; ++i) {
    // Out of 20: 12 probes reach writable memory, 3 the read-only mapping
    // (half of them stores, which fault), 5 memory that must fault.
    static const int weights[KINDS] = {3, 3, 3, 3, 3, 1, 2, 1, 1};
    uint64_t r = next_random();
    int pick = (int)(r % 20), kind = 0;
    while (pick >= weights[kind])
      pick -= weights[kind++];
    int store = (int)((r >> 8) & 1);
    uint64_t offset = (next_random() % (REGION / 8)) * 8;
    uintptr_t addr;
    if (kind == HOLE)
      addr = (uintptr_t)base[HOLE] + (next_random() % (16 * REGION / 8)) * 8;
    else if (kind == LOW)
      addr = offset;
    else if (kind == NONCANON)
      addr = 0x8000000000000000ULL | (next_random() & 0x7ffffffffff8ULL);
    else
      addr = (uintptr_t)base[kind] + offset;
    long value = (long)next_random();
    if (i < first)
      continue;
    int faults = kind >= PROTNONE || (kind == READONLY && store);
    // The runtime may have mapped something into the hole since (a thread's
    // stack, say): draw again there, off the main sequence so that every
    // process draws the same probes.
    for (uint64_t attempt = 1; kind == HOLE && mapped(addr) && attempt <= 100; ++attempt)
      addr = (uintptr_t)base[HOLE] +
             (mix((uint64_t)i * 1000 + attempt + rng_state) % (16 * REGION / 8)) * 8;
    if (kind == HOLE && mapped(addr)) {
      printf("skip %ld %s %#lx\n", i, names[kind], (unsigned long)addr);
      ++skipped;
      continue;
    }
    printf("probe %ld %s %#lx %s expect=%s\n", i, names[kind], (unsigned long)addr,
           store ? "store" : "load", faults ? "fault" : "value");
    fflush(stdout);
    long got = touch(addr, store, value);
    if (faults) {
      printf("BAD %ld: no fault\n", i);
      ++bad;
      continue;
    }
    long want = store ? value : *(volatile long *)addr;
    long seen = *(volatile long *)addr;
    if (got != want || (store && seen != value)) {
      printf("BAD %ld: got %#lx want %#lx host reads %#lx\n", i, (unsigned long)got,
             (unsigned long)want, (unsigned long)seen);
      ++bad;
    } else {
      printf("ok %ld\n", i);
    }
    fflush(stdout);
  }
  printf("done bad=%ld skipped=%ld\n", bad, skipped);
  return bad != 0;
}
