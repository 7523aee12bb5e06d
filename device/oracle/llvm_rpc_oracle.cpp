// llvm-rpc-oracle: runs a GPU program built by amdgpu-cc the way LLVM 19's
// amdhsa-loader does, with the RPC requests answered by LLVM 19's own server
// (Debian's libllvmlibc_rpc_server.a). It is the reference our Rust server
// and loader are compared with, byte for byte.
//
//   llvm-rpc-oracle [--threads N] [--blocks N] IMAGE [ARGS...]
//
// Steps, as LLVM's loader takes them: load the code object on the first GPU
// agent; copy argv and the environment to fine-grained host memory; set up
// the server with 4096 ports and the agent's wavefront size; copy the
// server's client object to where `__llvm_libc_rpc_client` points; write the
// timestamp frequency to `__llvm_libc_clock_freq` when present (the
// system's, as ROCm 5.2's headers lack the per-agent query); launch
// `_begin` (1 thread), `_start` (the grid asked for), `_end` (1 thread, with
// the OR of main's results) and serve RPC while each runs. The program ends
// inside the server when the device calls exit (as `_end` does).
//
// Errors (HSA failures, a memory fault, a queue error) are printed to stderr
// as "llvm-rpc-oracle: ..." and end the process with status 1.

#include "llvmlibc_rpc_opcodes.h"
#include "llvmlibc_rpc_server.h"

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const char *what, hsa_status_t status) {
  const char *text = nullptr;
  if (hsa_status_string(status, &text) != HSA_STATUS_SUCCESS || !text)
    text = "unknown HSA status";
  std::fprintf(stderr, "llvm-rpc-oracle: %s failed: %s\n", what, text);
  std::exit(1);
}

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "llvm-rpc-oracle: %s\n", what);
  std::exit(1);
}

void check(hsa_status_t status, const char *what) {
  if (status != HSA_STATUS_SUCCESS && status != HSA_STATUS_INFO_BREAK)
    fail(what, status);
}

struct Agents {
  hsa_agent_t gpu{0};
  hsa_agent_t cpu{0};
};

hsa_status_t pick_agent(hsa_agent_t agent, void *data) {
  auto *agents = static_cast<Agents *>(data);
  hsa_device_type_t type;
  if (hsa_status_t s = hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type))
    return s;
  if (type == HSA_DEVICE_TYPE_GPU && agents->gpu.handle == 0) {
    uint32_t features = 0;
    if (hsa_status_t s =
            hsa_agent_get_info(agent, HSA_AGENT_INFO_FEATURE, &features))
      return s;
    if (features & HSA_AGENT_FEATURE_KERNEL_DISPATCH)
      agents->gpu = agent;
  } else if (type == HSA_DEVICE_TYPE_CPU && agents->cpu.handle == 0) {
    agents->cpu = agent;
  }
  return HSA_STATUS_SUCCESS;
}

// The last global pool of `agent` whose flags contain `flag`.
struct PoolQuery {
  uint32_t flag;
  hsa_amd_memory_pool_t pool{0};
};

hsa_status_t pick_pool(hsa_amd_memory_pool_t pool, void *data) {
  auto *query = static_cast<PoolQuery *>(data);
  hsa_amd_segment_t segment;
  uint32_t flags = 0;
  if (hsa_status_t s = hsa_amd_memory_pool_get_info(
          pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment))
    return s;
  if (segment != HSA_AMD_SEGMENT_GLOBAL)
    return HSA_STATUS_SUCCESS;
  if (hsa_status_t s = hsa_amd_memory_pool_get_info(
          pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags))
    return s;
  if (flags & query->flag)
    query->pool = pool;
  return HSA_STATUS_SUCCESS;
}

hsa_amd_memory_pool_t find_pool(hsa_agent_t agent, uint32_t flag,
                                const char *what) {
  PoolQuery query{flag};
  check(hsa_amd_agent_iterate_memory_pools(agent, pick_pool, &query),
        "hsa_amd_agent_iterate_memory_pools");
  if (query.pool.handle == 0)
    fail(what);
  return query.pool;
}

struct Context {
  Agents agents;
  hsa_amd_memory_pool_t kernarg_pool{0};
  hsa_amd_memory_pool_t fine_pool{0};
  hsa_amd_memory_pool_t coarse_pool{0};
  hsa_executable_t executable{0};
  hsa_queue_t *queue = nullptr;
  rpc_device_t server{0};
};

// Host memory the GPU agent may use.
void *alloc_visible(const Context &ctx, hsa_amd_memory_pool_t pool,
                    uint64_t size) {
  void *ptr = nullptr;
  check(hsa_amd_memory_pool_allocate(pool, size, 0, &ptr),
        "hsa_amd_memory_pool_allocate");
  check(hsa_amd_agents_allow_access(1, &ctx.agents.gpu, nullptr, ptr),
        "hsa_amd_agents_allow_access");
  return ptr;
}

