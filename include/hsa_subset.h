/*
 * hsa_subset.h: the part of the HSA runtime C API (core + AMD extensions)
 * that omptarget-amdgpu calls and that the virtual gfx90a device (sim/)
 * implements.
 *
 * Written by the omptarget-amdgpu project. Names, numeric values, struct
 * layouts and prototypes are those of ROCm 5.2 (hsa.h, hsa_ext_amd.h,
 * amd_hsa_queue.h, amd_hsa_signal.h, hsa_ven_amd_loader.h) for x86-64 Linux
 * with the large machine model; `cargo test -p xtask` compiles this header
 * and ROCm's side by side and fails on any difference in a value, a size, an
 * alignment, a field offset or a prototype. See ROCm 5.2's headers above for
 * what each item means, and ROCR-Runtime (tag rocm-5.2.3, src/core/runtime/
 * and src/loader/) for how the runtime behaves.
 *
 * This file is the input of `cargo xtask bindings`, which turns it into
 * hsa-sys/src/bindings.rs. Edit here, then regenerate.
 */
#ifndef OMPTARGET_AMDGPU_HSA_SUBSET_H
#define OMPTARGET_AMDGPU_HSA_SUBSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ======================================================================
 * Part 1. Status codes, system and extensions
 * ====================================================================== */

/* Result of every status-returning call. Core codes sit at 0x1000 and up;
 * the AMD codes are small decimal numbers (40..44); the finalizer and image
 * extensions use 0x2000 and 0x3000. */
typedef enum {
  HSA_STATUS_SUCCESS = 0x0,
  HSA_STATUS_INFO_BREAK = 0x1,
  HSA_STATUS_ERROR = 0x1000,
  HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001,
  HSA_STATUS_ERROR_INVALID_QUEUE_CREATION = 0x1002,
  HSA_STATUS_ERROR_INVALID_ALLOCATION = 0x1003,
  HSA_STATUS_ERROR_INVALID_AGENT = 0x1004,
  HSA_STATUS_ERROR_INVALID_REGION = 0x1005,
  HSA_STATUS_ERROR_INVALID_SIGNAL = 0x1006,
  HSA_STATUS_ERROR_INVALID_QUEUE = 0x1007,
  HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008,
  HSA_STATUS_ERROR_INVALID_PACKET_FORMAT = 0x1009,
  HSA_STATUS_ERROR_RESOURCE_FREE = 0x100A,
  HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B,
  HSA_STATUS_ERROR_REFCOUNT_OVERFLOW = 0x100C,
  HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS = 0x100D,
  HSA_STATUS_ERROR_INVALID_INDEX = 0x100E,
  HSA_STATUS_ERROR_INVALID_ISA = 0x100F,
  HSA_STATUS_ERROR_INVALID_CODE_OBJECT = 0x1010,
  HSA_STATUS_ERROR_INVALID_EXECUTABLE = 0x1011,
  HSA_STATUS_ERROR_FROZEN_EXECUTABLE = 0x1012,
  HSA_STATUS_ERROR_INVALID_SYMBOL_NAME = 0x1013,
  HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED = 0x1014,
  HSA_STATUS_ERROR_VARIABLE_UNDEFINED = 0x1015,
  HSA_STATUS_ERROR_EXCEPTION = 0x1016,
  HSA_STATUS_ERROR_INVALID_ISA_NAME = 0x1017,
  HSA_STATUS_ERROR_INVALID_CODE_SYMBOL = 0x1018,
  HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL = 0x1019,
  HSA_STATUS_ERROR_INVALID_FILE = 0x1020,
  HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER = 0x1021,
  HSA_STATUS_ERROR_INVALID_CACHE = 0x1022,
  HSA_STATUS_ERROR_INVALID_WAVEFRONT = 0x1023,
  HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP = 0x1024,
  HSA_STATUS_ERROR_INVALID_RUNTIME_STATE = 0x1025,
  HSA_STATUS_ERROR_FATAL = 0x1026,
  /* AMD extension codes (ROCm declares these in an unnamed enum of
   * hsa_ext_amd.h; they are listed here so that they share the type). */
  HSA_STATUS_ERROR_INVALID_MEMORY_POOL = 40,
  HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION = 41,
  HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION = 42,
  HSA_STATUS_ERROR_MEMORY_FAULT = 43,
  HSA_STATUS_CU_MASK_REDUCED = 44,
  /* Finalizer extension codes (hsa_ext_finalize.h). */
  HSA_EXT_STATUS_ERROR_INVALID_PROGRAM = 0x2000,
  HSA_EXT_STATUS_ERROR_INVALID_MODULE = 0x2001,
  HSA_EXT_STATUS_ERROR_INCOMPATIBLE_MODULE = 0x2002,
  HSA_EXT_STATUS_ERROR_MODULE_ALREADY_INCLUDED = 0x2003,
  HSA_EXT_STATUS_ERROR_SYMBOL_MISMATCH = 0x2004,
  HSA_EXT_STATUS_ERROR_FINALIZATION_FAILED = 0x2005,
  HSA_EXT_STATUS_ERROR_DIRECTIVE_MISMATCH = 0x2006,
  /* Image extension codes (hsa_ext_image.h). */
  HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED = 0x3000,
  HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED = 0x3001,
  HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED = 0x3002,
  HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED = 0x3003
} hsa_status_t;

/* Three 32-bit extents, used for grid and workgroup limits. 12 bytes. */
typedef struct {
  uint32_t x;
  uint32_t y;
  uint32_t z;
} hsa_dim3_t;

/* Memory access permissions (not used by the project's clients). */
typedef enum {
  HSA_ACCESS_PERMISSION_RO = 1,
  HSA_ACCESS_PERMISSION_WO = 2,
  HSA_ACCESS_PERMISSION_RW = 3
} hsa_access_permission_t;

/* Operating-system file descriptor. */
typedef int hsa_file_t;

typedef enum {
  HSA_ENDIANNESS_LITTLE = 0,
  HSA_ENDIANNESS_BIG = 1
} hsa_endianness_t;

typedef enum {
  HSA_MACHINE_MODEL_SMALL = 0,
  HSA_MACHINE_MODEL_LARGE = 1
} hsa_machine_model_t;

typedef enum {
  HSA_PROFILE_BASE = 0,
  HSA_PROFILE_FULL = 1
} hsa_profile_t;

/* Attributes for hsa_system_get_info; the value type of each is given in
 * spec section 4.2. */
