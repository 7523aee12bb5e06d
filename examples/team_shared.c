// Intra-team synchronisation in generic mode: a buffer shared by the threads
// of a team, `omp barrier` between phases, `single`, `master`, a neighbour
// exchange through the shared buffer, and chunked static schedules.
// (Dynamic and guided schedules are left out: LLVM 16 deletes such loops at
// -O2, and at -O0 its device runtime reaches for device malloc, which is NULL
// on AMDGPU.)
#include <omp.h>
#include <stdio.h>

#define TEAMS 3
#define M 128

int main(void) {
  static long result[TEAMS][M];
  static int singles[TEAMS], chunk4[TEAMS], chunk7[TEAMS];
  static int bufs[TEAMS][M];

#pragma omp target teams num_teams(TEAMS) thread_limit(64) \
    map(from : result, chunk4, chunk7) map(tofrom : singles) map(alloc : bufs)
  {
    // Logical teams are spread over the teams actually granted.
    for (int team = omp_get_team_num(); team < TEAMS; team += omp_get_num_teams()) {
      // The team's exchange buffer (a row of a mapped array: variables declared in
      // the team region and shared by its threads would be "globalised", and LLVM
      // 16's device runtime gives each of 128 threads 0 bytes of its 512-byte
      // shared stack at -O0, so they would alias).
      int *buf = bufs[team];
#pragma omp parallel firstprivate(team, buf)
      {
        int nth = omp_get_num_threads();
        int tid = omp_get_thread_num();
        for (int i = tid; i < M; i += nth)
          buf[i] = i * (team + 1);
#pragma omp barrier
        // Read a neighbour's element written by another thread before the barrier.
        for (int i = tid; i < M; i += nth)
          result[team][i] = (long)buf[(i + 1) % M] * 10 + buf[i];
#pragma omp barrier
#pragma omp single
        {
#pragma omp atomic
          singles[team] += 1;
        }
#pragma omp master
        {
#pragma omp atomic
          singles[team] += 100;
        }
      }

      int dsum = 0, gsum = 0;
#pragma omp parallel for schedule(static, 4) reduction(+ : dsum)
      for (int i = 0; i < 200; i++)
        dsum += i % 9;
#pragma omp parallel for schedule(static, 7) reduction(+ : gsum)
      for (int i = 0; i < 300; i++)
        gsum += (i * team) % 5;
      chunk4[team] = dsum;
      chunk7[team] = gsum;
    }
  }

  for (int t = 0; t < TEAMS; t++) {
    long s = 0;
    for (int i = 0; i < M; i++)
      s += result[t][i];
    printf("team %d: sum=%ld r[0]=%ld r[127]=%ld single=%d chunk4=%d chunk7=%d\n", t, s,
           result[t][0], result[t][M - 1], singles[t], chunk4[t], chunk7[t]);
  }
  return 0;
}
