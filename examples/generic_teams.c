// Generic-mode kernels: `target teams` with serial code per team and nested
// `parallel` regions (the device runtime's state machine), team-shared
// variables, and the omp_get_* queries. Only facts that do not depend on how
// many threads the implementation grants are printed.
#include <omp.h>
#include <stdio.h>

#define TEAMS 4
#define PER_TEAM 256

int main(void) {
  static int out[TEAMS * PER_TEAM];
  static int team_seen[TEAMS];
  static int team_count[TEAMS];
  static int bad[TEAMS];
  for (int i = 0; i < TEAMS * PER_TEAM; i++)
    out[i] = -1;

#pragma omp target teams num_teams(TEAMS) thread_limit(64) \
    map(tofrom : out, team_seen, team_count, bad)
  {
    // A host fallback may grant fewer teams than requested: every team takes
    // the logical blocks team, team + nteams, ...
    int nteams = omp_get_num_teams();
    for (int team = omp_get_team_num(); team < TEAMS; team += nteams) {
      // Serial part, executed by the team's main thread only.
      int base = team * PER_TEAM;
      int scale = team + 1;
      team_seen[team] = nteams >= 1 && nteams <= TEAMS;
      int local_bad = 0;
#pragma omp parallel
      {
        int tid = omp_get_thread_num();
        int nth = omp_get_num_threads();
        if (tid < 0 || tid >= nth)
          local_bad = 1;
        for (int i = tid; i < PER_TEAM; i += nth)
          out[base + i] = scale * i;
      }
      // Back in the serial part: a second parallel region with a worksharing loop.
      int counted = 0;
#pragma omp parallel for reduction(+ : counted)
      for (int i = 0; i < PER_TEAM; i++)
        counted += out[base + i] == scale * i;
      team_count[team] = counted;
      bad[team] = local_bad;
    }
  }

  long sum = 0;
  for (int i = 0; i < TEAMS * PER_TEAM; i++)
    sum += out[i];
  printf("sum=%ld out[5]=%d out[300]=%d out[1023]=%d\n", sum, out[5], out[300], out[1023]);
  for (int t = 0; t < TEAMS; t++)
    printf("team %d: seen=%d counted=%d bad=%d\n", t, team_seen[t], team_count[t], bad[t]);

  // `target parallel` (one team) and a plain serial `target`.
  int nthreads_ok = 0;
  int serial = 0;
#pragma omp target parallel num_threads(32) map(tofrom : nthreads_ok)
  {
    if (omp_get_thread_num() == 0)
      nthreads_ok = omp_get_num_threads() >= 1 && omp_get_num_threads() <= 32;
  }
#pragma omp target map(tofrom : serial)
  {
    for (int i = 1; i <= 100; i++)
      serial += i * (omp_get_team_num() + 1) * (omp_get_thread_num() + 1);
  }
  printf("target parallel ok=%d serial=%d\n", nthreads_ok, serial);
  return 0;
}
