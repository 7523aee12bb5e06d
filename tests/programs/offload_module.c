// A shared object that offloads (built -fPIC -shared); the programs
// dlopen_twice.c and dlopen_module.c load it at run time. `module_sum(n)`
// sums 0..n-1 on the device and returns the sum.
long module_sum(int n) {
  long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum)
  for (int i = 0; i < n; i++) sum += i;
  return sum;
}