typedef enum {
  HSA_SYSTEM_INFO_VERSION_MAJOR = 0,       /* uint16_t */
  HSA_SYSTEM_INFO_VERSION_MINOR = 1,       /* uint16_t */
  HSA_SYSTEM_INFO_TIMESTAMP = 2,           /* uint64_t ticks */
  HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY = 3, /* uint64_t Hz */
  HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT = 4,     /* uint64_t ticks */
  HSA_SYSTEM_INFO_ENDIANNESS = 5,          /* hsa_endianness_t */
  HSA_SYSTEM_INFO_MACHINE_MODEL = 6,       /* hsa_machine_model_t */
  HSA_SYSTEM_INFO_EXTENSIONS = 7,          /* uint8_t[128] bit mask */
  HSA_AMD_SYSTEM_INFO_BUILD_VERSION = 0x200,             /* const char* */
  HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED = 0x201,             /* bool */
  HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT = 0x202  /* bool */
} hsa_system_info_t;

/* Extension identifiers; also bit numbers in the EXTENSIONS masks. */
typedef enum {
  HSA_EXTENSION_FINALIZER = 0,
  HSA_EXTENSION_IMAGES = 1,
  HSA_EXTENSION_PERFORMANCE_COUNTERS = 2,
  HSA_EXTENSION_PROFILING_EVENTS = 3,
  HSA_EXTENSION_STD_LAST = 3,
  HSA_AMD_FIRST_EXTENSION = 0x200,
  HSA_EXTENSION_AMD_PROFILER = 0x200,
  HSA_EXTENSION_AMD_LOADER = 0x201,
  HSA_EXTENSION_AMD_AQLPROFILE = 0x202,
  HSA_AMD_LAST_EXTENSION = 0x202
} hsa_extension_t;

/* ======================================================================
 * Part 2. Opaque handles: one 64-bit word each, 0 meaning "none"
 * ====================================================================== */

typedef struct { uint64_t handle; } hsa_agent_t;
typedef struct { uint64_t handle; } hsa_cache_t;
typedef struct { uint64_t handle; } hsa_signal_t;
typedef struct { uint64_t handle; } hsa_signal_group_t;
typedef struct { uint64_t handle; } hsa_region_t;
typedef struct { uint64_t handle; } hsa_isa_t;
typedef struct { uint64_t handle; } hsa_wavefront_t;
typedef struct { uint64_t handle; } hsa_code_object_reader_t;
typedef struct { uint64_t handle; } hsa_executable_t;
typedef struct { uint64_t handle; } hsa_loaded_code_object_t;
typedef struct { uint64_t handle; } hsa_executable_symbol_t;
typedef struct { uint64_t handle; } hsa_code_object_t;
typedef struct { uint64_t handle; } hsa_code_symbol_t;
typedef struct { uint64_t handle; } hsa_amd_memory_pool_t;

/* ======================================================================
 * Part 3. Agents
 * ====================================================================== */

typedef enum {
  HSA_AGENT_FEATURE_KERNEL_DISPATCH = 1,
  HSA_AGENT_FEATURE_AGENT_DISPATCH = 2
} hsa_agent_feature_t;

typedef enum {
  HSA_DEVICE_TYPE_CPU = 0,
  HSA_DEVICE_TYPE_GPU = 1,
  HSA_DEVICE_TYPE_DSP = 2
} hsa_device_type_t;

typedef enum {
  HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT = 0,
  HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO = 1,
  HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR = 2
} hsa_default_float_rounding_mode_t;

/* Attributes for hsa_agent_get_info (value types: spec section 4.4). The
 * numbering is not in declaration order in ROCm either: 23 and 24 came late. */
typedef enum {
  HSA_AGENT_INFO_NAME = 0,                 /* char[64] */
  HSA_AGENT_INFO_VENDOR_NAME = 1,          /* char[64] */
  HSA_AGENT_INFO_FEATURE = 2,              /* hsa_agent_feature_t */
  HSA_AGENT_INFO_MACHINE_MODEL = 3,        /* hsa_machine_model_t */
  HSA_AGENT_INFO_PROFILE = 4,              /* hsa_profile_t */
  HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE = 5,
  HSA_AGENT_INFO_WAVEFRONT_SIZE = 6,       /* uint32_t */
  HSA_AGENT_INFO_WORKGROUP_MAX_DIM = 7,    /* uint16_t[3] */
  HSA_AGENT_INFO_WORKGROUP_MAX_SIZE = 8,   /* uint32_t */
  HSA_AGENT_INFO_GRID_MAX_DIM = 9,         /* hsa_dim3_t */
  HSA_AGENT_INFO_GRID_MAX_SIZE = 10,       /* uint32_t */
  HSA_AGENT_INFO_FBARRIER_MAX_SIZE = 11,   /* uint32_t */
  HSA_AGENT_INFO_QUEUES_MAX = 12,          /* uint32_t */
  HSA_AGENT_INFO_QUEUE_MIN_SIZE = 13,      /* uint32_t, packets */
  HSA_AGENT_INFO_QUEUE_MAX_SIZE = 14,      /* uint32_t, packets */
  HSA_AGENT_INFO_QUEUE_TYPE = 15,          /* hsa_queue_type32_t */
  HSA_AGENT_INFO_NODE = 16,                /* uint32_t */
  HSA_AGENT_INFO_DEVICE = 17,              /* hsa_device_type_t */
  HSA_AGENT_INFO_CACHE_SIZE = 18,          /* uint32_t[4], bytes */
  HSA_AGENT_INFO_ISA = 19,                 /* hsa_isa_t */
  HSA_AGENT_INFO_EXTENSIONS = 20,          /* uint8_t[128] */
  HSA_AGENT_INFO_VERSION_MAJOR = 21,       /* uint16_t */
  HSA_AGENT_INFO_VERSION_MINOR = 22,       /* uint16_t */
  HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES = 23, /* uint32_t mask */
  HSA_AGENT_INFO_FAST_F16_OPERATION = 24   /* bool */
} hsa_agent_info_t;

/* AMD agent attributes, passed to hsa_agent_get_info through a cast. */
typedef enum {
  HSA_AMD_AGENT_INFO_CHIP_ID = 0xA000,                  /* uint32_t */
  HSA_AMD_AGENT_INFO_CACHELINE_SIZE = 0xA001,           /* uint32_t, bytes */
  HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT = 0xA002,       /* uint32_t */
  HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY = 0xA003,      /* uint32_t, MHz */
  HSA_AMD_AGENT_INFO_DRIVER_NODE_ID = 0xA004,           /* uint32_t */
  HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS = 0xA005, /* uint32_t */
  HSA_AMD_AGENT_INFO_BDFID = 0xA006,                    /* uint32_t */
  HSA_AMD_AGENT_INFO_MEMORY_WIDTH = 0xA007,             /* uint32_t, bits */
  HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY = 0xA008,     /* uint32_t, MHz */
  HSA_AMD_AGENT_INFO_PRODUCT_NAME = 0xA009,             /* char[64] */
  HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU = 0xA00A,         /* uint32_t */
  HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU = 0xA00B,         /* uint32_t */
  HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES = 0xA00C,       /* uint32_t */
  HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE = 0xA00D, /* uint32_t */
  HSA_AMD_AGENT_INFO_HDP_FLUSH = 0xA00E,                /* hsa_amd_hdp_flush_t */
  HSA_AMD_AGENT_INFO_DOMAIN = 0xA00F,                   /* uint32_t */
  HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES = 0xA010,       /* bool */
  HSA_AMD_AGENT_INFO_UUID = 0xA011,                     /* char[25] */
  HSA_AMD_AGENT_INFO_ASIC_REVISION = 0xA012,            /* uint32_t */
  HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS = 0xA013,   /* bool */
  HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT = 0xA014 /* uint32_t */
} hsa_amd_agent_info_t;