// argv-style vector: pointer array (null terminated), then the strings.
void *copy_vector(const Context &ctx, int count, char **strings) {
  uint64_t table = sizeof(char *) * (uint64_t(count) + 1);
  uint64_t bytes = 0;
  for (int i = 0; i < count; ++i)
    bytes += std::strlen(strings[i]) + 1;
  auto *base = static_cast<char *>(
      alloc_visible(ctx, ctx.fine_pool, table + bytes));
  char **ptrs = reinterpret_cast<char **>(base);
  char *cursor = base + table;
  for (int i = 0; i < count; ++i) {
    uint64_t n = std::strlen(strings[i]) + 1;
    std::memcpy(cursor, strings[i], n);
    ptrs[i] = cursor;
    cursor += n;
  }
  ptrs[count] = nullptr;
  return base;
}

void copy_and_wait(void *dst, hsa_agent_t dst_agent, const void *src,
                   hsa_agent_t src_agent, uint64_t size) {
  hsa_signal_t done;
  check(hsa_signal_create(1, 0, nullptr, &done), "hsa_signal_create");
  check(hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, size, 0,
                                  nullptr, done),
        "hsa_amd_memory_async_copy");
  while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0,
                                   UINT64_MAX, HSA_WAIT_STATE_BLOCKED) != 0)
    ;
  check(hsa_signal_destroy(done), "hsa_signal_destroy");
}

// RPC_MALLOC / RPC_FREE: LLVM's server leaves them to the loader, which
// answers from the GPU agent's coarse-grained pool.
void serve_malloc(rpc_port_t port, void *data) {
  rpc_recv_and_send(
      port,
      [](rpc_buffer_t *buffer, void *data) {
        auto *ctx = static_cast<Context *>(data);
        void *ptr = nullptr;
        check(hsa_amd_memory_pool_allocate(ctx->coarse_pool, buffer->data[0],
                                           0, &ptr),
              "hsa_amd_memory_pool_allocate (malloc)");
        check(hsa_amd_agents_allow_access(1, &ctx->agents.gpu, nullptr, ptr),
              "hsa_amd_agents_allow_access (malloc)");
        buffer->data[0] = reinterpret_cast<uintptr_t>(ptr);
      },
      data);
}

void serve_free(rpc_port_t port, void *data) {
  rpc_recv_and_send(
      port,
      [](rpc_buffer_t *buffer, void *) {
        check(hsa_amd_memory_pool_free(
                  reinterpret_cast<void *>(buffer->data[0])),
              "hsa_amd_memory_pool_free (free)");
      },
      data);
}

struct Grid {
  uint32_t threads = 1;
  uint32_t blocks = 1;
};

template <typename Args>
void launch(Context &ctx, const char *name, const Grid &grid,
            const Args &args) {
  hsa_executable_symbol_t symbol;
  check(hsa_executable_get_symbol_by_name(ctx.executable, name,
                                          &ctx.agents.gpu, &symbol),
        name);
  uint64_t kernel_object = 0;
  uint32_t kernarg_size = 0, group_size = 0, private_size = 0;
  bool dynamic_stack = false;
  check(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &kernel_object),
        "hsa_executable_symbol_get_info");
  check(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
            &kernarg_size),
        "hsa_executable_symbol_get_info");
  check(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
            &group_size),
        "hsa_executable_symbol_get_info");
  check(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
            &private_size),
        "hsa_executable_symbol_get_info");
  check(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK,
            &dynamic_stack),
        "hsa_executable_symbol_get_info");

  // Explicit arguments first; the hidden ones stay zero (the device library
  // reads the grid from the dispatch packet).
  uint64_t size = kernarg_size < sizeof(Args) ? sizeof(Args) : kernarg_size;
  void *kernargs = alloc_visible(ctx, ctx.kernarg_pool, size);
  std::memset(kernargs, 0, size);
  std::memcpy(kernargs, &args, sizeof(Args));

  hsa_signal_t done;
  check(hsa_signal_create(1, 0, nullptr, &done), "hsa_signal_create");

  hsa_queue_t *q = ctx.queue;
  uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
  while (id - hsa_queue_load_read_index_scacquire(q) >= q->size)
    ;
  auto *packet = static_cast<hsa_kernel_dispatch_packet_t *>(q->base_address) +
                 (id & (q->size - 1));
  packet->setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  packet->workgroup_size_x = uint16_t(grid.threads);
  packet->workgroup_size_y = 1;
  packet->workgroup_size_z = 1;
  packet->reserved0 = 0;
  packet->grid_size_x = grid.threads * grid.blocks;
  packet->grid_size_y = 1;
  packet->grid_size_z = 1;
  packet->private_segment_size = dynamic_stack ? 16 * 1024 : private_size;
  packet->group_segment_size = group_size;
  packet->kernel_object = kernel_object;
  packet->kernarg_address = kernargs;
  packet->reserved2 = 0;
  packet->completion_signal = done;
  uint16_t header =
      (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  uint32_t word = uint32_t(header) | (uint32_t(packet->setup) << 16);
  __atomic_store_n(reinterpret_cast<uint32_t *>(packet), word,
                   __ATOMIC_RELEASE);
  hsa_signal_store_relaxed(q->doorbell_signal, int64_t(id));

  // Serve the device while the kernel runs, then once more for a request
  // still in flight when it ended.
  while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, 1024,
                                   HSA_WAIT_STATE_ACTIVE) != 0) {
    if (rpc_status_t s = rpc_handle_server(ctx.server)) {
      std::fprintf(stderr, "llvm-rpc-oracle: RPC server error %d\n", int(s));
      std::exit(1);
    }
  }
  if (rpc_status_t s = rpc_handle_server(ctx.server)) {
    std::fprintf(stderr, "llvm-rpc-oracle: RPC server error %d\n", int(s));
    std::exit(1);
  }
  check(hsa_signal_destroy(done), "hsa_signal_destroy");
  check(hsa_amd_memory_pool_free(kernargs), "hsa_amd_memory_pool_free");
}

