// CUDA's language and built-ins for the host C++ compiler, so that unmodified CUDA C compiles into
// a module the hxarray simulator runs. Force-included (and precompiled) before every kernel source.
// Not supported, refused before compiling: inline PTX (asm), textures and surfaces, cooperative
// groups / grid-wide sync, tensor-core intrinsics (wmma/mma), dynamic parallelism.
#pragma once
#define HXARRAY_CUDA_SIM 1
#define HXSIM_HEADER_VERSION 1

#include <assert.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <limits>
#include <type_traits>
#include <utility>

#include "hxsim_abi.h"

// ---- language ---------------------------------------------------------------------------------
#define __global__ inline  // called only by its thunk (hxsim::thunks)
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __grid_constant__
#define __cudart_builtin__
// One copy per OS worker thread, and a worker runs one block at a time: per-block storage.
// At block scope thread_local implies static; `extern __shared__` names alias one buffer.
#define __shared__ thread_local

#define threadIdx (hxsim_self()->thread_idx)
#define blockIdx (hxsim_self()->block_idx)
#define blockDim (hxsim_self()->block_dim)
#define gridDim (hxsim_self()->grid_dim)
#define warpSize 32

// ---- vector types -------------------------------------------------------------------------------
#define HXSIM_VEC3_uint(T)
#define HXSIM_VEC3_char(T) struct char3 { T x, y, z; };
#define HXSIM_VEC3_uchar(T) struct uchar3 { T x, y, z; };
#define HXSIM_VEC3_short(T) struct short3 { T x, y, z; };
#define HXSIM_VEC3_ushort(T) struct ushort3 { T x, y, z; };
#define HXSIM_VEC3_int(T) struct int3 { T x, y, z; };
#define HXSIM_VEC3_long(T) struct long3 { T x, y, z; };
#define HXSIM_VEC3_ulong(T) struct ulong3 { T x, y, z; };
#define HXSIM_VEC3_longlong(T) struct longlong3 { T x, y, z; };
#define HXSIM_VEC3_ulonglong(T) struct ulonglong3 { T x, y, z; };
#define HXSIM_VEC3_float(T) struct float3 { T x, y, z; };
#define HXSIM_VEC3_double(T) struct double3 { T x, y, z; };
#define HXSIM_VEC(T, N, A)                                                          \
    struct __attribute__((aligned(A))) N##1 { T x; };                               \
    struct __attribute__((aligned(2 * A > 16 ? 16 : 2 * A))) N##2 { T x, y; };       \
    HXSIM_VEC3_##N(T)                                                               \
    struct __attribute__((aligned(4 * A > 16 ? 16 : 4 * A))) N##4 { T x, y, z, w; }; \
    static inline N##1 make_##N##1(T x) { return N##1{x}; }                         \
    static inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }                 \
    static inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }         \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
HXSIM_VEC(signed char, char, 1)
HXSIM_VEC(unsigned char, uchar, 1)
HXSIM_VEC(short, short, 2)
HXSIM_VEC(unsigned short, ushort, 2)
HXSIM_VEC(int, int, 4)
HXSIM_VEC(unsigned int, uint, 4)  // uint3 itself comes from hxsim_abi.h (threadIdx's type)
HXSIM_VEC(long, long, 8)
HXSIM_VEC(unsigned long, ulong, 8)
HXSIM_VEC(long long, longlong, 8)
HXSIM_VEC(unsigned long long, ulonglong, 8)
HXSIM_VEC(float, float, 4)
HXSIM_VEC(double, double, 8)
#undef HXSIM_VEC