/* Register addresses answered for HSA_AMD_AGENT_INFO_HDP_FLUSH. */
typedef struct {
  uint32_t *HDP_MEM_FLUSH_CNTL;
  uint32_t *HDP_REG_FLUSH_CNTL;
} hsa_amd_hdp_flush_t;

/* ======================================================================
 * Part 4. Signals
 * ====================================================================== */

/* Signal values are 64-bit because the large machine model is in force. */
typedef int64_t hsa_signal_value_t;

/* Comparison applied as `value OP compare_value`. */
typedef enum {
  HSA_SIGNAL_CONDITION_EQ = 0,
  HSA_SIGNAL_CONDITION_NE = 1,
  HSA_SIGNAL_CONDITION_LT = 2,
  HSA_SIGNAL_CONDITION_GTE = 3
} hsa_signal_condition_t;
typedef uint32_t hsa_signal_condition32_t;

/* BLOCKED: the waiter may sleep; ACTIVE: it may spin. */
typedef enum {
  HSA_WAIT_STATE_BLOCKED = 0,
  HSA_WAIT_STATE_ACTIVE = 1
} hsa_wait_state_t;

/* Bits of the `attributes` argument of hsa_amd_signal_create. */
typedef enum {
  HSA_AMD_SIGNAL_AMD_GPU_ONLY = 1,
  HSA_AMD_SIGNAL_IPC = 2
} hsa_amd_signal_attribute_t;

/* Called on the runtime's handler thread with the value that satisfied the
 * watch; returning true keeps the watch, false removes it. */
typedef bool (*hsa_amd_signal_handler)(hsa_signal_value_t value, void *arg);

/* ======================================================================
 * Part 5. Queues and AQL packets
 * ====================================================================== */

typedef enum {
  HSA_QUEUE_TYPE_MULTI = 0,
  HSA_QUEUE_TYPE_SINGLE = 1,
  HSA_QUEUE_TYPE_COOPERATIVE = 2
} hsa_queue_type_t;
typedef uint32_t hsa_queue_type32_t;

typedef enum {
  HSA_QUEUE_FEATURE_KERNEL_DISPATCH = 1,
  HSA_QUEUE_FEATURE_AGENT_DISPATCH = 2
} hsa_queue_feature_t;

/* The user-visible part of a queue: a ring of `size` 64-byte packet slots at
 * `base_address`, rung through `doorbell_signal`. 40 bytes. */
typedef struct {
  hsa_queue_type32_t type;
  uint32_t features;
  void *base_address; /* 64-bit pointer under the large model */
  hsa_signal_t doorbell_signal;
  uint32_t size;
  uint32_t reserved1;
  uint64_t id;
} hsa_queue_t;

/* Packet type: bits 0..7 of every packet header. */
typedef enum {
  HSA_PACKET_TYPE_VENDOR_SPECIFIC = 0,
  HSA_PACKET_TYPE_INVALID = 1,
  HSA_PACKET_TYPE_KERNEL_DISPATCH = 2,
  HSA_PACKET_TYPE_BARRIER_AND = 3,
  HSA_PACKET_TYPE_AGENT_DISPATCH = 4,
  HSA_PACKET_TYPE_BARRIER_OR = 5
} hsa_packet_type_t;

typedef enum {
  HSA_FENCE_SCOPE_NONE = 0,
  HSA_FENCE_SCOPE_AGENT = 1,
  HSA_FENCE_SCOPE_SYSTEM = 2
} hsa_fence_scope_t;

/* Bit offsets of the fields of the 16-bit packet header... */
typedef enum {
  HSA_PACKET_HEADER_TYPE = 0,
  HSA_PACKET_HEADER_BARRIER = 8,
  HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE = 9,
  HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE = 9,  /* older spelling */
  HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE = 11,
  HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE = 11  /* older spelling */
} hsa_packet_header_t;

/* ...and their widths in bits. */
typedef enum {
  HSA_PACKET_HEADER_WIDTH_TYPE = 8,
  HSA_PACKET_HEADER_WIDTH_BARRIER = 1,
  HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE = 2,
  HSA_PACKET_HEADER_WIDTH_ACQUIRE_FENCE_SCOPE = 2,
  HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE = 2,
  HSA_PACKET_HEADER_WIDTH_RELEASE_FENCE_SCOPE = 2
} hsa_packet_header_width_t;

/* The kernel dispatch `setup` field: the dimension count at bit 0, 2 bits. */
typedef enum {
  HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS = 0
} hsa_kernel_dispatch_packet_setup_t;
typedef enum {
  HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS = 2
} hsa_kernel_dispatch_packet_setup_width_t;

/* Launch of a kernel. Sizes in work-items (grid, workgroup) and bytes
 * (segments). 64 bytes. */
typedef struct {
  uint16_t header;
  uint16_t setup;
  uint16_t workgroup_size_x;
  uint16_t workgroup_size_y;
  uint16_t workgroup_size_z;
  uint16_t reserved0;
  uint32_t grid_size_x;
  uint32_t grid_size_y;
  uint32_t grid_size_z;
  uint32_t private_segment_size;
  uint32_t group_segment_size;
  uint64_t kernel_object;
  void *kernarg_address;
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} hsa_kernel_dispatch_packet_t;

/* Work for an agent's own dispatcher. 64 bytes. */
typedef struct {
  uint16_t header;
  uint16_t type;
  uint32_t reserved0;
  void *return_address;
  uint64_t arg[4];
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} hsa_agent_dispatch_packet_t;

/* Completes once all (AND) or one (OR) of the non-null dependency signals
 * has been seen at 0. 64 bytes each. */
typedef struct {
  uint16_t header;
  uint16_t reserved0;
  uint32_t reserved1;
  hsa_signal_t dep_signal[5];
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} hsa_barrier_and_packet_t;

typedef struct {
  uint16_t header;
  uint16_t reserved0;
  uint32_t reserved1;
  hsa_signal_t dep_signal[5];
  uint64_t reserved2;
  hsa_signal_t completion_signal;
} hsa_barrier_or_packet_t;

/* AMD vendor-specific packets: the format byte after the 16-bit header. */
typedef enum {
  HSA_AMD_PACKET_TYPE_BARRIER_VALUE = 2
} hsa_amd_packet_type_t;
typedef uint8_t hsa_amd_packet_type8_t;

