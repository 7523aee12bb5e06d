// The omp_get_* queries inside SPMD kernels, with explicit num_teams and
// thread_limit clauses and static schedules. Each iteration records which
// team and thread ran it; the program prints only facts that hold for any
// conforming assignment (ids in range, every iteration run exactly once,
// the distribution of iterations over teams of a `dist_schedule(static, C)`).
#include <omp.h>
#include <stdio.h>

#define N 2048
#define TEAMS 8
#define CHUNK 64

int main(void) {
  static int team_of[N], thread_of[N], nthreads_of[N], nteams_of[N], runs[N];

#pragma omp target teams distribute parallel for num_teams(TEAMS) thread_limit(128) \
    dist_schedule(static, CHUNK) map(from : team_of, thread_of, nthreads_of, nteams_of) \
    map(tofrom : runs)
  for (int i = 0; i < N; i++) {
    team_of[i] = omp_get_team_num();
    thread_of[i] = omp_get_thread_num();
    nthreads_of[i] = omp_get_num_threads();
    nteams_of[i] = omp_get_num_teams();
#pragma omp atomic
    runs[i] += 1;
  }

  int bad_thread = 0, bad_team = 0, bad_runs = 0, bad_chunk = 0, nteams = nteams_of[0];
  for (int i = 0; i < N; i++) {
    if (thread_of[i] < 0 || thread_of[i] >= nthreads_of[i] || nthreads_of[i] > 128)
      bad_thread++;
    if (team_of[i] < 0 || team_of[i] >= nteams_of[i] || nteams_of[i] != nteams)
      bad_team++;
    if (runs[i] != 1)
      bad_runs++;
    // dist_schedule(static, CHUNK): chunk k goes to team k mod nteams.
    if (team_of[i] != (i / CHUNK) % nteams)
      bad_chunk++;
  }
  printf("teams<=%d:%d bad_thread=%d bad_team=%d bad_runs=%d bad_chunk=%d\n", TEAMS,
         nteams >= 1 && nteams <= TEAMS, bad_thread, bad_team, bad_runs, bad_chunk);

  // The same with a two-dimensional nest and per-team counters.
  static int per_team[TEAMS];
#pragma omp target teams distribute num_teams(TEAMS) map(tofrom : per_team)
  for (int t = 0; t < TEAMS; t++) {
    int count = 0;
#pragma omp parallel for reduction(+ : count)
    for (int i = 0; i < 100 + t; i++)
      count += 1 + (omp_get_thread_num() < omp_get_num_threads() ? 0 : 1000);
    per_team[t] = count;
  }
  printf("per_team:");
  for (int t = 0; t < TEAMS; t++)
    printf(" %d", per_team[t]);
  printf("\n");
  return 0;
}