// ---- synchronisation ----------------------------------------------------------------------------
// The default argument is evaluated at the call site: the barrier knows its source line.
static inline void __syncthreads(int line = __builtin_LINE()) {
    hxsim_barrier(HXSIM_BAR, 0, line);
}
static inline int __syncthreads_count(int p, int line = __builtin_LINE()) {
    return hxsim_barrier(HXSIM_BAR_COUNT, p, line);
}
static inline int __syncthreads_and(int p, int line = __builtin_LINE()) {
    return hxsim_barrier(HXSIM_BAR_AND, p, line);
}
static inline int __syncthreads_or(int p, int line = __builtin_LINE()) {
    return hxsim_barrier(HXSIM_BAR_OR, p, line);
}
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    hxsim_warp_op(HXSIM_SYNCWARP, mask, 0, 0, 32);
}
static inline unsigned __activemask() { return hxsim_activemask(); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __trap() { hxsim_trap("__trap() called"); }
static inline void __brkpt() { hxsim_trap("__brkpt() called"); }
static inline void __nanosleep(unsigned ns) {
    struct timespec t{0, long(ns)};
    nanosleep(&t, nullptr);
}
static inline long long clock64() {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ll + t.tv_nsec;
}
// assert() in a kernel: the module is linked with --wrap=__assert_fail, so a failed assertion
// becomes a KernelError instead of abort().
extern "C" __attribute__((weak, visibility("hidden"), noreturn)) void __wrap___assert_fail(
    const char* expr, const char* file, unsigned line, const char*) {
    hxsim_assert_fail(expr, file, line);
}

// ---- warp collectives ----------------------------------------------------------------------------
namespace hxsim {
template <class T>
inline unsigned long long bits(T v) {
    static_assert(sizeof(T) <= 8, "warp shuffles take values of at most 8 bytes");
    unsigned long long b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
inline T from_bits(unsigned long long b) {
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}
}  // namespace hxsim

template <class T>
inline T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
    return hxsim::from_bits<T>(hxsim_warp_op(HXSIM_SHFL, mask, hxsim::bits(var), src, width));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
    return hxsim::from_bits<T>(
        hxsim_warp_op(HXSIM_SHFL_UP, mask, hxsim::bits(var), int(delta), width));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
    return hxsim::from_bits<T>(
        hxsim_warp_op(HXSIM_SHFL_DOWN, mask, hxsim::bits(var), int(delta), width));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
    return hxsim::from_bits<T>(
        hxsim_warp_op(HXSIM_SHFL_XOR, mask, hxsim::bits(var), lane_mask, width));
}
static inline unsigned __ballot_sync(unsigned mask, int p) {
    return unsigned(hxsim_warp_op(HXSIM_BALLOT, mask, p != 0, 0, 32));
}
static inline int __any_sync(unsigned mask, int p) {
    return int(hxsim_warp_op(HXSIM_ANY, mask, p != 0, 0, 32));
}
static inline int __all_sync(unsigned mask, int p) {
    return int(hxsim_warp_op(HXSIM_ALL, mask, p != 0, 0, 32));
}
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value) {
    return unsigned(hxsim_warp_op(HXSIM_MATCH_ANY, mask, hxsim::bits(value), 0, 32));
}
static inline unsigned __reduce_add_sync(unsigned m, unsigned v) {
    return unsigned(hxsim_warp_op(HXSIM_REDUCE_ADD, m, v, 0, 32));
}
static inline int __reduce_add_sync(unsigned m, int v) {
    return int(hxsim_warp_op(HXSIM_REDUCE_ADD, m, unsigned(v), 0, 32));
}
static inline unsigned __reduce_min_sync(unsigned m, unsigned v) {
    return unsigned(hxsim_warp_op(HXSIM_REDUCE_MIN, m, v, 0, 32));
}
static inline int __reduce_min_sync(unsigned m, int v) {
    return int(hxsim_warp_op(HXSIM_REDUCE_MIN_SIGNED, m, unsigned(v), 0, 32));
}
static inline unsigned __reduce_max_sync(unsigned m, unsigned v) {
    return unsigned(hxsim_warp_op(HXSIM_REDUCE_MAX, m, v, 0, 32));
}
static inline int __reduce_max_sync(unsigned m, int v) {
    return int(hxsim_warp_op(HXSIM_REDUCE_MAX_SIGNED, m, unsigned(v), 0, 32));
}
static inline unsigned __reduce_and_sync(unsigned m, unsigned v) {
    return unsigned(hxsim_warp_op(HXSIM_REDUCE_AND, m, v, 0, 32));
}
static inline unsigned __reduce_or_sync(unsigned m, unsigned v) {
    return unsigned(hxsim_warp_op(HXSIM_REDUCE_OR, m, v, 0, 32));
}
static inline unsigned __reduce_xor_sync(unsigned m, unsigned v) {
    return unsigned(hxsim_warp_op(HXSIM_REDUCE_XOR, m, v, 0, 32));
}

// ---- atomics (real ones: blocks run on several OS threads) --------------------------------------
namespace hxsim {
template <class T>
using uint_of = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
// Read-modify-write by compare-and-swap on the value's bits; returns the old value.
template <class T, class F>
inline T rmw(T* address, F op) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics on 32- or 64-bit values");
    using U = uint_of<T>;
    U* p = reinterpret_cast<U*>(address);
    U old_bits = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
        T old = from_bits<T>(old_bits);
        T desired = op(old);
        U desired_bits = U(bits(desired));
        if (__atomic_compare_exchange_n(p, &old_bits, desired_bits, true, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
            return old;
    }
}
}  // namespace hxsim

