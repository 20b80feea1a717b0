// Element-wise kernels: a grid-stride loop over the output's elements; operands are loaded and
// converted to the compute type C, the operation applied (Op::apply, generated from
// hxarray/_ops.py), the result converted to Out and stored. Operands and the output may have any
// strides (broadcast axes have stride 0). Shape::contiguous says, for the whole launch, how
// elements are found:
// - HX_STRIDED: by their coordinates, unravelled once per element (one division per axis but the
//   outermost) and applied to every array's strides;
// - HX_CONTIGUOUS: every array is C-contiguous, the element number is the index;
// - HX_ALIGNED: contiguous, and every array starts on a 16-byte boundary: each thread moves packs
//   of N elements with one 128-bit access for the widest type (N = 16 / its size; narrower types
//   move N elements in one narrower access), the last size % N elements one by one.
// Index is int where the host has checked that every element number fits, else long long; the
// loop never computes an index past the size, so it cannot wrap.
// The layouts are __grid_constant__ parameters: read in place, never copied to local memory.
#pragma once
#include "hxarray.cuh"

#define HX_STRIDED 0
#define HX_CONTIGUOUS 1
#define HX_ALIGNED 2
#define HX_VECTOR_BYTES 16

namespace hx {

// An input: an array (data, strides) or, where data is null, one value of its type.
struct Operand {
    const char* data;
    Strides strides;
    unsigned char scalar[16];
};
struct Output {
    char* data;
    Strides strides;
};

struct None {};  // an unused operand slot of for_each_element
template <typename T> struct is_none { static const bool value = false; };
template <> struct is_none<None> { static const bool value = true; };
template <typename T> struct width { static const int value = int(sizeof(T)); };
template <> struct width<None> { static const int value = 1; };

template <int Bytes> struct raw_of;  // an unsigned type of `Bytes` bytes, aligned to its size
template <> struct raw_of<1> { typedef unsigned char type; };
template <> struct raw_of<2> { typedef unsigned short type; };
template <> struct raw_of<4> { typedef unsigned int type; };
template <> struct raw_of<8> { typedef uint2 type; };
template <> struct raw_of<16> { typedef uint4 type; };

template <typename A>
__device__ __forceinline__ A load_one(const Operand& x, i64 offset) {
    A value;
    if (x.data == nullptr) {
        memcpy(&value, x.scalar, sizeof(A));
    } else {
        value = *reinterpret_cast<const A*>(x.data + offset);
    }
    return value;
}
template <>
__device__ __forceinline__ None load_one<None>(const Operand&, i64) { return None(); }

// Elements first .. first + N - 1 of a contiguous, aligned operand in one access.
template <typename A, int N>
__device__ __forceinline__ void load_pack(const Operand& x, i64 first, A (&values)[N]) {
    if constexpr (!is_none<A>::value) {
        if (x.data == nullptr) {
            A value;
            memcpy(&value, x.scalar, sizeof(A));
#pragma unroll
            for (int j = 0; j < N; ++j) values[j] = value;
        } else {
            typedef typename raw_of<int(sizeof(A)) * N>::type Raw;
            const Raw raw = *reinterpret_cast<const Raw*>(x.data + first * i64(sizeof(A)));
            memcpy(values, &raw, sizeof(Raw));
        }
    }
}

// The next index of a grid-stride loop over [.., n): i + stride, or n where that would reach
// past n (so the index never overflows its type).
template <typename Index>
__device__ __forceinline__ Index next_index(Index i, Index stride, Index n) {
    return n - i > stride ? Index(i + stride) : n;
}

// out[i] = f(x0[i], x1[i], x2[i]) over the launch's elements; slots whose type is None are
// not read (f receives None()).
template <typename Out, typename Index, typename A0, typename A1, typename A2, typename F>
__device__ __forceinline__ void for_each_element(const Shape& shape, const Output& out,
                                                 const Operand& x0, const Operand& x1,
                                                 const Operand& x2, F f) {
    constexpr int w01 = width<A0>::value > width<A1>::value ? width<A0>::value : width<A1>::value;
    constexpr int w2o = width<A2>::value > width<Out>::value ? width<A2>::value : width<Out>::value;
    constexpr int widest = w01 > w2o ? w01 : w2o;
    constexpr int N = widest >= HX_VECTOR_BYTES ? 1 : HX_VECTOR_BYTES / widest;
    const Index size = Index(shape.size);
    const Index start = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
    const Index stride = Index(gridDim.x) * Index(blockDim.x);
    if (shape.contiguous == HX_ALIGNED) {
        typedef typename raw_of<int(sizeof(Out)) * N>::type Raw;
        const Index packs = size / N;
        for (Index p = start; p < packs; p = next_index(p, stride, packs)) {
            const i64 first = i64(p) * N;
            A0 a[N];
            A1 b[N];
            A2 c[N];
            load_pack(x0, first, a);
            load_pack(x1, first, b);
            load_pack(x2, first, c);
            Out results[N];
#pragma unroll
            for (int j = 0; j < N; ++j) results[j] = f(a[j], b[j], c[j]);
            Raw raw;
            memcpy(&raw, results, sizeof(Raw));
            *reinterpret_cast<Raw*>(out.data + first * i64(sizeof(Out))) = raw;
        }
        const Index tail = size - packs * N;  // fewer than N: the first threads take them
        if (start < tail) {
            const i64 i = i64(packs) * N + start;
            *reinterpret_cast<Out*>(out.data + i * i64(sizeof(Out))) =
                f(load_one<A0>(x0, i * width<A0>::value), load_one<A1>(x1, i * width<A1>::value),
                  load_one<A2>(x2, i * width<A2>::value));
        }
        return;
    }
    for (Index i = start; i < size; i = next_index(i, stride, size)) {
        i64 at0, at1, at2, at;
        if (shape.contiguous == HX_CONTIGUOUS) {
            at0 = i64(i) * width<A0>::value;
            at1 = i64(i) * width<A1>::value;
            at2 = i64(i) * width<A2>::value;
            at = i64(i) * i64(sizeof(Out));
        } else {
            at0 = at1 = at2 = at = 0;
            Index rest = i;
#pragma unroll
            for (int d = HX_MAX_DIMS - 1; d >= 0; --d) {
                if (d < shape.ndim) {
                    i64 coordinate;
                    if (d == 0) {  // the outermost axis: what is left (i < size)
                        coordinate = i64(rest);
                    } else {
                        const Index n = Index(shape.extent[d]);
                        const Index q = rest / n;
                        coordinate = i64(rest - q * n);
                        rest = q;
                    }
                    at += coordinate * out.strides.step[d];
                    at0 += coordinate * x0.strides.step[d];
                    if constexpr (!is_none<A1>::value) {
                        at1 += coordinate * x1.strides.step[d];
                    }
                    if constexpr (!is_none<A2>::value) {
                        at2 += coordinate * x2.strides.step[d];
                    }
                }
            }
        }
        *reinterpret_cast<Out*>(out.data + at) =
            f(load_one<A0>(x0, at0), load_one<A1>(x1, at1), load_one<A2>(x2, at2));
    }
}

template <typename Op, typename Out, typename C, typename A0, typename Index>
__global__ void map1(const __grid_constant__ Operand x0, const __grid_constant__ Output out,
                     const __grid_constant__ Shape shape) {
    for_each_element<Out, Index, A0, None, None>(shape, out, x0, x0, x0, [](A0 a, None, None) {
        return cast<Out>(Op::apply(cast<C>(a)));
    });
}

template <typename Op, typename Out, typename C, typename A0, typename A1, typename Index>
__global__ void map2(const __grid_constant__ Operand x0, const __grid_constant__ Operand x1,
                     const __grid_constant__ Output out, const __grid_constant__ Shape shape) {
    for_each_element<Out, Index, A0, A1, None>(shape, out, x0, x1, x0, [](A0 a, A1 b, None) {
        return cast<Out>(Op::apply(cast<C>(a), cast<C>(b)));
    });
}

// where(condition, x1, x2): the condition is bool; x1 and x2 are loaded in the compute type.
template <typename Out, typename C, typename A1, typename A2, typename Index>
__global__ void select(const __grid_constant__ Operand condition,
                       const __grid_constant__ Operand x1, const __grid_constant__ Operand x2,
                       const __grid_constant__ Output out, const __grid_constant__ Shape shape) {
    for_each_element<Out, Index, bool, A1, A2>(shape, out, condition, x1, x2,
                                               [](bool c, A1 a, A2 b) {
        return cast<Out>(c ? cast<C>(a) : cast<C>(b));
    });
}

}  // namespace hx
