// `omp atomic` update and capture on int, long and double from many teams
// and threads at once: a histogram, a ticket counter whose captured values
// must be a permutation, and double accumulations of exact values.
#include <stdio.h>
#include <stdlib.h>

#define N 8192
#define BINS 16

int main(void) {
  static int hist[BINS];
  static int ticket_of[N];
  static long lhist[4];
  int counter = 0;
  long lcounter = 0;
  double dsum = 0.0;
  unsigned bits_and = 0xFFFFFFFFu, bits_or = 0, bits_xor = 0;
  long lticket = 0;
  double dticket = 0.0;
  int last_writer = 0;
  static long lticket_of[N];
  static double dticket_of[N];

#pragma omp target teams distribute parallel for map(tofrom : hist, ticket_of, lhist, counter, \
                                                        lcounter, dsum, bits_and, bits_or, bits_xor, \
                                                        lticket, dticket, lticket_of, dticket_of, \
                                                        last_writer)
  for (int i = 0; i < N; i++) {
    int v = (i * 2654435761u) >> 7;
#pragma omp atomic update
    hist[v % BINS] += 1;
    int t;
#pragma omp atomic capture
    t = counter++;
    ticket_of[i] = t;
#pragma omp atomic
    lhist[i & 3] += (long)i * 100000;
#pragma omp atomic
    lcounter -= 3;
#pragma omp atomic update
    dsum += (double)(i % 64) * 0.125;
    // Bitwise updates: the final values do not depend on the order.
#pragma omp atomic
    bits_and &= ~(1u << ((i % 7) * 3));
#pragma omp atomic
    bits_or |= 1u << (i % 29);
#pragma omp atomic
    bits_xor ^= (unsigned)i * 0x9E3779B9u;
    // Capture on long and double: every captured value is distinct and on the grid.
    long lt;
#pragma omp atomic capture
    lt = lticket += 5;
    lticket_of[i] = lt;
    double dt;
#pragma omp atomic capture
    { dt = dticket; dticket += 0.5; }
    dticket_of[i] = dt;
#pragma omp atomic write
    last_writer = 7;
  }

  // Captured tickets must be exactly 0..N-1.
  static char got[N];
  int dup = 0, out_of_range = 0;
  for (int i = 0; i < N; i++) {
    int t = ticket_of[i];
    if (t < 0 || t >= N)
      out_of_range++;
    else if (got[t]++)
      dup++;
  }
  int total = 0;
  for (int b = 0; b < BINS; b++)
    total += hist[b];
  printf("hist total=%d bin0=%d bin5=%d bin15=%d\n", total, hist[0], hist[5], hist[15]);
  printf("tickets counter=%d dup=%d out_of_range=%d\n", counter, dup, out_of_range);
  printf("long: %ld %ld %ld %ld counter=%ld\n", lhist[0], lhist[1], lhist[2], lhist[3], lcounter);
  static char lgot[N], dgot[N];
  int ldup = 0, ddup = 0;
  for (int i = 0; i < N; i++) {
    long k = lticket_of[i] / 5 - 1;
    if (lticket_of[i] % 5 != 0 || k < 0 || k >= N || lgot[k]++)
      ldup++;
    double q = dticket_of[i] * 2.0;
    int kd = (int)q;
    if (q != (double)kd || kd < 0 || kd >= N || dgot[kd]++)
      ddup++;
  }
  printf("double sum=%.3f\n", dsum);
  printf("bits and=%08x or=%08x xor=%08x\n", bits_and, bits_or, bits_xor);
  printf("capture long=%ld bad=%d double=%.1f bad=%d write=%d\n", lticket, ldup, dticket, ddup,
         last_writer);
  return 0;
}