// CUDA's overload set exactly (so that what compiles here compiles with NVRTC):
// Add: int, unsigned, unsigned long long, float, double; Sub: int, unsigned;
// Exch: int, unsigned, unsigned long long, float; Min/Max: int, unsigned, long long,
// unsigned long long; And/Or/Xor: int, unsigned, unsigned long long;
// CAS: int, unsigned, unsigned long long, unsigned short; Inc/Dec: unsigned.
#define HXSIM_FETCH(name, builtin, T) \
    static inline T name(T* a, T v) { return builtin(a, v, __ATOMIC_SEQ_CST); }
#define HXSIM_RMW(name, T, expr) \
    static inline T name(T* a, T v) { return hxsim::rmw(a, [v](T o) { return expr; }); }
#define HXSIM_CAS(T)                                                                        \
    static inline T atomicCAS(T* a, T compare, T v) {                                       \
        __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
        return compare;                                                                     \
    }
HXSIM_FETCH(atomicAdd, __atomic_fetch_add, int)
HXSIM_FETCH(atomicAdd, __atomic_fetch_add, unsigned int)
HXSIM_FETCH(atomicAdd, __atomic_fetch_add, unsigned long long)
HXSIM_RMW(atomicAdd, float, o + v)
HXSIM_RMW(atomicAdd, double, o + v)
HXSIM_FETCH(atomicSub, __atomic_fetch_sub, int)
HXSIM_FETCH(atomicSub, __atomic_fetch_sub, unsigned int)
HXSIM_FETCH(atomicExch, __atomic_exchange_n, int)
HXSIM_FETCH(atomicExch, __atomic_exchange_n, unsigned int)
HXSIM_FETCH(atomicExch, __atomic_exchange_n, unsigned long long)
HXSIM_RMW(atomicExch, float, ((void)o, v))
HXSIM_RMW(atomicMin, int, v < o ? v : o)
HXSIM_RMW(atomicMin, unsigned int, v < o ? v : o)
HXSIM_RMW(atomicMin, long long, v < o ? v : o)
HXSIM_RMW(atomicMin, unsigned long long, v < o ? v : o)
HXSIM_RMW(atomicMax, int, v > o ? v : o)
HXSIM_RMW(atomicMax, unsigned int, v > o ? v : o)
HXSIM_RMW(atomicMax, long long, v > o ? v : o)
HXSIM_RMW(atomicMax, unsigned long long, v > o ? v : o)
HXSIM_FETCH(atomicAnd, __atomic_fetch_and, int)
HXSIM_FETCH(atomicAnd, __atomic_fetch_and, unsigned int)
HXSIM_FETCH(atomicAnd, __atomic_fetch_and, unsigned long long)
HXSIM_FETCH(atomicOr, __atomic_fetch_or, int)
HXSIM_FETCH(atomicOr, __atomic_fetch_or, unsigned int)
HXSIM_FETCH(atomicOr, __atomic_fetch_or, unsigned long long)
HXSIM_FETCH(atomicXor, __atomic_fetch_xor, int)
HXSIM_FETCH(atomicXor, __atomic_fetch_xor, unsigned int)
HXSIM_FETCH(atomicXor, __atomic_fetch_xor, unsigned long long)
HXSIM_CAS(int)
HXSIM_CAS(unsigned int)
HXSIM_CAS(unsigned long long)
HXSIM_CAS(unsigned short)
#undef HXSIM_FETCH
#undef HXSIM_RMW
#undef HXSIM_CAS
static inline unsigned atomicInc(unsigned* a, unsigned limit) {
    return hxsim::rmw(a, [limit](unsigned o) { return o >= limit ? 0u : o + 1; });
}
static inline unsigned atomicDec(unsigned* a, unsigned limit) {
    return hxsim::rmw(a, [limit](unsigned o) { return (o == 0 || o > limit) ? limit : o - 1; });
}
#define HXSIM_SCOPED(name) \
    template <class... A> inline auto name##_block(A... a) { return name(a...); } \
    template <class... A> inline auto name##_system(A... a) { return name(a...); }