typedef struct {
  uint16_t header; /* packet type HSA_PACKET_TYPE_VENDOR_SPECIFIC */
  hsa_amd_packet_type8_t AmdFormat;
  uint8_t reserved;
} hsa_amd_vendor_packet_header_t;

/* Waits until (signal value & mask) satisfies `cond` against `value`. */
typedef struct {
  hsa_amd_vendor_packet_header_t header;
  uint32_t reserved0;
  hsa_signal_t signal;
  hsa_signal_value_t value;
  hsa_signal_value_t mask;
  hsa_signal_condition32_t cond;
  uint32_t reserved1;
  uint64_t reserved2;
  uint64_t reserved3;
  hsa_signal_t completion_signal;
} hsa_amd_barrier_value_packet_t;

/* ======================================================================
 * Part 6. ISA and wavefronts
 * ====================================================================== */

/* Attributes for hsa_isa_get_info_alt (value types: spec section 4.7). */
typedef enum {
  HSA_ISA_INFO_NAME_LENGTH = 0, /* uint32_t, includes the NUL */
  HSA_ISA_INFO_NAME = 1,        /* char[NAME_LENGTH] */
  HSA_ISA_INFO_CALL_CONVENTION_COUNT = 2,
  HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE = 3,
  HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT = 4,
  HSA_ISA_INFO_MACHINE_MODELS = 5,                        /* bool[2] */
  HSA_ISA_INFO_PROFILES = 6,                              /* bool[2] */
  HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES = 7,          /* bool[3] */
  HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES = 8, /* bool[3] */
  HSA_ISA_INFO_FAST_F16_OPERATION = 9,                    /* bool */
  HSA_ISA_INFO_WORKGROUP_MAX_DIM = 12,                    /* uint16_t[3] */
  HSA_ISA_INFO_WORKGROUP_MAX_SIZE = 13,                   /* uint32_t */
  HSA_ISA_INFO_GRID_MAX_DIM = 14,                         /* hsa_dim3_t */
  HSA_ISA_INFO_GRID_MAX_SIZE = 16,                        /* uint32_t */
  HSA_ISA_INFO_FBARRIER_MAX_SIZE = 17                     /* uint32_t */
} hsa_isa_info_t;

typedef enum {
  HSA_WAVEFRONT_INFO_SIZE = 0
} hsa_wavefront_info_t;

/* ======================================================================
 * Part 7. Memory pools, pointers and profiling (AMD extension)
 * ====================================================================== */

typedef enum {
  HSA_AMD_SEGMENT_GLOBAL = 0,
  HSA_AMD_SEGMENT_READONLY = 1,
  HSA_AMD_SEGMENT_PRIVATE = 2,
  HSA_AMD_SEGMENT_GROUP = 3
} hsa_amd_segment_t;

/* Bits of HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS. */
typedef enum {
  HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT = 1,
  HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED = 2,
  HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED = 4
} hsa_amd_memory_pool_global_flag_t;

/* Attributes for hsa_amd_memory_pool_get_info (types: spec section 4.8). */
typedef enum {
  HSA_AMD_MEMORY_POOL_INFO_SEGMENT = 0,                 /* hsa_amd_segment_t */
  HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS = 1,            /* uint32_t */
  HSA_AMD_MEMORY_POOL_INFO_SIZE = 2,                    /* size_t, bytes */
  HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED = 5,   /* bool */
  HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE = 6,   /* size_t, bytes */
  HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT = 7, /* size_t, bytes */
  HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL = 15,      /* bool */
  HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE = 16          /* size_t, bytes */
} hsa_amd_memory_pool_info_t;

typedef enum {
  HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED = 0,
  HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT = 1,
  HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT = 2
} hsa_amd_memory_pool_access_t;

typedef enum {
  HSA_AMD_LINK_INFO_TYPE_HYPERTRANSPORT = 0,
  HSA_AMD_LINK_INFO_TYPE_QPI = 1,
  HSA_AMD_LINK_INFO_TYPE_PCIE = 2,
  HSA_AMD_LINK_INFO_TYPE_INFINBAND = 3,
  HSA_AMD_LINK_INFO_TYPE_XGMI = 4
} hsa_amd_link_info_type_t;

/* One hop between an agent and a pool. Latencies in ns, bandwidths in MB/s.
 * 28 bytes. */
typedef struct {
  uint32_t min_latency;
  uint32_t max_latency;
  uint32_t min_bandwidth;
  uint32_t max_bandwidth;
  bool atomic_support_32bit;
  bool atomic_support_64bit;
  bool coherent_support;
  hsa_amd_link_info_type_t link_type;
  uint32_t numa_distance;
} hsa_amd_memory_pool_link_info_t;

/* Attributes for hsa_amd_agent_memory_pool_get_info. */
typedef enum {
  HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS = 0,        /* hsa_amd_memory_pool_access_t */
  HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS = 1, /* uint32_t */
  HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO = 2      /* link_info_t[NUM_LINK_HOPS] */
} hsa_amd_agent_memory_pool_info_t;

/* What hsa_amd_pointer_info found at an address. The enumerators carry the
 * EXT prefix in ROCm too. */
typedef enum {
  HSA_EXT_POINTER_TYPE_UNKNOWN = 0,
  HSA_EXT_POINTER_TYPE_HSA = 1,
  HSA_EXT_POINTER_TYPE_LOCKED = 2,
  HSA_EXT_POINTER_TYPE_GRAPHICS = 3,
  HSA_EXT_POINTER_TYPE_IPC = 4
} hsa_amd_pointer_type_t;

/* Caller-sized description of an allocation: the caller stores sizeof its
 * own copy in `size`, the runtime writes at most that many bytes. 56 bytes
 * here. */
typedef struct {
  uint32_t size;
  hsa_amd_pointer_type_t type;
  void *agentBaseAddress;
  void *hostBaseAddress;
  size_t sizeInBytes;
  void *userData;
  hsa_agent_t agentOwner;
  uint32_t global_flags;
} hsa_amd_pointer_info_t;

/* Start and end of a profiled dispatch, in system timestamp ticks. */
typedef struct {
  uint64_t start;
  uint64_t end;
} hsa_amd_profiling_dispatch_time_t;

typedef enum {
  HSA_AMD_QUEUE_PRIORITY_LOW = 0,
  HSA_AMD_QUEUE_PRIORITY_NORMAL = 1,
  HSA_AMD_QUEUE_PRIORITY_HIGH = 2
} hsa_amd_queue_priority_t;

/* ======================================================================
 * Part 8. System events
 * ====================================================================== */

typedef enum {
  HSA_AMD_GPU_MEMORY_FAULT_EVENT = 0
} hsa_amd_event_type_t;

