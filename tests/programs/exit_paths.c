// Ways a program can end while the device is in use. argv[1] picks one:
//   nowait  - exit() while `target nowait` regions are still running;
//   thread  - exit() from a second host thread after both used the device;
//   fork    - fork() after the device was used; the child leaves with
//             _exit() without touching the device, the parent checks the
//             child's status and offloads once more. (_exit, not exit: LLVM
//             16's libomp asserts and hangs in a forked child's exit
//             handlers even with offload disabled; the plugin's own exit
//             handler in a forked child is tested through the C ABI.)
// Each prints what the host computes for the same work, so the output can
// be compared with OMP_TARGET_OFFLOAD=DISABLED.
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096

static long device_sum(int n) {
  long s = 0;
#pragma omp target teams distribute parallel for reduction(+ : s) map(tofrom : s)
  for (int i = 0; i < n; i++) s += i % 7;
  return s;
}

static void *second_thread(void *arg) {
  (void)arg;
  printf("thread sum %ld\n", device_sum(N));
  fflush(stdout);
  exit(0);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  printf("main sum %ld\n", device_sum(N));
  fflush(stdout);
  if (strcmp(argv[1], "nowait") == 0) {
    // Device buffers and is_device_ptr: the regions need no mapping, so
    // libomptarget's exit-time teardown of its mapping tables cannot fail
    // them; what is left is the plugin's teardown with kernels in flight.
    int dev = omp_get_default_device();
    for (int k = 0; k < 8; k++) {
      int *o = (int *)omp_target_alloc(N * sizeof(int), dev);
      if (!o) return 3;
#pragma omp target teams distribute parallel for is_device_ptr(o) nowait
      for (int i = 0; i < N; i++) {
        int v = i;
        for (int j = 0; j < 200; j++) v = (v * 1103515245 + 12345) & 0x7fffffff;
        o[i] = v;
      }
    }
    printf("leaving with work in flight\n");
    fflush(stdout);
    exit(0);
  }
  if (strcmp(argv[1], "thread") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, second_thread, NULL) != 0) return 3;
    pthread_join(t, NULL);
    return 4;  // not reached: the thread exits the process
  }
  if (strcmp(argv[1], "fork") == 0) {
    pid_t pid = fork();
    if (pid < 0) return 5;
    if (pid == 0) _exit(7);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 6;
    printf("child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    printf("main sum again %ld\n", device_sum(N));
    return 0;
  }
  return 2;
}
