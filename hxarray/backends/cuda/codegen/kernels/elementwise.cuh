// Element-wise kernels: one thread per output element in a grid-stride loop, operands loaded and
// converted to the compute type C, the operation applied (Op::apply, generated from
// hxarray/_ops.py), the result converted to Out and stored. Operands and the output may have any
// strides (broadcast axes have stride 0); where everything is C-contiguous the element number is
// the index (Shape::contiguous, the same for every thread). Index is int where the host has
// checked that every element and byte offset fits, else long long.
#pragma once
#include "hxarray.cuh"

namespace hx {

// An input: an array (data, strides) or, where data is null, one value of the compute type.
struct Operand {
    const char* data;
    Strides strides;
    unsigned char scalar[16];
};
struct Output {
    char* data;
    Strides strides;
};

template <typename C, typename A, typename Index>
__device__ __forceinline__ C load(const Operand& x, Index i, const Shape& shape) {
    if (x.data == nullptr) {
        C value;
        memcpy(&value, x.scalar, sizeof(C));
        return value;
    }
    const char* at = x.data + (shape.contiguous ? i64(i) * i64(sizeof(A)) : offset_of(i, shape, x.strides));
    return cast<C>(*reinterpret_cast<const A*>(at));
}

template <typename Out, typename Index>
__device__ __forceinline__ Out* store_at(const Output& out, Index i, const Shape& shape) {
    char* at = out.data + (shape.contiguous ? i64(i) * i64(sizeof(Out)) : offset_of(i, shape, out.strides));
    return reinterpret_cast<Out*>(at);
}

#define HX_GRID_STRIDE(Index, i)                                                              \
    for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);                \
         i < Index(shape.size); i += Index(gridDim.x) * Index(blockDim.x))

template <typename Op, typename Out, typename C, typename A0, typename Index>
__global__ void map1(Operand x0, Output out, Shape shape) {
    HX_GRID_STRIDE(Index, i) {
        C a = load<C, A0>(x0, i, shape);
        *store_at<Out>(out, i, shape) = cast<Out>(Op::apply(a));
    }
}

template <typename Op, typename Out, typename C, typename A0, typename A1, typename Index>
__global__ void map2(Operand x0, Operand x1, Output out, Shape shape) {
    HX_GRID_STRIDE(Index, i) {
        C a = load<C, A0>(x0, i, shape);
        C b = load<C, A1>(x1, i, shape);
        *store_at<Out>(out, i, shape) = cast<Out>(Op::apply(a, b));
    }
}

// where(condition, x1, x2): the condition is bool; x1 and x2 are loaded in the compute type.
template <typename Out, typename C, typename A1, typename A2, typename Index>
__global__ void select(Operand condition, Operand x1, Operand x2, Output out, Shape shape) {
    HX_GRID_STRIDE(Index, i) {
        bool c = load<bool, bool>(condition, i, shape);
        C v = c ? load<C, A1>(x1, i, shape) : load<C, A2>(x2, i, shape);
        *store_at<Out>(out, i, shape) = cast<Out>(v);
    }
}

#undef HX_GRID_STRIDE

}  // namespace hx