/* Reason bits of a GPU memory fault. HANG is bit 31, which makes the
 * enumeration a signed int; compare masks as uint32_t. */
typedef enum {
  HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT = 0x1,
  HSA_AMD_MEMORY_FAULT_READ_ONLY = 0x2,
  HSA_AMD_MEMORY_FAULT_NX = 0x4,
  HSA_AMD_MEMORY_FAULT_HOST_ONLY = 0x8,
  HSA_AMD_MEMORY_FAULT_DRAMECC = 0x10,
  HSA_AMD_MEMORY_FAULT_IMPRECISE = 0x20,
  HSA_AMD_MEMORY_FAULT_SRAMECC = 0x40,
  HSA_AMD_MEMORY_FAULT_HANG = (int)0x80000000u
} hsa_amd_memory_fault_reason_t;

/* The faulting agent, the faulting address and the reason bits. */
typedef struct {
  hsa_agent_t agent;
  uint64_t virtual_address;
  uint32_t fault_reason_mask;
} hsa_amd_gpu_memory_fault_info_t;

/* A system event; `memory_fault` is meaningful when event_type is
 * HSA_AMD_GPU_MEMORY_FAULT_EVENT. 32 bytes. */
typedef struct {
  hsa_amd_event_type_t event_type;
  union {
    hsa_amd_gpu_memory_fault_info_t memory_fault;
  };
} hsa_amd_event_t;

typedef hsa_status_t (*hsa_amd_system_event_callback_t)(
    const hsa_amd_event_t *event, void *data);

/* ======================================================================
 * Part 9. Executables, symbols, code objects
 * ====================================================================== */

typedef enum {
  HSA_EXECUTABLE_STATE_UNFROZEN = 0,
  HSA_EXECUTABLE_STATE_FROZEN = 1
} hsa_executable_state_t;

typedef enum {
  HSA_EXECUTABLE_INFO_PROFILE = 1,
  HSA_EXECUTABLE_INFO_STATE = 2,
  HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE = 3
} hsa_executable_info_t;

typedef enum {
  HSA_SYMBOL_KIND_VARIABLE = 0,
  HSA_SYMBOL_KIND_KERNEL = 1,
  HSA_SYMBOL_KIND_INDIRECT_FUNCTION = 2
} hsa_symbol_kind_t;

typedef enum {
  HSA_SYMBOL_LINKAGE_MODULE = 0,
  HSA_SYMBOL_LINKAGE_PROGRAM = 1
} hsa_symbol_linkage_t;

typedef enum {
  HSA_VARIABLE_ALLOCATION_AGENT = 0,
  HSA_VARIABLE_ALLOCATION_PROGRAM = 1
} hsa_variable_allocation_t;

typedef enum {
  HSA_VARIABLE_SEGMENT_GLOBAL = 0,
  HSA_VARIABLE_SEGMENT_READONLY = 1
} hsa_variable_segment_t;

/* Attributes for hsa_executable_symbol_get_info (types: spec section 4.9). */
typedef enum {
  HSA_EXECUTABLE_SYMBOL_INFO_TYPE = 0,                 /* hsa_symbol_kind_t */
  HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH = 1,          /* uint32_t, no NUL */
  HSA_EXECUTABLE_SYMBOL_INFO_NAME = 2,                 /* char[NAME_LENGTH] */
  HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH = 3,   /* uint32_t */
  HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME = 4,          /* char[] */
  HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE = 5,              /* hsa_symbol_linkage_t */
  HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION = 6,  /* hsa_variable_allocation_t */
  HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT = 7,     /* hsa_variable_segment_t */
  HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALIGNMENT = 8,   /* uint32_t */
  HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE = 9,        /* uint32_t, bytes */
  HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST = 10,   /* bool */
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE = 11,      /* uint32_t */
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT = 12, /* uint32_t */
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE = 13,        /* uint32_t */
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE = 14,      /* uint32_t */
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK = 15,         /* bool */
  HSA_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_CALL_CONVENTION = 16,/* uint32_t */
  HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION = 17,       /* bool */
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION = 18, /* uint32_t */
  HSA_EXECUTABLE_SYMBOL_INFO_AGENT = 20,               /* hsa_agent_t */
  HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS = 21,    /* uint64_t */
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT = 22,       /* uint64_t */
  HSA_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_OBJECT = 23 /* uint64_t */
} hsa_executable_symbol_info_t;

typedef enum {
  HSA_CODE_OBJECT_TYPE_PROGRAM = 0
} hsa_code_object_type_t;

typedef enum {
  HSA_CODE_OBJECT_INFO_VERSION = 0,
  HSA_CODE_OBJECT_INFO_TYPE = 1,
  HSA_CODE_OBJECT_INFO_ISA = 2,
  HSA_CODE_OBJECT_INFO_MACHINE_MODEL = 3,
  HSA_CODE_OBJECT_INFO_PROFILE = 4,
  HSA_CODE_OBJECT_INFO_DEFAULT_FLOAT_ROUNDING_MODE = 5
} hsa_code_object_info_t;

/* ======================================================================
 * Part 10. AMD runtime-private blocks: the full queue and signal objects
 * ====================================================================== */

/* Bits of amd_queue_t.queue_properties. Each property has a mask, its bit
 * offset (_SHIFT) and its width in bits (_WIDTH). */
typedef uint32_t amd_queue_properties32_t;
enum amd_queue_properties_t {
  AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_SHIFT = 0,
  AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_WIDTH = 1,
  AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER = 0x1,
  AMD_QUEUE_PROPERTIES_IS_PTR64_SHIFT = 1,
  AMD_QUEUE_PROPERTIES_IS_PTR64_WIDTH = 1,
  AMD_QUEUE_PROPERTIES_IS_PTR64 = 0x2,
  AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS_SHIFT = 2,
  AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS_WIDTH = 1,
  AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS = 0x4,
  AMD_QUEUE_PROPERTIES_ENABLE_PROFILING_SHIFT = 3,
  AMD_QUEUE_PROPERTIES_ENABLE_PROFILING_WIDTH = 1,
  AMD_QUEUE_PROPERTIES_ENABLE_PROFILING = 0x8,
  AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE_SHIFT = 4,
  AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE_WIDTH = 1,
  AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE = 0x10,
  AMD_QUEUE_PROPERTIES_RESERVED1_SHIFT = 5,
  AMD_QUEUE_PROPERTIES_RESERVED1_WIDTH = 27,
  /* Bits 5..31. ROCm computes this mask in int arithmetic, which makes it
   * -32 and the whole enumeration signed; kept so. */
  AMD_QUEUE_PROPERTIES_RESERVED1 = -32
};

#define AMD_QUEUE_ALIGN_BYTES 64

/* The runtime's whole queue object; the public hsa_queue_t is its first
 * member and hsa_queue_create hands out the address of this block.
 * 256 bytes, 64-byte aligned. The dispatch ids are the write/read indices. */
