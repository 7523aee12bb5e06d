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
//   argv[1] = "puts", argv[2]  -> work-item 0 writes argv[2] and a newline
//                                 to stdout through RPC, returns 0
//   argv[1] = "exit", argv[2]  -> work-item 0 calls exit(argv[2]) through
//                                 RPC (the loader ends with that status)
//   argv[1] = "malloc"         -> work-item 0 gets 64 bytes by RPC MALLOC,
//                                 writes and reads them, FREEs them,
//                                 returns 99 when all worked
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

// A one-lane RPC client following LLVM 19's protocol (rpc.h), just enough
// for the tests: port 0 only, lane 0 of a wave64 (lane mask 1).
struct rpc_header {
  unsigned long mask;
  unsigned short opcode;
};
struct rpc_client {
  unsigned port_count;
  unsigned *inbox;
  unsigned *outbox;
  struct rpc_header *header;
  unsigned long (*packet)[8];
  unsigned lock[128];
};
static struct rpc_client client;
__attribute__((visibility("protected"))) void *__llvm_libc_rpc_client = &client;

static unsigned port_out;

static void rpc_open(unsigned short opcode) {
  port_out = __atomic_load_n(&client.outbox[0], __ATOMIC_RELAXED);
  while (__atomic_load_n(&client.inbox[0], __ATOMIC_RELAXED) != port_out)
    __builtin_amdgcn_s_sleep(2);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  client.header[0].opcode = opcode;
  client.header[0].mask = 1;
}

// Wait until the port is ours (inbox == outbox), fill the packet, hand it over.
static void rpc_send(const unsigned long data[8]) {
  while (__atomic_load_n(&client.inbox[0], __ATOMIC_RELAXED) != port_out)
    __builtin_amdgcn_s_sleep(2);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  for (int i = 0; i < 8; ++i)
    client.packet[0][i] = data[i];
  port_out = !port_out;
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&client.outbox[0], port_out, __ATOMIC_RELAXED);
}

static void rpc_recv(unsigned long data[8]) {
  while (__atomic_load_n(&client.inbox[0], __ATOMIC_RELAXED) != port_out)
    __builtin_amdgcn_s_sleep(2);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  for (int i = 0; i < 8; ++i)
    data[i] = client.packet[0][i];
}

// A receive right after a receive: hand the packet back first (the
// protocol's receive following a receive flips the outbox).
static void rpc_recv_again(unsigned long data[8]) {
  port_out = !port_out;
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&client.outbox[0], port_out, __ATOMIC_RELAXED);
  rpc_recv(data);
}

// send_n: size and the first 56 bytes, then 64 bytes per packet.
static void rpc_send_n(const char *s, unsigned long size) {
  unsigned long d[8] = {size};
  char *b = (char *)d;
  for (unsigned long i = 0; i < size && i < 56; ++i)
    b[8 + i] = s[i];
  rpc_send(d);
  for (unsigned long idx = 56; idx < size; idx += 64) {
    for (unsigned long i = 0; i < 64 && idx + i < size; ++i)
      b[i] = s[idx + i];
    rpc_send(d);
  }
}

static unsigned long length(const char *s) {
  unsigned long n = 0;
  while (s[n])
    ++n;
  return n;
}

enum { RPC_EXIT = 1, RPC_WRITE_TO_STDOUT_NEWLINE = 5, RPC_MALLOC = 10, RPC_FREE = 11 };
// LLVM 19's test opcodes (test_rpc_opcodes_t.h): 2^15 + 1, 2^15 + 2.
enum { RPC_TEST_INCREMENT = 32769, RPC_TEST_INTERFACE = 32770 };

__attribute__((amdgpu_kernel, visibility("protected"))) void _begin(int argc, char **argv, char **envp) {}

__attribute__((amdgpu_kernel, visibility("protected"))) void _start(int argc, char **argv, char **envp,
                                           int *ret) {
  const char *a = argv[1];
  int first = __builtin_amdgcn_workitem_id_x() == 0 && __builtin_amdgcn_workgroup_id_x() == 0;
  if (argc == 3 && same(a, "puts")) {
    if (first) {
      unsigned long d[8] = {0};
      rpc_open(RPC_WRITE_TO_STDOUT_NEWLINE);
      rpc_send_n(argv[2], length(argv[2]));
      rpc_recv(d);
    }
    return;
  }
  if (argc == 3 && same(a, "exit")) {
    if (first) {
      unsigned long d[8] = {0};
      rpc_open(RPC_EXIT);
      rpc_send(d);
      rpc_recv(d);
      d[0] = (unsigned)to_int(argv[2]);
      rpc_send(d);
      for (;;)
        __builtin_amdgcn_s_sleep(100);
    }
    return;
  }
  if (argc == 2 && same(a, "malloc")) {
    if (first) {
      unsigned long d[8] = {64};
      rpc_open(RPC_MALLOC);
      rpc_send(d);
      rpc_recv(d);
      volatile unsigned long *p = (volatile unsigned long *)d[0];
      int ok = p != 0;
      if (ok) {
        for (int i = 0; i < 8; ++i)
          p[i] = 1000 + i;
        for (int i = 0; i < 8; ++i)
          ok &= p[i] == 1000 + i;
      }
      // Close: the server flips back after our last send; wait for it.
      rpc_recv(d);
      unsigned long f[8] = {(unsigned long)p};
      rpc_open(RPC_FREE);
      rpc_send(f);
      rpc_recv(f);
      __atomic_fetch_or(ret, ok ? 99 : 1, __ATOMIC_RELAXED);
    }
    return;
  }
  if (argc == 3 && same(a, "increment")) {
    if (first) {
      unsigned long d[8] = {(unsigned)to_int(argv[2])};
      rpc_open(RPC_TEST_INCREMENT);
      rpc_send(d);
      rpc_recv(d);
      __atomic_fetch_or(ret, (int)d[0], __ATOMIC_RELAXED);
    }
    return;
  }
  if (argc == 3 && same(a, "interface")) {
    // The device's half of RPC_TEST_INTERFACE, ending with a receive from
    // the server (first word 0): every value the server sends is the last
    // one it received plus one. Returns the last value received.
    if (first) {
      unsigned long d[8] = {0};
      rpc_open(RPC_TEST_INTERFACE);
      rpc_send(d);
      d[0] = (unsigned)to_int(argv[2]);
      rpc_send(d);
      rpc_recv(d);
      d[0] += 10;
      rpc_send(d);
      rpc_recv(d);
      d[0] += 10;
      rpc_send(d);
      d[0] += 10;
      rpc_send(d);
      rpc_recv(d);
      rpc_recv_again(d);
      rpc_recv_again(d);
      __atomic_fetch_or(ret, (int)d[0], __ATOMIC_RELAXED);
    }
    return;
  }
  if (argc != 2) {
    __atomic_fetch_or(ret, 200 + argc, __ATOMIC_RELAXED);
    return;
  }
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