struct BeginArgs {
  int argc;
  void *argv;
  void *envp;
};
struct StartArgs {
  int argc;
  void *argv;
  void *envp;
  void *ret;
};
struct EndArgs {
  int status;
};

hsa_status_t on_system_event(const hsa_amd_event_t *event, void *) {
  if (event->event_type != HSA_AMD_GPU_MEMORY_FAULT_EVENT)
    return HSA_STATUS_SUCCESS;
  const hsa_amd_gpu_memory_fault_info_t &fault = event->memory_fault;
  std::fprintf(stderr,
               "llvm-rpc-oracle: GPU memory fault at address 0x%llx "
               "(reason mask 0x%x)\n",
               static_cast<unsigned long long>(fault.virtual_address),
               fault.fault_reason_mask);
  return HSA_STATUS_SUCCESS;
}

void on_queue_error(hsa_status_t status, hsa_queue_t *, void *) {
  fail("the kernel stopped", status);
}

} // namespace

int main(int argc, char **argv, char **envp) {
  Grid grid;
  int first = 1;
  for (; first < argc; ++first) {
    std::string opt = argv[first];
    if ((opt == "--threads" || opt == "--blocks") && first + 1 < argc) {
      uint32_t value = uint32_t(std::strtoul(argv[++first], nullptr, 10));
      (opt == "--threads" ? grid.threads : grid.blocks) = value ? value : 1;
    } else {
      break;
    }
  }
  if (first >= argc) {
    std::fprintf(stderr, "usage: llvm-rpc-oracle [--threads N] [--blocks N] "
                         "IMAGE [ARGS...]\n");
    return 1;
  }
  FILE *file = std::fopen(argv[first], "rb");
  if (!file) {
    std::fprintf(stderr, "llvm-rpc-oracle: cannot open image '%s'\n",
                 argv[first]);
    return 1;
  }
  std::vector<char> image;
  char chunk[65536];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, file)) > 0;)
    image.insert(image.end(), chunk, chunk + n);
  std::fclose(file);

  Context ctx;
  check(hsa_init(), "hsa_init");
  check(hsa_amd_register_system_event_handler(on_system_event, nullptr),
        "hsa_amd_register_system_event_handler");
  check(hsa_iterate_agents(pick_agent, &ctx.agents), "hsa_iterate_agents");
  if (ctx.agents.gpu.handle == 0 || ctx.agents.cpu.handle == 0)
    fail("no GPU kernel agent or no CPU agent");

  hsa_code_object_reader_t reader;
  check(hsa_code_object_reader_create_from_memory(image.data(), image.size(),
                                                  &reader),
        "hsa_code_object_reader_create_from_memory");
  check(hsa_executable_create_alt(HSA_PROFILE_FULL,
                                  HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO, "",
                                  &ctx.executable),
        "hsa_executable_create_alt");
  check(hsa_executable_load_agent_code_object(ctx.executable, ctx.agents.gpu,
                                              reader, "", nullptr),
        "hsa_executable_load_agent_code_object");
  check(hsa_executable_freeze(ctx.executable, ""), "hsa_executable_freeze");
  uint32_t invalid = 0;
  check(hsa_executable_validate(ctx.executable, &invalid),
        "hsa_executable_validate");
  if (invalid)
    fail("the code object does not match the GPU agent");

  ctx.kernarg_pool = find_pool(ctx.agents.cpu,
                               HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT,
                               "no kernarg memory pool");
  ctx.fine_pool = find_pool(ctx.agents.cpu,
                            HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
                            "no fine-grained memory pool");
  ctx.coarse_pool = find_pool(ctx.agents.gpu,
                              HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                              "no coarse-grained memory pool");

  int prog_argc = argc - first;
  void *dev_argv = copy_vector(ctx, prog_argc, argv + first);
  int envc = 0;
  while (envp[envc])
    ++envc;
  void *dev_envp = copy_vector(ctx, envc, envp);
  int *dev_ret =
      static_cast<int *>(alloc_visible(ctx, ctx.fine_pool, sizeof(int)));
  *dev_ret = 0;

  uint32_t lanes = 0;
  check(hsa_agent_get_info(ctx.agents.gpu, HSA_AGENT_INFO_WAVEFRONT_SIZE,
                           &lanes),
        "hsa_agent_get_info(WAVEFRONT_SIZE)");
  if (rpc_status_t s = rpc_server_init(
          &ctx.server, RPC_MAXIMUM_PORT_COUNT, lanes,
          [](uint64_t size, void *data) {
            auto *c = static_cast<Context *>(data);
            return alloc_visible(*c, c->fine_pool, size);
          },
          &ctx)) {
    std::fprintf(stderr, "llvm-rpc-oracle: rpc_server_init: %d\n", int(s));
    return 1;
  }
  rpc_register_callback(ctx.server, RPC_MALLOC, serve_malloc, &ctx);
  rpc_register_callback(ctx.server, RPC_FREE, serve_free, &ctx);

  // The device global holds the address of its client object; overwrite the
  // object with the server's view of the shared memory.
  hsa_executable_symbol_t client_sym;
  check(hsa_executable_get_symbol_by_name(ctx.executable,
                                          "__llvm_libc_rpc_client",
                                          &ctx.agents.gpu, &client_sym),
        "finding __llvm_libc_rpc_client");
  void *client_ptr_addr = nullptr;
  check(hsa_executable_symbol_get_info(
            client_sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
            &client_ptr_addr),
        "hsa_executable_symbol_get_info");
  void **staging = static_cast<void **>(
      alloc_visible(ctx, ctx.fine_pool, sizeof(void *) + 8));
  copy_and_wait(staging, ctx.agents.cpu, client_ptr_addr, ctx.agents.gpu,
                sizeof(void *));
  void *client_addr = *staging;
  uint64_t client_size = rpc_get_client_size();
  void *client_copy = alloc_visible(ctx, ctx.fine_pool, client_size);
  std::memcpy(client_copy, rpc_get_client_buffer(ctx.server), client_size);
  copy_and_wait(client_addr, ctx.agents.gpu, client_copy, ctx.agents.cpu,
                client_size);

  hsa_executable_symbol_t freq_sym;
  if (hsa_executable_get_symbol_by_name(ctx.executable,
                                        "__llvm_libc_clock_freq",
                                        &ctx.agents.gpu, &freq_sym) ==
      HSA_STATUS_SUCCESS) {
    uint64_t *freq = static_cast<uint64_t *>(
        alloc_visible(ctx, ctx.fine_pool, sizeof(uint64_t)));
    // ROCm 5.2's headers have no per-agent timestamp frequency; the
    // system's is the same clock.
    if (hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, freq) ==
        HSA_STATUS_SUCCESS) {
      void *freq_addr = nullptr;
      check(hsa_executable_symbol_get_info(
                freq_sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
                &freq_addr),
            "hsa_executable_symbol_get_info");
      copy_and_wait(freq_addr, ctx.agents.gpu, freq, ctx.agents.cpu,
                    sizeof(uint64_t));
    }
  }

  uint32_t queue_size = 0;
  check(hsa_agent_get_info(ctx.agents.gpu, HSA_AGENT_INFO_QUEUE_MIN_SIZE,
                           &queue_size),
        "hsa_agent_get_info(QUEUE_MIN_SIZE)");
  check(hsa_queue_create(ctx.agents.gpu, queue_size, HSA_QUEUE_TYPE_MULTI,
                         on_queue_error, nullptr, UINT32_MAX, UINT32_MAX,
                         &ctx.queue),
        "hsa_queue_create");

  Grid one;
  launch(ctx, "_begin.kd", one, BeginArgs{prog_argc, dev_argv, dev_envp});
  launch(ctx, "_start.kd", grid,
         StartArgs{prog_argc, dev_argv, dev_envp, dev_ret});
  int status = *dev_ret;
  // _end calls exit(status): the server ends this process while serving it.
  launch(ctx, "_end.kd", one, EndArgs{status});
  return status;
}