typedef struct __attribute__((aligned(AMD_QUEUE_ALIGN_BYTES))) {
  hsa_queue_t hsa_queue;
  uint32_t reserved1[4];
  volatile uint64_t write_dispatch_id;
  uint32_t group_segment_aperture_base_hi;
  uint32_t private_segment_aperture_base_hi;
  uint32_t max_cu_id;
  uint32_t max_wave_id;
  volatile uint64_t max_legacy_doorbell_dispatch_id_plus_1;
  volatile uint32_t legacy_doorbell_lock;
  uint32_t reserved2[9];
  volatile uint64_t read_dispatch_id;
  uint32_t read_dispatch_id_field_base_byte_offset;
  uint32_t compute_tmpring_size;
  uint32_t scratch_resource_descriptor[4];
  uint64_t scratch_backing_memory_location;
  uint64_t scratch_backing_memory_byte_size;
  uint32_t scratch_wave64_lane_byte_size;
  amd_queue_properties32_t queue_properties;
  uint32_t reserved3[2];
  hsa_signal_t queue_inactive_signal;
  uint32_t reserved4[14];
} amd_queue_t;

/* What kind of object an amd_signal_t is (stored in its 64-bit `kind`). */
typedef int64_t amd_signal_kind64_t;
enum amd_signal_kind_t {
  AMD_SIGNAL_KIND_INVALID = 0,
  AMD_SIGNAL_KIND_USER = 1,
  AMD_SIGNAL_KIND_DOORBELL = -1,
  AMD_SIGNAL_KIND_LEGACY_DOORBELL = -2
};

#define AMD_SIGNAL_ALIGN_BYTES 64

/* The runtime's signal object; an hsa_signal_t handle is its address.
 * 64 bytes, 64-byte aligned; the value sits at offset 8. */
typedef struct __attribute__((aligned(AMD_SIGNAL_ALIGN_BYTES))) {
  amd_signal_kind64_t kind;
  union {
    volatile int64_t value;
    volatile uint32_t *legacy_hardware_doorbell_ptr;
    volatile uint64_t *hardware_doorbell_ptr;
  };
  uint64_t event_mailbox_ptr;
  uint32_t event_id;
  uint32_t reserved1;
  uint64_t start_ts;
  uint64_t end_ts;
  union {
    amd_queue_t *queue_ptr;
    uint64_t reserved2;
  };
  uint32_t reserved3[2];
} amd_signal_t;

/* ======================================================================
 * Part 11. The AMD loader extension's function table (version 1.03)
 * ====================================================================== */

typedef enum {
  HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_NONE = 0,
  HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_FILE = 1,
  HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY = 2
} hsa_ven_amd_loader_code_object_storage_type_t;

/* One loaded segment: where it came from and where it lives. */
typedef struct {
  hsa_agent_t agent;
  hsa_executable_t executable;
  hsa_ven_amd_loader_code_object_storage_type_t code_object_storage_type;
  const void *code_object_storage_base;
  size_t code_object_storage_size;
  size_t code_object_storage_offset;
  const void *segment_base;
  size_t segment_size;
} hsa_ven_amd_loader_segment_descriptor_t;

typedef enum {
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_EXECUTABLE = 1,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_KIND = 2,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_AGENT = 3,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_TYPE = 4,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_BASE = 5,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE = 6,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_FILE = 7,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA = 8,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE = 9,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_SIZE = 10,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH = 11,
  HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI = 12
} hsa_ven_amd_loader_loaded_code_object_info_t;

/* Filled by hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER,
 * 1, ...). Versions 1.00, 1.01 and 1.02 are prefixes of this table (the
 * first 3, 5 and 6 entries). */
typedef struct {
  hsa_status_t (*hsa_ven_amd_loader_query_host_address)(
      const void *device_address, const void **host_address);
  hsa_status_t (*hsa_ven_amd_loader_query_segment_descriptors)(
      hsa_ven_amd_loader_segment_descriptor_t *segment_descriptors,
      size_t *num_segment_descriptors);
  hsa_status_t (*hsa_ven_amd_loader_query_executable)(
      const void *device_address, hsa_executable_t *executable);
  hsa_status_t (*hsa_ven_amd_loader_executable_iterate_loaded_code_objects)(
      hsa_executable_t executable,
      hsa_status_t (*callback)(hsa_executable_t executable,
                               hsa_loaded_code_object_t loaded_code_object,
                               void *data),
      void *data);
  hsa_status_t (*hsa_ven_amd_loader_loaded_code_object_get_info)(
      hsa_loaded_code_object_t loaded_code_object,
      hsa_ven_amd_loader_loaded_code_object_info_t attribute, void *value);
  hsa_status_t (
      *hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size)(
      hsa_file_t file, size_t offset, size_t size,
      hsa_code_object_reader_t *code_object_reader);
  hsa_status_t (*hsa_ven_amd_loader_iterate_executables)(
      hsa_status_t (*callback)(hsa_executable_t executable, void *data),
      void *data);
} hsa_ven_amd_loader_1_03_pfn_t;

/* ======================================================================
 * Part 12. Functions
 *
 * Every prototype is ROCm 5.2's, parameter for parameter. Memory-order
 * suffixes: relaxed, scacquire, screlease, scacq_screl; the older spellings
 * acquire, release, acq_rel are still exported by ROCm 5.2 and mean the same.
 * ====================================================================== */

/* -- Runtime and system (spec 6.1) -- */
hsa_status_t hsa_init(void);
hsa_status_t hsa_shut_down(void);
hsa_status_t hsa_status_string(hsa_status_t status,
                               const char **status_string);
hsa_status_t hsa_system_get_info(hsa_system_info_t attribute, void *value);
hsa_status_t hsa_system_get_major_extension_table(uint16_t extension,
                                                  uint16_t version_major,
                                                  size_t table_length,
                                                  void *table);

/* -- Agents and ISAs (spec 6.2) -- */
hsa_status_t hsa_iterate_agents(
    hsa_status_t (*callback)(hsa_agent_t agent, void *data), void *data);
hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attribute,
                                void *value);
hsa_status_t hsa_agent_iterate_isas(
    hsa_agent_t agent, hsa_status_t (*callback)(hsa_isa_t isa, void *data),
    void *data);
hsa_status_t hsa_isa_get_info_alt(hsa_isa_t isa, hsa_isa_info_t attribute,
                                  void *value);

/* -- Signals (spec 6.3) -- */
hsa_status_t hsa_signal_create(hsa_signal_value_t initial_value,
                               uint32_t num_consumers,
                               const hsa_agent_t *consumers,
                               hsa_signal_t *signal);
hsa_status_t hsa_amd_signal_create(hsa_signal_value_t initial_value,
                                   uint32_t num_consumers,
                                   const hsa_agent_t *consumers,
                                   uint64_t attributes, hsa_signal_t *signal);
