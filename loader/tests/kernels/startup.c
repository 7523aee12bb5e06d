// Kernels are protected, as LLVM libc declares them, so the HSA loader can
// find them by name.
// A minimal stand-in for LLVM libc's GPU startup code, for testing
// amdhsa-loader without the RPC client: the three startup kernels with the
// argument layout of LLVM 19's loader, and a "main" computed from argv/envp.
//
// _start's return value (OR-ed into *ret by every work-item):
//   argv[1] = "<n>"            -> n (decimal)
//   argv[1] = "count"          -> number of work-items launched
//   argv[1] = "env"            -> value of LOADER_TEST_VALUE=<n> in envp
//   argv[1] = "wgsize"         -> workgroup size in x, read from the code
//                                 object v5 implicit arguments
//   argv[1] = "fault"          -> stores to an unmapped address
//   argc  != 2                 -> 200 + argc
typedef unsigned long uintptr_t;

static int to_int(const char *s) {
  int v = 0;
  while (*s >= '0' && *s <= '9')
    v = v * 10 + (*s++ - '0');
  return v;
}

static int same(const char *a, const char *b) {
  while (*a && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

static const char *after_prefix(const char *s, const char *prefix) {
  while (*prefix) {
    if (*s++ != *prefix++)
      return 0;
  }
  return s;
}

__attribute__((amdgpu_kernel, visibility("protected"))) void _begin(int argc, char **argv, char **envp) {}

__attribute__((amdgpu_kernel, visibility("protected"))) void _start(int argc, char **argv, char **envp,
                                           int *ret) {
  if (argc != 2) {
    __atomic_fetch_or(ret, 200 + argc, __ATOMIC_RELAXED);
    return;
  }
  const char *a = argv[1];
  if (same(a, "count")) {
    __atomic_fetch_add(ret, 1, __ATOMIC_RELAXED);
  } else if (same(a, "env")) {
    for (char **e = envp; *e; ++e) {
      const char *v = after_prefix(*e, "LOADER_TEST_VALUE=");
      if (v)
        __atomic_fetch_or(ret, to_int(v), __ATOMIC_RELAXED);
    }
  } else if (same(a, "wgsize")) {
    __atomic_fetch_or(ret, __builtin_amdgcn_workgroup_size_x(), __ATOMIC_RELAXED);
  } else if (same(a, "fault")) {
    *(volatile int *)(uintptr_t)0xdead0000 = 1;
  } else {
    __atomic_fetch_or(ret, to_int(a), __ATOMIC_RELAXED);
  }
}

__attribute__((amdgpu_kernel, visibility("protected"))) void _end(int retval) {}
