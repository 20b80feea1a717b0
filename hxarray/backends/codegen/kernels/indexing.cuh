// Indexing and creation kernels: gather and scatter with integer index arrays, nonzero by a scan,
// arange with numpy's values. Data movement is by element size and index arrays of every integer
// dtype are read through a run-time kind (uniform across a launch), so these kernels are
// instantiated once, not per dtype; only arange, which computes, is a template of the dtype.
// A source defines HX_INDEXING_GATHER or HX_INDEXING_NONZERO for the (non-template) kernels of
// that family, so each source compiles only its own.
#pragma once
#include "hxarray.cuh"

namespace hx {

#define HX_GRID_LOOP(i, n)                                                                    \
    for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                        \
         i += i64(gridDim.x) * blockDim.x)

#define HX_MAX_INDICES 16
#define HX_NO_ERROR 0xffffffffffffffffULL

// ---- helpers -----------------------------------------------------------------------------------
// The C-order coordinates of element `i` of `shape`.
// Both loops are unrolled over every possible axis, so `coords` stays in registers.
__device__ __forceinline__ void unravel(i64 i, const Shape& shape, i64 (&coords)[HX_MAX_DIMS]) {
#pragma unroll
    for (int d = HX_MAX_DIMS - 1; d >= 0; --d) {
        if (d < shape.ndim) {
            const i64 q = d == 0 ? 0 : i / shape.extent[d];
            coords[d] = i - q * shape.extent[d];
            i = q;
        }
    }
}
__device__ __forceinline__ i64 dot(const i64 (&coords)[HX_MAX_DIMS], const Strides& strides,
                                   int ndim) {
    i64 offset = 0;
#pragma unroll
    for (int d = 0; d < HX_MAX_DIMS; ++d) {
        if (d < ndim) offset += coords[d] * strides.step[d];
    }
    return offset;
}

// An integer index of any dtype (codegen/indexing.py INDEX_KINDS) as i64; uint64 values past
// the i64 range read as its maximum, which is out of range of every axis.
__device__ __forceinline__ i64 load_index(const char* at, int kind) {
    switch (kind) {
        case 0: return *reinterpret_cast<const i8*>(at);
        case 1: return *reinterpret_cast<const i16*>(at);
        case 2: return *reinterpret_cast<const i32*>(at);
        case 3: return *reinterpret_cast<const i64*>(at);
        case 4: return *reinterpret_cast<const u8*>(at);
        case 5: return *reinterpret_cast<const u16*>(at);
        case 6: return *reinterpret_cast<const u32*>(at);
        default: {
            u64 v = *reinterpret_cast<const u64*>(at);
            return v > 9223372036854775807ULL ? i64(9223372036854775807LL) : i64(v);
        }
    }
}

__device__ __forceinline__ void copy_element(char* to, const char* from, int itemsize) {
    switch (itemsize) {
        case 1: *reinterpret_cast<u8*>(to) = *reinterpret_cast<const u8*>(from); break;
        case 2: *reinterpret_cast<u16*>(to) = *reinterpret_cast<const u16*>(from); break;
        case 4: *reinterpret_cast<u32*>(to) = *reinterpret_cast<const u32*>(from); break;
        case 8: *reinterpret_cast<u64*>(to) = *reinterpret_cast<const u64*>(from); break;
        default:
            reinterpret_cast<u64*>(to)[0] = reinterpret_cast<const u64*>(from)[0];
            reinterpret_cast<u64*>(to)[1] = reinterpret_cast<const u64*>(from)[1];
    }
}

// ---- gather and scatter --------------------------------------------------------------------------
#ifdef HX_INDEXING_GATHER
// One integer index array: its strides over the launch's shape, the length of the axis of x it
// indexes and x's byte stride along that axis.
struct IndexArray {
    const char* data;
    Strides strides;
    i64 extent;
    i64 step;
    int kind;
    int unused;
};
// A gather or scatter over `shape`: x's strides (0 along the index arrays' axes), the other
// array's (out for gather, values for scatter), the element size and the index arrays. The
// launch covers positions first .. first + shape.size - 1 of a C-order iteration of `total`
// elements (the host splits iterations of more than HX_MAX_DIMS axes).
struct IndexLayout {
    Shape shape;
    Strides x;
    Strides y;
    i64 first;
    i64 total;
    int count;
    int itemsize;
    IndexArray index[HX_MAX_INDICES];
};

// The byte offset in x the index arrays select at `coords` (added to `offset`); false for an
// index out of range, after lowering (where Report) the error key to (index array j, position p
// of the iteration) j * total + p: the smallest key names the value numpy reports.
template <bool Report>
__device__ __forceinline__ bool select_offset(const IndexLayout& layout,
                                              const i64 (&coords)[HX_MAX_DIMS],
                                              i64 i, i64* offset, u64* error) {
    for (int j = 0; j < layout.count; ++j) {
        const IndexArray& index = layout.index[j];
        i64 v = load_index(index.data + dot(coords, index.strides, layout.shape.ndim),
                           index.kind);
        if (v < 0) v += index.extent;
        if (v < 0 || v >= index.extent) {
            if constexpr (Report) {
                atomicMin(reinterpret_cast<unsigned long long*>(error),
                          (unsigned long long)(u64(j) * u64(layout.total) +
                                               u64(layout.first + i)));
            }
            return false;
        }
        *offset += v * index.step;
    }
    return true;
}