hsa_status_t hsa_signal_destroy(hsa_signal_t signal);

/* The value operations come in families that differ only in the memory
 * order named by the suffix; these macros spell out one member each. */
#define HSA_SUBSET_SIGNAL_LOAD(ord) \
  hsa_signal_value_t hsa_signal_load_##ord(hsa_signal_t signal);
#define HSA_SUBSET_SIGNAL_STORE(name) \
  void hsa_signal_##name(hsa_signal_t signal, hsa_signal_value_t value);
#define HSA_SUBSET_SIGNAL_EXCHANGE(ord)                            \
  hsa_signal_value_t hsa_signal_exchange_##ord(hsa_signal_t signal, \
                                               hsa_signal_value_t value);
#define HSA_SUBSET_SIGNAL_CAS(ord)                                   \
  hsa_signal_value_t hsa_signal_cas_##ord(hsa_signal_t signal,       \
                                          hsa_signal_value_t expected, \
                                          hsa_signal_value_t value);
#define HSA_SUBSET_SIGNAL_WAIT(ord)                                    \
  hsa_signal_value_t hsa_signal_wait_##ord(                            \
      hsa_signal_t signal, hsa_signal_condition_t condition,           \
      hsa_signal_value_t compare_value, uint64_t timeout_hint,         \
      hsa_wait_state_t wait_state_hint);
/* All seven orders the read-modify-write families are exported in. */
#define HSA_SUBSET_RMW_ORDERS(m, op) \
  m(op##_scacq_screl) m(op##_acq_rel) m(op##_scacquire) m(op##_acquire) \
  m(op##_relaxed) m(op##_screlease) m(op##_release)
#define HSA_SUBSET_ORDERED(m) \
  m(scacq_screl) m(acq_rel) m(scacquire) m(acquire) m(relaxed) m(screlease) \
  m(release)

HSA_SUBSET_SIGNAL_LOAD(scacquire)
HSA_SUBSET_SIGNAL_LOAD(relaxed)
HSA_SUBSET_SIGNAL_LOAD(acquire)
HSA_SUBSET_SIGNAL_STORE(store_relaxed)
HSA_SUBSET_SIGNAL_STORE(store_screlease)
HSA_SUBSET_SIGNAL_STORE(store_release)
HSA_SUBSET_SIGNAL_STORE(silent_store_relaxed)
HSA_SUBSET_SIGNAL_STORE(silent_store_screlease)
HSA_SUBSET_ORDERED(HSA_SUBSET_SIGNAL_EXCHANGE)
HSA_SUBSET_ORDERED(HSA_SUBSET_SIGNAL_CAS)
HSA_SUBSET_RMW_ORDERS(HSA_SUBSET_SIGNAL_STORE, add)
HSA_SUBSET_RMW_ORDERS(HSA_SUBSET_SIGNAL_STORE, subtract)
HSA_SUBSET_RMW_ORDERS(HSA_SUBSET_SIGNAL_STORE, and)
HSA_SUBSET_RMW_ORDERS(HSA_SUBSET_SIGNAL_STORE, or)
HSA_SUBSET_RMW_ORDERS(HSA_SUBSET_SIGNAL_STORE, xor)
HSA_SUBSET_SIGNAL_WAIT(scacquire)
HSA_SUBSET_SIGNAL_WAIT(relaxed)
HSA_SUBSET_SIGNAL_WAIT(acquire)

uint32_t hsa_amd_signal_wait_any(uint32_t signal_count, hsa_signal_t *signals,
                                 hsa_signal_condition_t *conds,
                                 hsa_signal_value_t *values,
                                 uint64_t timeout_hint,
                                 hsa_wait_state_t wait_hint,
                                 hsa_signal_value_t *satisfying_value);
hsa_status_t hsa_amd_signal_async_handler(hsa_signal_t signal,
                                          hsa_signal_condition_t cond,
                                          hsa_signal_value_t value,
                                          hsa_amd_signal_handler handler,
                                          void *arg);
hsa_status_t hsa_amd_async_function(void (*callback)(void *arg), void *arg);

/* -- Queues (spec 6.4) -- */
hsa_status_t hsa_queue_create(
    hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
    void (*callback)(hsa_status_t status, hsa_queue_t *source, void *data),
    void *data, uint32_t private_segment_size, uint32_t group_segment_size,
    hsa_queue_t **queue);
hsa_status_t hsa_queue_destroy(hsa_queue_t *queue);
hsa_status_t hsa_queue_inactivate(hsa_queue_t *queue);

#define HSA_SUBSET_QUEUE_LOAD(name) \
  uint64_t hsa_queue_##name(const hsa_queue_t *queue);
#define HSA_SUBSET_QUEUE_STORE(name) \
  void hsa_queue_##name(const hsa_queue_t *queue, uint64_t value);
#define HSA_SUBSET_QUEUE_ADD(name) \
  uint64_t hsa_queue_##name(const hsa_queue_t *queue, uint64_t value);
#define HSA_SUBSET_QUEUE_CAS(name)                                     \
  uint64_t hsa_queue_##name(const hsa_queue_t *queue, uint64_t expected, \
                            uint64_t value);

HSA_SUBSET_QUEUE_LOAD(load_read_index_acquire)
HSA_SUBSET_QUEUE_LOAD(load_read_index_scacquire)
HSA_SUBSET_QUEUE_LOAD(load_read_index_relaxed)
HSA_SUBSET_QUEUE_LOAD(load_write_index_acquire)
HSA_SUBSET_QUEUE_LOAD(load_write_index_scacquire)
HSA_SUBSET_QUEUE_LOAD(load_write_index_relaxed)
HSA_SUBSET_QUEUE_STORE(store_write_index_relaxed)
HSA_SUBSET_QUEUE_STORE(store_write_index_release)
HSA_SUBSET_QUEUE_STORE(store_write_index_screlease)
HSA_SUBSET_RMW_ORDERS(HSA_SUBSET_QUEUE_CAS, cas_write_index)
HSA_SUBSET_RMW_ORDERS(HSA_SUBSET_QUEUE_ADD, add_write_index)
HSA_SUBSET_QUEUE_STORE(store_read_index_relaxed)
HSA_SUBSET_QUEUE_STORE(store_read_index_release)
HSA_SUBSET_QUEUE_STORE(store_read_index_screlease)

hsa_status_t hsa_amd_profiling_set_profiler_enabled(hsa_queue_t *queue,
                                                    int enable);
hsa_status_t hsa_amd_profiling_async_copy_enable(bool enable);
hsa_status_t hsa_amd_profiling_get_dispatch_time(
    hsa_agent_t agent, hsa_signal_t signal,
    hsa_amd_profiling_dispatch_time_t *time);

/* -- Memory pools and memory (spec 6.5) -- */
hsa_status_t hsa_amd_agent_iterate_memory_pools(
    hsa_agent_t agent,
    hsa_status_t (*callback)(hsa_amd_memory_pool_t memory_pool, void *data),
    void *data);
hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t memory_pool,
                                          hsa_amd_memory_pool_info_t attribute,
                                          void *value);
