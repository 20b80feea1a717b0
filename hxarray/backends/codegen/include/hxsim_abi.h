// The binary interface between compiled kernel modules and the simulator runtime (hxsim_runtime.cpp).
// Shared by both sides; plain C layout. Change HXSIM_ABI_VERSION with any change here.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define HXSIM_ABI_VERSION 2
#define HXSIM_MAX_DYNAMIC_SHARED 49152  // bytes of extern __shared__ per block
#define HXSIM_WARP 32

struct uint3 { unsigned int x, y, z; };

struct dim3 {
    unsigned int x, y, z;
#ifdef __cplusplus
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
#endif
};

// What a running CUDA thread can ask about itself; the runtime keeps one per fiber.
struct hxsim_thread {
    uint3 thread_idx;
    uint3 block_idx;
    dim3 block_dim;
    dim3 grid_dim;
    unsigned int lane;    // threadIdx linearised, mod 32
    unsigned int linear;  // threadIdx linearised
};

// One kernel parameter as the compiler sees it (filled by the generated thunks).
enum hxsim_param_kind {
    HXSIM_PARAM_OTHER = 0, HXSIM_PARAM_POINTER = 1, HXSIM_PARAM_SIGNED = 2,
    HXSIM_PARAM_UNSIGNED = 3, HXSIM_PARAM_FLOAT = 4, HXSIM_PARAM_BOOL = 5,
};
struct hxsim_param { uint32_t size, align, kind; };

struct hxsim_kernel_info {
    const char* name;                  // the name (or name expression) it was registered under
    // calls the kernel with *args[i] as parameter i for `count` consecutive threads of t's block,
    // the first being t's, advancing t's thread fields through them
    void (*invoke)(void** args, struct hxsim_thread* t, unsigned count);
    uint32_t nparams;
    const struct hxsim_param* params;
};

// Warp collectives (hxsim_warp_op's `op`).
enum hxsim_warp_op_code {
    HXSIM_SYNCWARP = 0, HXSIM_SHFL = 1, HXSIM_SHFL_UP = 2, HXSIM_SHFL_DOWN = 3, HXSIM_SHFL_XOR = 4,
    HXSIM_BALLOT = 5, HXSIM_ANY = 6, HXSIM_ALL = 7, HXSIM_REDUCE_ADD = 8, HXSIM_REDUCE_MIN = 9,
    HXSIM_REDUCE_MAX = 10, HXSIM_REDUCE_AND = 11, HXSIM_REDUCE_OR = 12, HXSIM_REDUCE_XOR = 13,
    HXSIM_REDUCE_MIN_SIGNED = 14, HXSIM_REDUCE_MAX_SIGNED = 15, HXSIM_MATCH_ANY = 16,
};
// Block barriers (hxsim_barrier's `kind`).
enum hxsim_barrier_kind { HXSIM_BAR = 0, HXSIM_BAR_COUNT = 1, HXSIM_BAR_AND = 2, HXSIM_BAR_OR = 3 };

#ifdef __cplusplus
extern "C" {
#endif
// The calling CUDA thread. Stable for the thread's lifetime (in loop mode one record whose
// fields a block's threads take in turn), hence `const` and `nothrow` for the optimiser: a
// kernel inlined into its thunk's loop asks once per block.
const struct hxsim_thread* hxsim_self(void) __attribute__((const, nothrow));
// `line` is the source line of the __syncthreads() call (its identity, robust to the optimiser
// duplicating the call).
int hxsim_barrier(int kind, int predicate, int line);
unsigned long long hxsim_warp_op(int op, unsigned int mask, unsigned long long value, int arg,
                                 int width);
unsigned int hxsim_activemask(void);
void hxsim_trap(const char* message) __attribute__((noreturn));
void hxsim_assert_fail(const char* expr, const char* file, unsigned line)
    __attribute__((noreturn));
#ifdef __cplusplus
}
#endif
