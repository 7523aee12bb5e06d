/* printf-family argument packing for clang-16 on AMDGPU, which cannot
 * compile variadic functions: the macros below turn each argument into a
 * (bits, size) record after C's default argument promotions, so the library
 * can lay them out as LLVM 19's GPU printf does (a packed struct: each
 * promoted argument right after the previous one, no padding). */
#ifndef GPU_DEVICE_PRINTF_ARGS_H
#define GPU_DEVICE_PRINTF_ARGS_H

#include <stdint.h>

typedef struct {
  uint64_t bits;  /* the promoted value, little endian */
  uint32_t size;  /* its size in bytes (4 or 8); 0 ends the list */
} __gpu_arg_t;

static inline __gpu_arg_t __gpu_arg_int(int v) {
  __gpu_arg_t a = {(uint64_t)(uint32_t)v, 4};
  return a;
}
static inline __gpu_arg_t __gpu_arg_uint(unsigned int v) {
  __gpu_arg_t a = {(uint64_t)v, 4};
  return a;
}
static inline __gpu_arg_t __gpu_arg_u64(unsigned long long v) {
  __gpu_arg_t a = {(uint64_t)v, 8};
  return a;
}
static inline __gpu_arg_t __gpu_arg_double(double v) {
  __gpu_arg_t a = {0, 8};
  __builtin_memcpy(&a.bits, &v, 8);
  return a;
}
static inline __gpu_arg_t __gpu_arg_ptr(const volatile void *v) {
  __gpu_arg_t a = {(uint64_t)(uintptr_t)v, 8};
  return a;
}

#define __GPU_ARG(x)                                                           \
  _Generic((x),                                                                \
      _Bool: __gpu_arg_int,                                                    \
      char: __gpu_arg_int,                                                     \
      signed char: __gpu_arg_int,                                              \
      unsigned char: __gpu_arg_int,                                            \
      short: __gpu_arg_int,                                                    \
      unsigned short: __gpu_arg_int,                                           \
      int: __gpu_arg_int,                                                      \
      unsigned int: __gpu_arg_uint,                                            \
      long: __gpu_arg_u64,                                                     \
      unsigned long: __gpu_arg_u64,                                            \
      long long: __gpu_arg_u64,                                                \
      unsigned long long: __gpu_arg_u64,                                       \
      float: __gpu_arg_double,                                                 \
      double: __gpu_arg_double,                                                \
      long double: __gpu_arg_double,                                           \
      default: __gpu_arg_ptr)(x)

/* Up to 32 arguments after the format. */
#define __GPU_NARG(...) __GPU_NARG_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define __GPU_NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, N, ...) N
#define __GPU_CAT(a, b) __GPU_CAT_(a, b)
#define __GPU_CAT_(a, b) a##b
#define __GPU_MAP(...) __GPU_CAT(__GPU_MAP_, __GPU_NARG(__VA_ARGS__))(__VA_ARGS__)
#define __GPU_MAP_1(a) __GPU_ARG(a)
#define __GPU_MAP_2(a, ...) __GPU_ARG(a), __GPU_MAP_1(__VA_ARGS__)
#define __GPU_MAP_3(a, ...) __GPU_ARG(a), __GPU_MAP_2(__VA_ARGS__)
#define __GPU_MAP_4(a, ...) __GPU_ARG(a), __GPU_MAP_3(__VA_ARGS__)
#define __GPU_MAP_5(a, ...) __GPU_ARG(a), __GPU_MAP_4(__VA_ARGS__)
#define __GPU_MAP_6(a, ...) __GPU_ARG(a), __GPU_MAP_5(__VA_ARGS__)
#define __GPU_MAP_7(a, ...) __GPU_ARG(a), __GPU_MAP_6(__VA_ARGS__)
#define __GPU_MAP_8(a, ...) __GPU_ARG(a), __GPU_MAP_7(__VA_ARGS__)
#define __GPU_MAP_9(a, ...) __GPU_ARG(a), __GPU_MAP_8(__VA_ARGS__)
#define __GPU_MAP_10(a, ...) __GPU_ARG(a), __GPU_MAP_9(__VA_ARGS__)
#define __GPU_MAP_11(a, ...) __GPU_ARG(a), __GPU_MAP_10(__VA_ARGS__)
#define __GPU_MAP_12(a, ...) __GPU_ARG(a), __GPU_MAP_11(__VA_ARGS__)
#define __GPU_MAP_13(a, ...) __GPU_ARG(a), __GPU_MAP_12(__VA_ARGS__)
#define __GPU_MAP_14(a, ...) __GPU_ARG(a), __GPU_MAP_13(__VA_ARGS__)
#define __GPU_MAP_15(a, ...) __GPU_ARG(a), __GPU_MAP_14(__VA_ARGS__)
#define __GPU_MAP_16(a, ...) __GPU_ARG(a), __GPU_MAP_15(__VA_ARGS__)
#define __GPU_MAP_17(a, ...) __GPU_ARG(a), __GPU_MAP_16(__VA_ARGS__)
#define __GPU_MAP_18(a, ...) __GPU_ARG(a), __GPU_MAP_17(__VA_ARGS__)
#define __GPU_MAP_19(a, ...) __GPU_ARG(a), __GPU_MAP_18(__VA_ARGS__)
#define __GPU_MAP_20(a, ...) __GPU_ARG(a), __GPU_MAP_19(__VA_ARGS__)
#define __GPU_MAP_21(a, ...) __GPU_ARG(a), __GPU_MAP_20(__VA_ARGS__)
#define __GPU_MAP_22(a, ...) __GPU_ARG(a), __GPU_MAP_21(__VA_ARGS__)
#define __GPU_MAP_23(a, ...) __GPU_ARG(a), __GPU_MAP_22(__VA_ARGS__)
#define __GPU_MAP_24(a, ...) __GPU_ARG(a), __GPU_MAP_23(__VA_ARGS__)
#define __GPU_MAP_25(a, ...) __GPU_ARG(a), __GPU_MAP_24(__VA_ARGS__)
#define __GPU_MAP_26(a, ...) __GPU_ARG(a), __GPU_MAP_25(__VA_ARGS__)
#define __GPU_MAP_27(a, ...) __GPU_ARG(a), __GPU_MAP_26(__VA_ARGS__)
#define __GPU_MAP_28(a, ...) __GPU_ARG(a), __GPU_MAP_27(__VA_ARGS__)
#define __GPU_MAP_29(a, ...) __GPU_ARG(a), __GPU_MAP_28(__VA_ARGS__)
#define __GPU_MAP_30(a, ...) __GPU_ARG(a), __GPU_MAP_29(__VA_ARGS__)
#define __GPU_MAP_31(a, ...) __GPU_ARG(a), __GPU_MAP_30(__VA_ARGS__)
#define __GPU_MAP_32(a, ...) __GPU_ARG(a), __GPU_MAP_31(__VA_ARGS__)
/* A compound literal array of records ending with a zero-sized one. */
#define __GPU_PACK(...)                                                        \
  ((const __gpu_arg_t[]){__VA_OPT__(__GPU_MAP(__VA_ARGS__), ){0, 0}})

#endif