hsa_status_t hsa_amd_agent_memory_pool_get_info(
    hsa_agent_t agent, hsa_amd_memory_pool_t memory_pool,
    hsa_amd_agent_memory_pool_info_t attribute, void *value);
hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t memory_pool,
                                          size_t size, uint32_t flags,
                                          void **ptr);
hsa_status_t hsa_amd_memory_pool_free(void *ptr);
hsa_status_t hsa_amd_agents_allow_access(uint32_t num_agents,
                                         const hsa_agent_t *agents,
                                         const uint32_t *flags,
                                         const void *ptr);
hsa_status_t hsa_amd_memory_pool_can_migrate(
    hsa_amd_memory_pool_t src_memory_pool,
    hsa_amd_memory_pool_t dst_memory_pool, bool *result);
hsa_status_t hsa_amd_memory_lock(void *host_ptr, size_t size,
                                 hsa_agent_t *agents, int num_agent,
                                 void **agent_ptr);
hsa_status_t hsa_amd_memory_unlock(void *host_ptr);
hsa_status_t hsa_amd_memory_fill(void *ptr, uint32_t value, size_t count);
hsa_status_t hsa_amd_pointer_info(const void *ptr,
                                  hsa_amd_pointer_info_t *info,
                                  void *(*alloc)(size_t),
                                  uint32_t *num_agents_accessible,
                                  hsa_agent_t **accessible);
hsa_status_t hsa_memory_copy(void *dst, const void *src, size_t size);
hsa_status_t hsa_amd_memory_async_copy(void *dst, hsa_agent_t dst_agent,
                                       const void *src, hsa_agent_t src_agent,
                                       size_t size, uint32_t num_dep_signals,
                                       const hsa_signal_t *dep_signals,
                                       hsa_signal_t completion_signal);
hsa_status_t hsa_amd_register_system_event_handler(
    hsa_amd_system_event_callback_t callback, void *data);

/* -- Shared virtual memory (ROCm's hsa_ext_amd.h, hsa_amd_svm_*) -- */
typedef enum {
  HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED = 0,
  HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED = 1,
  HSA_AMD_SVM_GLOBAL_FLAG_INDETERMINATE = 2
} hsa_amd_svm_model_t;
typedef enum {
  HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG = 0,            /* hsa_amd_svm_model_t */
  HSA_AMD_SVM_ATTRIB_READ_ONLY = 1,              /* bool */
  HSA_AMD_SVM_ATTRIB_HIVE_LOCAL = 2,             /* bool */
  HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY = 3,  /* uint64_t, log2(pages) */
  HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION = 4,     /* hsa_agent_t */
  HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION = 5,      /* hsa_agent_t, get only */
  HSA_AMD_SVM_ATTRIB_READ_MOSTLY = 6,            /* bool */
  HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE = 0x200,   /* hsa_agent_t, set only */
  HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE = 0x201, /* set only */
  HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS = 0x202,    /* hsa_agent_t, set only */
  HSA_AMD_SVM_ATTRIB_ACCESS_QUERY = 0x203        /* hsa_agent_t in, get only */
} hsa_amd_svm_attribute_t;
typedef struct {
  uint64_t attribute; /* hsa_amd_svm_attribute_t */
  uint64_t value;
} hsa_amd_svm_attribute_pair_t;
hsa_status_t hsa_amd_svm_attributes_set(void *ptr, size_t size,
                                        hsa_amd_svm_attribute_pair_t *attribute_list,
                                        size_t attribute_count);
hsa_status_t hsa_amd_svm_attributes_get(void *ptr, size_t size,
                                        hsa_amd_svm_attribute_pair_t *attribute_list,
                                        size_t attribute_count);
hsa_status_t hsa_amd_svm_prefetch_async(void *ptr, size_t size, hsa_agent_t agent,
                                        uint32_t num_dep_signals,
                                        const hsa_signal_t *dep_signals,
                                        hsa_signal_t completion_signal);

/* -- Code objects and executables (spec 6.6) -- */
hsa_status_t hsa_code_object_deserialize(void *serialized_code_object,
                                         size_t serialized_code_object_size,
                                         const char *options,
                                         hsa_code_object_t *code_object);
hsa_status_t hsa_code_object_destroy(hsa_code_object_t code_object);
hsa_status_t hsa_code_object_reader_create_from_memory(
    const void *code_object, size_t size,
    hsa_code_object_reader_t *code_object_reader);
hsa_status_t hsa_code_object_reader_destroy(
    hsa_code_object_reader_t code_object_reader);
hsa_status_t hsa_executable_create(hsa_profile_t profile,
                                   hsa_executable_state_t executable_state,
                                   const char *options,
                                   hsa_executable_t *executable);
hsa_status_t hsa_executable_create_alt(
    hsa_profile_t profile,
    hsa_default_float_rounding_mode_t default_float_rounding_mode,
    const char *options, hsa_executable_t *executable);
hsa_status_t hsa_executable_load_code_object(hsa_executable_t executable,
                                             hsa_agent_t agent,
                                             hsa_code_object_t code_object,
                                             const char *options);
hsa_status_t hsa_executable_load_agent_code_object(
    hsa_executable_t executable, hsa_agent_t agent,
    hsa_code_object_reader_t code_object_reader, const char *options,
    hsa_loaded_code_object_t *loaded_code_object);
hsa_status_t hsa_executable_freeze(hsa_executable_t executable,
                                   const char *options);
hsa_status_t hsa_executable_validate(hsa_executable_t executable,
                                     uint32_t *result);
hsa_status_t hsa_executable_destroy(hsa_executable_t executable);
hsa_status_t hsa_executable_get_info(hsa_executable_t executable,
                                     hsa_executable_info_t attribute,
                                     void *value);
hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t executable,
                                               const char *symbol_name,
                                               const hsa_agent_t *agent,
                                               hsa_executable_symbol_t *symbol);
hsa_status_t hsa_executable_get_symbol(hsa_executable_t executable,
                                       const char *module_name,
                                       const char *symbol_name,
                                       hsa_agent_t agent,
                                       int32_t call_convention,
                                       hsa_executable_symbol_t *symbol);
hsa_status_t hsa_executable_iterate_symbols(
    hsa_executable_t executable,
    hsa_status_t (*callback)(hsa_executable_t exec,
                             hsa_executable_symbol_t symbol, void *data),
    void *data);
hsa_status_t hsa_executable_symbol_get_info(
    hsa_executable_symbol_t executable_symbol,
    hsa_executable_symbol_info_t attribute, void *value);

#endif /* OMPTARGET_AMDGPU_HSA_SUBSET_H */
