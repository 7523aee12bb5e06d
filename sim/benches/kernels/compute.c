// Kernels of the ISA engine benchmark (compiled for gfx90a with clang-16,
// plain C with the AMDGPU builtins; one work-item per element).
#define KERNEL __attribute__((visibility("protected"), amdgpu_kernel))

static inline unsigned global_id(void) {
  // workgroup size x is at dispatch packet + 4 (u16)
  const unsigned short *p = (const unsigned short *)__builtin_amdgcn_dispatch_ptr();
  return __builtin_amdgcn_workgroup_id_x() * p[2] + __builtin_amdgcn_workitem_id_x();
}

// VALU-bound: 8 independent FMA chains, `iters` times: 16 * iters flops per lane.
KERNEL void valu_bound(float *out, int iters) {
  unsigned i = global_id();
  float a0 = i, a1 = i + 1, a2 = i + 2, a3 = i + 3, a4 = i + 4, a5 = i + 5, a6 = i + 6, a7 = i + 7;
  for (int k = 0; k < iters; ++k) {
    a0 = a0 * 0.999f + 0.5f; a1 = a1 * 0.999f + 0.5f; a2 = a2 * 0.999f + 0.5f; a3 = a3 * 0.999f + 0.5f;
    a4 = a4 * 0.999f + 0.5f; a5 = a5 * 0.999f + 0.5f; a6 = a6 * 0.999f + 0.5f; a7 = a7 * 0.999f + 0.5f;
  }
  out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

// Memory-bound: each lane walks `rounds` strided words of a buffer.
KERNEL void memory_bound(unsigned *buf, unsigned long n, long rounds) {
  unsigned i = global_id();
  unsigned acc = 0;
  for (long r = 0; r < rounds; ++r) {
    unsigned j = (unsigned)((i + (unsigned long)r * 4099u) % n);
    acc += buf[j];
    buf[j] = acc;
  }
}

KERNEL void saxpy(float a, const float *x, float *y, unsigned n) {
  unsigned i = global_id();
  if (i < n) y[i] = a * x[i] + y[i];
}

KERNEL void matmul(const float *A, const float *B, float *C, unsigned n) {
  unsigned id = global_id();
  unsigned row = id / n, col = id % n;
  if (row >= n) return;
  float acc = 0.0f;
  for (unsigned k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
  C[row * n + col] = acc;
}