// out[i] = x[index arrays at i], checking every index as it goes.
__global__ void gather(const char* x, char* out, const __grid_constant__ IndexLayout layout,
                       u64* error) {
    i64 coords[HX_MAX_DIMS];
    HX_GRID_LOOP(i, layout.shape.size) {
        unravel(i, layout.shape, coords);
        i64 offset = dot(coords, layout.x, layout.shape.ndim);
        if (select_offset<true>(layout, coords, i, &offset, error)) {
            copy_element(out + dot(coords, layout.y, layout.shape.ndim), x + offset,
                         layout.itemsize);
        }
    }
}

// Checks every index (over the index arrays' shape) before a scatter writes anything.
__global__ void check_indices(const __grid_constant__ IndexLayout layout, u64* error) {
    i64 coords[HX_MAX_DIMS];
    HX_GRID_LOOP(i, layout.shape.size) {
        unravel(i, layout.shape, coords);
        i64 offset = 0;
        select_offset<true>(layout, coords, i, &offset, error);
    }
}

// x[index arrays at i] = values[i], unless check_indices found an index out of range.
__global__ void scatter(char* x, const char* values, const __grid_constant__ IndexLayout layout,
                        const u64* error) {
    if (*error != HX_NO_ERROR) return;
    i64 coords[HX_MAX_DIMS];
    HX_GRID_LOOP(i, layout.shape.size) {
        unravel(i, layout.shape, coords);
        i64 offset = dot(coords, layout.x, layout.shape.ndim);
        select_offset<false>(layout, coords, i, &offset, nullptr);
        copy_element(x + offset, values + dot(coords, layout.y, layout.shape.ndim),
                     layout.itemsize);
    }
}

#endif  // HX_INDEXING_GATHER

// ---- nonzero: counts per chunk, their exclusive scan, then the coordinates -------------------
#ifdef HX_INDEXING_NONZERO
// Each block takes chunks of HX_NZ_ITEMS consecutive elements per thread, in thread order, so a
// block-wide exclusive scan of the threads' counts places every non-zero element in C order.
#define HX_NZ_THREADS 256
#define HX_NZ_ITEMS 32
#define HX_NZ_CHUNK (HX_NZ_THREADS * HX_NZ_ITEMS)

// Whether an element is non-zero, by kind (codegen/indexing.py VALUE_KINDS): 0-3 compare the
// bits of 1, 2, 4 or 8 bytes (bool, integers); 4-8 compare float32, float64, complex64,
// complex128 and float16 values (so -0 is zero and NaN is not).
__device__ __forceinline__ bool is_nonzero(const char* at, int kind) {
    switch (kind) {
        case 0: return *reinterpret_cast<const u8*>(at) != 0;
        case 1: return *reinterpret_cast<const u16*>(at) != 0;
        case 2: return *reinterpret_cast<const u32*>(at) != 0;
        case 3: return *reinterpret_cast<const u64*>(at) != 0;
        case 4: return *reinterpret_cast<const f32*>(at) != 0.0f;
        case 5: return *reinterpret_cast<const f64*>(at) != 0.0;
        case 8: return (*reinterpret_cast<const u16*>(at) & 0x7fffu) != 0;  // (float16: ±0)
        case 6: {
            const f32* parts = reinterpret_cast<const f32*>(at);
            return parts[0] != 0.0f || parts[1] != 0.0f;
        }
        default: {
            const f64* parts = reinterpret_cast<const f64*>(at);
            return parts[0] != 0.0 || parts[1] != 0.0;
        }
    }
}

struct Values {
    const char* data;
    Strides strides;
    int kind;
    int itemsize;
};

__device__ __forceinline__ bool nonzero_at(const Values& x, const Shape& shape, i64 i) {
    const i64 offset = shape.contiguous ? i * x.itemsize : offset_of(i, shape, x.strides);
    return is_nonzero(x.data + offset, x.kind);
}

// The exclusive prefix sum of `value` over the block's threads (a multiple of 32 threads), and
// the block's total in *total.
__device__ __forceinline__ i64 block_exclusive_scan(i64 value, i64* total) {
    __shared__ i64 warp_sums[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    i64 inclusive = value;
    for (int d = 1; d < 32; d *= 2) {
        i64 up = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= d) inclusive += up;
    }
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        i64 sums = lane < warps ? warp_sums[lane] : 0;
        for (int d = 1; d < 32; d *= 2) {
            i64 up = __shfl_up_sync(0xffffffffu, sums, d);
            if (lane >= d) sums += up;
        }
        warp_sums[lane] = sums;
    }
    __syncthreads();
    const i64 before = (warp > 0 ? warp_sums[warp - 1] : 0) + inclusive - value;
    *total = warp_sums[warps - 1];
    __syncthreads();  // warp_sums is free for the next call
    return before;
}