HXSIM_SCOPED(atomicAdd) HXSIM_SCOPED(atomicSub) HXSIM_SCOPED(atomicExch) HXSIM_SCOPED(atomicMin)
HXSIM_SCOPED(atomicMax) HXSIM_SCOPED(atomicCAS) HXSIM_SCOPED(atomicAnd) HXSIM_SCOPED(atomicOr)
HXSIM_SCOPED(atomicXor)
#undef HXSIM_SCOPED

// ---- math: what the host library lacks --------------------------------------------------------------
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline double rcbrt(double x) { return 1.0 / cbrt(x); }
static inline float sinpif(float x) { return sinf(float(M_PI) * x); }
static inline double sinpi(double x) { return sin(M_PI * x); }
static inline float cospif(float x) { return cosf(float(M_PI) * x); }
static inline double cospi(double x) { return cos(M_PI * x); }
static inline void sincospif(float x, float* s, float* c) { sincosf(float(M_PI) * x, s, c); }
static inline void sincospi(double x, double* s, double* c) { sincos(M_PI * x, s, c); }
static inline float normcdff(float x) { return 0.5f * erfcf(-x * float(M_SQRT1_2)); }
static inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
static inline float rhypotf(float x, float y) { return 1.0f / hypotf(x, y); }
static inline double rhypot(double x, double y) { return 1.0 / hypot(x, y); }
static inline float norm3df(float a, float b, float c) { return sqrtf(a * a + b * b + c * c); }
static inline double norm3d(double a, double b, double c) { return sqrt(a * a + b * b + c * c); }
static inline float fdividef(float a, float b) { return a / b; }
static inline float __fdividef(float a, float b) { return a / b; }
// glibc declares these names (without exporting them): define them with its C linkage.
#define HXSIM_GLIBC(decl, body) extern "C" inline decl noexcept { body; }
HXSIM_GLIBC(float __expf(float x), return expf(x))
HXSIM_GLIBC(float __exp10f(float x), return exp10f(x))
HXSIM_GLIBC(float __logf(float x), return logf(x))
HXSIM_GLIBC(float __log2f(float x), return log2f(x))
HXSIM_GLIBC(float __log10f(float x), return log10f(x))
HXSIM_GLIBC(float __sinf(float x), return sinf(x))
HXSIM_GLIBC(float __cosf(float x), return cosf(x))
HXSIM_GLIBC(float __tanf(float x), return tanf(x))
HXSIM_GLIBC(void __sincosf(float x, float* s, float* c), sincosf(x, s, c))
HXSIM_GLIBC(float __powf(float x, float y), return powf(x, y))
#undef HXSIM_GLIBC
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline double __dsqrt_rn(double x) { return sqrt(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

// reinterpretations and conversions
static inline int __float_as_int(float x) { return hxsim::from_bits<int>(hxsim::bits(x)); }
static inline unsigned __float_as_uint(float x) {
    return hxsim::from_bits<unsigned>(hxsim::bits(x));
}
static inline float __int_as_float(int x) { return hxsim::from_bits<float>(hxsim::bits(x)); }
static inline float __uint_as_float(unsigned x) { return hxsim::from_bits<float>(hxsim::bits(x)); }
static inline long long __double_as_longlong(double x) {
    return hxsim::from_bits<long long>(hxsim::bits(x));
}
static inline double __longlong_as_double(long long x) {
    return hxsim::from_bits<double>(hxsim::bits(x));
}
static inline int __double2hiint(double x) { return int(__double_as_longlong(x) >> 32); }
static inline int __double2loint(double x) { return int(__double_as_longlong(x)); }
static inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double((static_cast<long long>(hi) << 32) | unsigned(lo));
}
static inline int __float2int_rn(float x) { return int(nearbyintf(x)); }
static inline int __float2int_rz(float x) { return int(x); }
static inline int __float2int_rd(float x) { return int(floorf(x)); }
static inline int __float2int_ru(float x) { return int(ceilf(x)); }
static inline unsigned __float2uint_rn(float x) { return unsigned(nearbyintf(x)); }
static inline long long __float2ll_rn(float x) { return (long long)(nearbyintf(x)); }
static inline int __double2int_rn(double x) { return int(nearbyint(x)); }
static inline int __double2int_rz(double x) { return int(x); }
static inline long long __double2ll_rn(double x) { return (long long)(nearbyint(x)); }
static inline float __double2float_rn(double x) { return float(x); }
static inline float __int2float_rn(int x) { return float(x); }
static inline float __uint2float_rn(unsigned x) { return float(x); }
static inline float __ll2float_rn(long long x) { return float(x); }
static inline double __int2double_rn(int x) { return double(x); }
static inline double __ll2double_rn(long long x) { return double(x); }

// integer intrinsics
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
static inline unsigned long long __brevll(unsigned long long x) {
    return (static_cast<unsigned long long>(__brev(unsigned(x))) << 32) | __brev(unsigned(x >> 32));
}
static inline int __mulhi(int a, int b) { return int((static_cast<long long>(a) * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return unsigned((static_cast<unsigned long long>(a) * b) >> 32);
}
static inline long long __mul64hi(long long a, long long b) {
    return (long long)((static_cast<__int128>(a) * b) >> 64);
}
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)((static_cast<unsigned __int128>(a) * b) >> 64);
}
static inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
static inline unsigned __umul24(unsigned a, unsigned b) {
    return (a & 0xffffffu) * (b & 0xffffffu);
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return unsigned((v << (s & 31)) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
    return unsigned(v >> (s & 31));
}

// CUDA's min/max for mixed arithmetic types (the usual conversions decide the result type)
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> min(A a, B b) {
    using C = std::common_type_t<A, B>;
    return C(b) < C(a) ? C(b) : C(a);
}
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> max(A a, B b) {
    using C = std::common_type_t<A, B>;
    return C(a) < C(b) ? C(b) : C(a);
}

// cached loads and stores: plain memory on the CPU
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// ---- kernel registration (used by the generated thunks appended to each module) -----------------
namespace hxsim {
template <class T>
constexpr hxsim_param param() {
    using U = std::remove_cv_t<T>;
    return hxsim_param{
        uint32_t(sizeof(U)), uint32_t(alignof(U)),
        uint32_t(std::is_pointer<U>::value              ? HXSIM_PARAM_POINTER
                 : std::is_same<U, bool>::value         ? HXSIM_PARAM_BOOL
                 : std::is_floating_point<U>::value     ? HXSIM_PARAM_FLOAT
                 : std::is_integral<U>::value && std::is_signed<U>::value ? HXSIM_PARAM_SIGNED
                 : std::is_integral<U>::value || std::is_enum<U>::value   ? HXSIM_PARAM_UNSIGNED
                                                        : HXSIM_PARAM_OTHER)};
}
// The kernel's arguments as locals (a flat std::tuple, cheaper to instantiate).
template <size_t I, class T>
struct slot { T value; };
template <class Indices, class... T>
struct slots;
template <size_t... I, class... T>
struct slots<std::index_sequence<I...>, T...> : slot<I, T>... {};

// F's thunk: the arguments unpacked once, then F called for `count` consecutive threads of the
// block in `t`, the first being t's, with `t` advanced in place (a fiber runs one thread, loop mode
// all of a block's). It is F's one call site and `__global__` is `inline`: the module holds one
// copy of each kernel, inlined into the loop where the compiler sees fit (then `hxsim_self()` is
// called once per run, not once per thread).
template <auto F, class... A>
struct thunks {
    static constexpr hxsim_param params[sizeof...(A) + 1] = {param<A>()..., hxsim_param{0, 0, 0}};
    template <size_t... I>
    static void run(void** args, hxsim_thread* t, unsigned count, std::index_sequence<I...>) {
        const slots<std::index_sequence<I...>, std::remove_cv_t<A>...> values{
            {*static_cast<std::remove_cv_t<A>*>(args[I])}...};
        const dim3 d = t->block_dim;
        for (;;) {
            F(static_cast<const slot<I, std::remove_cv_t<A>>&>(values).value...);
            if (--count == 0) return;
            if (++t->thread_idx.x == d.x) {
                t->thread_idx.x = 0;
                if (++t->thread_idx.y == d.y) {
                    t->thread_idx.y = 0;
                    t->thread_idx.z++;
                }
            }
            t->linear++;
            t->lane = t->linear % HXSIM_WARP;
        }
    }
    static void invoke(void** args, hxsim_thread* t, unsigned count) {
        run(args, t, count, std::index_sequence_for<A...>{});
    }
    static constexpr hxsim_kernel_info info(const char* name) {
        return hxsim_kernel_info{name, &invoke, uint32_t(sizeof...(A)), params};
    }
};
template <auto F>
struct kernel;
template <class... A, void (*F)(A...)>
struct kernel<F> : thunks<F, A...> {};
template <class... A, void (*F)(A...) noexcept>
struct kernel<F> : thunks<F, A...> {};
}  // namespace hxsim
