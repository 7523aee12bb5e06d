// The virtual device's own dispatch round trip, with no plugin in between:
// loads a code object, dispatches one of its kernels N times on one HSA queue
// (one workgroup of 64 work-items, zeroed kernel arguments) and times each
// dispatch from the doorbell store to the completion signal seen by a waiter
// in hsa_signal_wait_scacquire.
//
//   hsa_dispatch CODE_OBJECT KERNEL_PREFIX N [WORKGROUP_SIZE [GRID_SIZE [active|blocked]]]
//
// (one dimension; both sizes default to 64 work-items; the waiter blocks by
// default, `active` makes it wait with HSA_WAIT_STATE_ACTIVE as LLVM's C++
// plugin does)
// KERNEL_PREFIX picks the first kernel symbol whose name starts with it
// (e.g. `__omp_offloading_` for the one target region of a program built with
// -Wl,--save-temps). Prints `dispatch_us median p10 p90` and the kernel name.
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    hsa_status_t s_ = (call);                                                                      \
    if (s_ != HSA_STATUS_SUCCESS) {                                                                \
      const char *m_ = "?";                                                                        \
      hsa_status_string(s_, &m_);                                                                  \
      fprintf(stderr, "%s failed: %s\n", #call, m_);                                               \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static hsa_agent_t gpu, cpu;
static int have_gpu, have_cpu;
static hsa_amd_memory_pool_t kernarg_pool;
static int have_kernarg;

static hsa_status_t on_agent(hsa_agent_t a, void *data) {
  (void)data;
  hsa_device_type_t t;
  CHECK(hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t));
  if (t == HSA_DEVICE_TYPE_GPU && !have_gpu) {
    gpu = a;
    have_gpu = 1;
  } else if (t == HSA_DEVICE_TYPE_CPU && !have_cpu) {
    cpu = a;
    have_cpu = 1;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t on_pool(hsa_amd_memory_pool_t p, void *data) {
  (void)data;
  uint32_t flags = 0;
  hsa_amd_segment_t seg;
  CHECK(hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg));
  if (seg != HSA_AMD_SEGMENT_GLOBAL)
    return HSA_STATUS_SUCCESS;
  CHECK(hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
  if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !have_kernarg) {
    kernarg_pool = p;
    have_kernarg = 1;
  }
  return HSA_STATUS_SUCCESS;
}

struct pick {
  const char *prefix;
  hsa_executable_symbol_t sym;
  int found;
  char name[256];
};

static hsa_status_t on_symbol(hsa_executable_t e, hsa_executable_symbol_t s, void *data) {
  (void)e;
  struct pick *p = data;
  hsa_symbol_kind_t kind;
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind));
  if (kind != HSA_SYMBOL_KIND_KERNEL || p->found)
    return HSA_STATUS_SUCCESS;
  uint32_t len = 0;
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len));
  char name[256] = {0};
  if (len >= sizeof name)
    return HSA_STATUS_SUCCESS;
  CHECK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name));
  if (strncmp(name, p->prefix, strlen(p->prefix)) == 0) {
    p->sym = s;
    p->found = 1;
    memcpy(p->name, name, len + 1);
  }
  return HSA_STATUS_SUCCESS;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s CODE_OBJECT KERNEL_PREFIX N [WORKGROUP_SIZE [GRID_SIZE]]\n",
            argv[0]);
    return 2;
  }
  long n = atol(argv[3]);
  uint32_t wg = argc > 4 ? (uint32_t)atol(argv[4]) : 64;
  uint32_t grid = argc > 5 ? (uint32_t)atol(argv[5]) : wg;
  hsa_wait_state_t wait_state = argc > 6 && !strcmp(argv[6], "active") ? HSA_WAIT_STATE_ACTIVE
                                                                         : HSA_WAIT_STATE_BLOCKED;
  if (wg == 0 || wg > 1024 || grid < wg) {
    fprintf(stderr, "bad sizes\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f || n <= 0) {
    fprintf(stderr, "cannot open %s (or bad N)\n", argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *blob = malloc(size);
  if (fread(blob, 1, size, f) != (size_t)size)
    return 2;
  fclose(f);

  CHECK(hsa_init());
  CHECK(hsa_iterate_agents(on_agent, NULL));
  if (!have_gpu || !have_cpu) {
    fprintf(stderr, "no GPU or CPU agent\n");
    return 1;
  }
  CHECK(hsa_amd_agent_iterate_memory_pools(cpu, on_pool, NULL));
  if (!have_kernarg) {
    fprintf(stderr, "no kernarg pool\n");
    return 1;
  }
  hsa_code_object_reader_t reader;
  CHECK(hsa_code_object_reader_create_from_memory(blob, size, &reader));
  hsa_executable_t exe;
  CHECK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                                  &exe));
  CHECK(hsa_executable_load_agent_code_object(exe, gpu, reader, NULL, NULL));
  CHECK(hsa_executable_freeze(exe, NULL));
  struct pick pick = {.prefix = argv[2]};
  CHECK(hsa_executable_iterate_symbols(exe, on_symbol, &pick));
  if (!pick.found) {
    fprintf(stderr, "no kernel named %s*\n", argv[2]);
    return 1;
  }
  uint64_t object;
  uint32_t kernarg_size, group, private_size;
  CHECK(hsa_executable_symbol_get_info(pick.sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &object));
  CHECK(hsa_executable_symbol_get_info(
      pick.sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size));
  CHECK(hsa_executable_symbol_get_info(
      pick.sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &group));
  CHECK(hsa_executable_symbol_get_info(
      pick.sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &private_size));

  void *kernarg;
  size_t ka = kernarg_size < 256 ? 256 : kernarg_size;
  CHECK(hsa_amd_memory_pool_allocate(kernarg_pool, ka, 0, &kernarg));
  memset(kernarg, 0, ka);
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, kernarg));
  hsa_queue_t *q;
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q));
  hsa_signal_t done;
  CHECK(hsa_signal_create(1, 0, NULL, &done));

  double *t = malloc(n * sizeof(double));
  long warm = n / 10;
  for (long i = 0; i < n + warm; i++) {
    hsa_signal_store_relaxed(done, 1);
    double t0 = now_us();
    uint64_t idx = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_kernel_dispatch_packet_t *p =
        (hsa_kernel_dispatch_packet_t *)q->base_address + (idx % q->size);
    memset((char *)p + 4, 0, sizeof *p - 4);
    p->setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    p->workgroup_size_x = (uint16_t)wg;
    p->workgroup_size_y = 1;
    p->workgroup_size_z = 1;
    p->grid_size_x = grid;
    p->grid_size_y = 1;
    p->grid_size_z = 1;
    p->private_segment_size = private_size;
    p->group_segment_size = group;
    p->kernel_object = object;
    p->kernarg_address = kernarg;
    p->completion_signal = done;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                      (1 << HSA_PACKET_HEADER_BARRIER) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    __atomic_store_n((uint32_t *)p, header | ((uint32_t)p->setup << 16), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, idx);
    while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                     wait_state) != 0) {
    }
    if (i >= warm)
      t[i - warm] = now_us() - t0;
  }
  qsort(t, n, sizeof(double), cmp_double);
  printf("dispatch_us %.3f %.3f %.3f\n", t[n / 2], t[n / 10], t[(n * 9) / 10]);
  printf("kernel %s\n", pick.name);
  hsa_signal_destroy(done);
  hsa_queue_destroy(q);
  hsa_executable_destroy(exe);
  hsa_code_object_reader_destroy(reader);
  hsa_shut_down();
  return 0;
}