// The flags of this thread's elements of `chunk` (bit e: element first + e) and their count.
__device__ __forceinline__ int chunk_flags(const Values& x, const Shape& shape, i64 chunk,
                                           unsigned* flags) {
    const i64 first = chunk * HX_NZ_CHUNK + i64(threadIdx.x) * HX_NZ_ITEMS;
    unsigned bits = 0;
    int count = 0;
    for (int e = 0; e < HX_NZ_ITEMS; ++e) {
        if (first + e < shape.size && nonzero_at(x, shape, first + e)) {
            bits |= 1u << e;
            ++count;
        }
    }
    *flags = bits;
    return count;
}

__global__ void __launch_bounds__(HX_NZ_THREADS) nonzero_count(
        const __grid_constant__ Values x, const __grid_constant__ Shape shape, i64* counts,
        i64 chunks) {
    for (i64 chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        unsigned flags;
        i64 total;
        block_exclusive_scan(chunk_flags(x, shape, chunk, &flags), &total);
        if (threadIdx.x == 0) counts[chunk] = total;
    }
}

// One block: the chunks' counts become their first output positions; *total (just past them,
// counts[chunks]) the count.
__global__ void __launch_bounds__(HX_NZ_THREADS) nonzero_scan(i64* counts, i64 chunks,
                                                               i64* total) {
    i64 carry = 0;
    for (i64 start = 0; start < chunks; start += blockDim.x) {
        const i64 i = start + threadIdx.x;
        const i64 value = i < chunks ? counts[i] : 0;
        i64 sum;
        const i64 before = block_exclusive_scan(value, &sum);
        if (i < chunks) counts[i] = carry + before;
        carry += sum;
    }
    if (threadIdx.x == 0) *total = carry;
}

// The coordinates of every non-zero element over `coords` (x's shape, or its size alone: then
// the C-order position), axis d into out.axis[d].
struct Coordinates {
    i64* axis[HX_MAX_DIMS];
};

__global__ void __launch_bounds__(HX_NZ_THREADS) nonzero_write(
        const __grid_constant__ Values x, const __grid_constant__ Shape shape, const i64* starts,
        i64 chunks, const __grid_constant__ Shape coords, const __grid_constant__ Coordinates out) {
    i64 at[HX_MAX_DIMS];
    for (i64 chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        if (starts[chunk + 1] == starts[chunk]) continue;  // nothing to write (the same for all)
        unsigned flags;
        i64 total;
        i64 position = starts[chunk] +
                       block_exclusive_scan(chunk_flags(x, shape, chunk, &flags), &total);
        const i64 first = chunk * HX_NZ_CHUNK + i64(threadIdx.x) * HX_NZ_ITEMS;
        for (int e = 0; e < HX_NZ_ITEMS; ++e) {
            if (flags & (1u << e)) {
                unravel(first + e, coords, at);
#pragma unroll
                for (int d = 0; d < HX_MAX_DIMS; ++d) {
                    if (d < coords.ndim) out.axis[d][position] = at[d];
                }
                ++position;
            }
        }
    }
}

#endif  // HX_INDEXING_NONZERO

// ---- arange: numpy's fill, out[0] = start, out[1] = next, out[i] = start + i * (next - start) --
// computed as numpy does in the dtype: integers wrap, floating-point products and sums are
// rounded one by one (never contracted to a fused multiply-add), complex numbers part by part.
template <typename T> struct arange_fill {
    __device__ static T at(T start, T next, i64 i) {
        const u64 delta = u64(next) - u64(start);
        return T(u64(start) + u64(i) * delta);
    }
};
template <> struct arange_fill<f32> {
    __device__ static f32 at(f32 start, f32 next, i64 i) {
        return __fadd_rn(start, __fmul_rn(f32(i), __fsub_rn(next, start)));
    }
};
template <> struct arange_fill<f64> {
    __device__ static f64 at(f64 start, f64 next, i64 i) {
        return __dadd_rn(start, __dmul_rn(f64(i), __dsub_rn(next, start)));
    }
};
template <> struct arange_fill<f16> {  // numpy's: in float, each value rounded once
    __device__ static f16 at(f16 start, f16 next, i64 i) {
        const f32 s = float_of(start);
        return cast<f16>(__fadd_rn(s, __fmul_rn(f32(i), __fsub_rn(float_of(next), s))));
    }
};
template <typename R> struct arange_fill<complex<R> > {
    __device__ static complex<R> at(complex<R> start, complex<R> next, i64 i) {
        return complex<R>(arange_fill<R>::at(start.real(), next.real(), i),
                          arange_fill<R>::at(start.imag(), next.imag(), i));
    }
};

template <typename T>
__global__ void arange(T* out, i64 n, T start, T next) {
    HX_GRID_LOOP(i, n) {
        out[i] = i == 0 ? start : (i == 1 ? next : arange_fill<T>::at(start, next, i));
    }
}

#undef HX_GRID_LOOP

}  // namespace hx
