// Reductions over any set of axes (codegen/reduction.py plans the launch): sum, prod, max, min,
// all, any, argmax/argmin and var's sum of squared deviations, each an Op below, run by one
// kernel template.
//
// The host moves the reduced axes last and collapses the kept axes (the outputs) and the reduced
// axes (a row) separately. A task is one output, or one part of its row where the row is split
// (`parts` > 1: the first of two passes, writing each part's Op::Value to a temporary that the
// second pass reduces in part order). A group of `group` consecutive threads (a power of two up
// to the block) runs a task: thread k combines the row elements k, k + group, ... in that order,
// then the group combines its threads' values in a fixed tree: warp shuffles, and shared memory
// between the warps of a group. As in numpy, a reduction starts from its operation's identity,
// combined once, with the row's first element (it matters to complex products: 1 * (inf + 0j) is
// inf + nan j); max and min, which have none, and a scan's part totals start from the element.
// A floating-point sum starts from -0 (the identity: a sum of zeros that are all -0 is -0), or
// from +0 (numpy's sums) where the layout says so.
// Every order is fixed by the launch configuration, which depends on the shapes and the device
// only: the same input gives the same bits on every run and stream. No atomics.
#pragma once
#include "hxarray.cuh"

#define HX_REDUCE_BLOCK 256     // the most threads per block
#define HX_REDUCE_MIN_BLOCKS 2  // blocks resident per SM at least (registers are capped to fit)
#define HX_REDUCE_UNROLL 4      // row elements a thread loads before combining them

namespace hx {

struct ReduceLayout {
    Shape kept;         // the outputs (kept axes, collapsed); `contiguous` unused
    Strides x_kept;     // x's byte strides along them
    Strides out_kept;   // out's byte strides along them
    Shape row;          // the reduced axes (collapsed): row element r is C-order index r
    Strides x_row;      // x's byte strides along them
    i64 chunk;          // row elements per task (the whole row unless it is split)
    i64 parts;          // tasks per output
    i64 part_stride;    // bytes between the values of one output's parts in out
    int group;          // threads per task: a power of two dividing blockDim.x
    int from_partials;  // x holds Op::Value partial results, not input elements
    int to_partials;    // write Op::Value partial results, not Op::Out
    int initial;        // row element 0: 0 as it is, 1 combined with the identity (Op::start),
                        // 2 with the identity, a sum's from +0
};

// An element with its index along the row (argmax, argmin).
template <typename T> struct Indexed {
    T value;
    i64 index;
};
template <typename T>
__device__ __forceinline__ Indexed<T> shfl_down(Indexed<T> v, unsigned delta, int width = 32) {
    return Indexed<T>{shfl_down(v.value, delta, width), shfl_down(v.index, delta, width)};
}

// The count, mean and sum of squared deviations from the mean of some elements (var); the mean
// is kept as `shift` (one of the elements) plus `mean`, so that it rounds as the deviations do,
// not as the elements' magnitude.
template <typename T> struct Moments {
    T shift;
    T mean;
    T m2;
    i64 count;
};
template <typename T>
__device__ __forceinline__ Moments<T> shfl_down(Moments<T> v, unsigned delta, int width = 32) {
    return Moments<T>{shfl_down(v.shift, delta, width), shfl_down(v.mean, delta, width),
                      shfl_down(v.m2, delta, width), shfl_down(v.count, delta, width)};
}

namespace red {

// A reduction: Value is what threads combine, load() reads a row element (cast to the
// accumulator's compute type V: the accumulator's own, float for float16, as numpy's loops
// accumulate), start() combines the identity (a sum's from +0 where `positive_zero`) with the
// first element, combine() is associative up to rounding, result() is what out receives (the
// value rounded to the accumulator once).
template <typename In, typename Acc, typename Combine, typename V = Acc> struct Fold {
    typedef V Value;
    typedef Acc Out;
    __device__ static Value load(const char* p, i64) {
        return cast<V>(*reinterpret_cast<const In*>(p));
    }
    __device__ static Value start(Value first, bool positive_zero) {
        return Combine::start(first, positive_zero);
    }
    __device__ static Value combine(Value a, Value b) { return Combine::apply(a, b); }
    __device__ static Out result(Value v) { return cast<Acc>(v); }
};
// start(): where the identity changes nothing (-0 + x is x: a sum of -0 alone is -0, part by
// part for complex numbers; true && x, false || x), the element itself; +0 + x makes a -0 +0.
struct Add {
    template <typename T> __device__ static T start(T first, bool positive_zero) {
        return positive_zero ? ops::add(T(0), first) : first;
    }
    template <typename T> __device__ static T apply(T a, T b) { return ops::add(a, b); }
};
struct Multiply {
    template <typename T> __device__ static T start(T first, bool) {
        return ops::multiply(T(1), first);
    }
    template <typename T> __device__ static T apply(T a, T b) { return ops::multiply(a, b); }
};
struct Maximum {  // NaN propagates; no identity
    template <typename T> __device__ static T start(T first, bool) { return first; }
    template <typename T> __device__ static T apply(T a, T b) { return ops::maximum(a, b); }
};
struct Minimum {
    template <typename T> __device__ static T start(T first, bool) { return first; }
    template <typename T> __device__ static T apply(T a, T b) { return ops::minimum(a, b); }
};
struct And {
    __device__ static bool start(bool first, bool) { return first; }
    __device__ static bool apply(bool a, bool b) { return a && b; }
};
struct Or {
    __device__ static bool start(bool first, bool) { return first; }
    __device__ static bool apply(bool a, bool b) { return a || b; }
};
template <typename In, typename Acc, typename V = Acc> struct Sum : Fold<In, Acc, Add, V> {};
template <typename In, typename Acc, typename V = Acc> struct Prod : Fold<In, Acc, Multiply, V> {};
template <typename In, typename Acc, typename V = Acc> struct Max : Fold<In, Acc, Maximum, V> {};
template <typename In, typename Acc, typename V = Acc> struct Min : Fold<In, Acc, Minimum, V> {};
template <typename In, typename Acc, typename V = Acc> struct All : Fold<In, Acc, And, V> {};
template <typename In, typename Acc, typename V = Acc> struct Any : Fold<In, Acc, Or, V> {};

// The first index of the extremum, a NaN counting as the extremum: an order-independent choice
// (the smaller index among equals), so any tree gives numpy's answer. Values compare in V
// (float for float16: exact).
template <typename In, bool Greatest, typename V = In> struct Arg {
    typedef Indexed<V> Value;
    typedef i64 Out;
    __device__ static Value load(const char* p, i64 r) {
        return Value{cast<V>(*reinterpret_cast<const In*>(p)), r};
    }
    __device__ static Value start(Value first, bool) { return first; }
    __device__ static Value combine(Value a, Value b) {
        const bool a_nan = ops::isnan(a.value), b_nan = ops::isnan(b.value);
        if (a_nan || b_nan) {
            if (a_nan && b_nan) return a.index < b.index ? a : b;
            return a_nan ? a : b;
        }
        if (Greatest ? a.value > b.value : a.value < b.value) return a;
        if (Greatest ? b.value > a.value : b.value < a.value) return b;
        return a.index < b.index ? a : b;
    }
    __device__ static Out result(Value v) { return v.index; }
};
template <typename In, typename V = In> struct ArgMax : Arg<In, true, V> {};
template <typename In, typename V = In> struct ArgMin : Arg<In, false, V> {};

// The sum of squared deviations from the mean in one pass: each element is the Moments of one
// (its own shift), combined as Chan, Golub and LeVeque combine partial results (with one element
// on the right, Welford's update) around the left one's shift: as accurate as two passes on data
// far from zero (1e8 plus noise) unless the shift is far from the mean in units of the spread. An
// infinity makes it NaN, as the two passes' inf - inf does.
template <typename In, typename Acc, typename V = Acc> struct Deviations {
    typedef Moments<V> Value;
    typedef Acc Out;
    __device__ static Value load(const char* p, i64) {
        return Value{cast<V>(*reinterpret_cast<const In*>(p)), V(0), V(0), 1};
    }
    __device__ static Value start(Value first, bool) { return first; }
    __device__ static Value combine(Value a, Value b) {
        const i64 count = a.count + b.count;
        const V delta = (b.shift - a.shift) + (b.mean - a.mean);
        const V share = V(b.count) / V(count);
        return Value{a.shift, a.mean + delta * share,
                     a.m2 + b.m2 + delta * delta * V(a.count) * share, count};
    }
    __device__ static Out result(Value v) {
        return cast<Acc>(ops::isfinite(v.shift + v.mean) ? v.m2 : quiet_nan<V>());
    }
};

}  // namespace red

// Combines the values of the first `valid` threads of each group of `group` consecutive threads
// (shuffles within a warp, then shared memory between the warps of a group); the group's first
// thread returns the result. Every thread of the block calls it with the same `group`.
template <typename Op>
__device__ typename Op::Value group_reduce(typename Op::Value v, int valid, int group,
                                           typename Op::Value* warp_values) {
    typedef typename Op::Value Value;
    const int lane = int(threadIdx.x) & 31;
    const int width = group < 32 ? group : 32;
    const int member = int(threadIdx.x) & (width - 1);
    int have = valid;  // values held by this warp's share of the group
    if (group > 32) {
        have -= int(threadIdx.x) & (group - 1) & ~31;
        have = have < 0 ? 0 : (have > 32 ? 32 : have);
    }
    for (int offset = width / 2; offset > 0; offset /= 2) {
        Value other = hx::shfl_down(v, unsigned(offset), width);
        if (member + offset < have) v = Op::combine(v, other);
    }
    if (group <= 32) return v;
    const int warp = int(threadIdx.x) >> 5;
    if (lane == 0 && have > 0) warp_values[warp] = v;
    __syncthreads();
    if ((int(threadIdx.x) & (group - 1)) < 32) {  // the group's first warp
        const int warps = (valid + 31) >> 5;
        if (lane < warps) v = warp_values[warp + lane];
        for (int offset = group / 64; offset > 0; offset /= 2) {
            Value other = hx::shfl_down(v, unsigned(offset));
            if (lane + offset < warps) v = Op::combine(v, other);
        }
    }
    __syncthreads();  // warp_values is free for the next task
    return v;
}

// Folds the row elements first, first + group, ... (`count` of them) into v in that order (the
// first combined with the identity as `initial`, ReduceLayout's, says). A
// row along one axis keeps HX_REDUCE_UNROLL loads in flight with a 32-bit counter (the host keeps
// a part below 2^31 elements); a row over several axes unravels each element's offset.
template <typename Op, bool FromPartials>
__device__ __forceinline__ typename Op::Value fold_row(const Op& op, const char* row,
                                                       const ReduceLayout& layout, i64 first,
                                                       int count, int initial) {
    typedef typename Op::Value Value;
    auto load = [&op](const char* p, i64 r) -> Value {
        if constexpr (FromPartials) {
            return *reinterpret_cast<const Value*>(p);
        } else {
            return op.load(p, r);
        }
    };
    const int group = layout.group;
    if (layout.row.ndim > 1) {
        Value v = load(row + offset_of(first, layout.row, layout.x_row), first);
        if (initial) v = Op::start(v, initial == 2);
        for (int k = 1; k < count; ++k) {
            const i64 r = first + i64(k) * group;
            v = Op::combine(v, load(row + offset_of(r, layout.row, layout.x_row), r));
        }
        return v;
    }
    const i64 step = layout.x_row.step[0];
    const char* p = row + first * step;
    const i64 stride = i64(group) * step;
    Value v = load(p, first);
    if (initial) v = Op::start(v, initial == 2);
    int k = 1;
    for (; k + HX_REDUCE_UNROLL <= count; k += HX_REDUCE_UNROLL) {
        Value e[HX_REDUCE_UNROLL];
#pragma unroll
        for (int u = 0; u < HX_REDUCE_UNROLL; ++u) {
            e[u] = load(p + i64(k + u) * stride, first + i64(k + u) * group);
        }
#pragma unroll
        for (int u = 0; u < HX_REDUCE_UNROLL; ++u) v = Op::combine(v, e[u]);
    }
    for (; k < count; ++k) v = Op::combine(v, load(p + i64(k) * stride, first + i64(k) * group));
    return v;
}

// The reduction of the layout's rows of x into out by `op`, whose load() and result() may read
// fields of its own (a fused expression's operands: codegen/fused.py); every thread of the block
// runs it.
template <typename Op>
__device__ __forceinline__ void reduce_rows(const Op& op, const char* __restrict__ x,
                                            char* __restrict__ out, const ReduceLayout& layout) {
    typedef typename Op::Value Value;
    __shared__ __align__(16) unsigned char shared[32 * sizeof(Value)];
    Value* warp_values = reinterpret_cast<Value*>(shared);
    const int group = layout.group;
    const int member = int(threadIdx.x) & (group - 1);
    const i64 per_block = i64(blockDim.x) / group;
    const i64 tasks = layout.kept.size * layout.parts;
    // Uniform trip count: every thread of the block reaches the collectives together.
    for (i64 first = i64(blockIdx.x) * per_block; first < tasks;
         first += i64(gridDim.x) * per_block) {
        const i64 task = first + i64(threadIdx.x) / group;
        Value v{};
        int valid = 0;
        i64 output = 0, part = 0;
        if (task < tasks) {
            output = task % layout.kept.size;
            part = task / layout.kept.size;
            const i64 begin = part * layout.chunk;
            const i64 left = layout.row.size - begin;
            const int length = int(layout.chunk < left ? layout.chunk : left);
            valid = length < group ? length : group;
            if (member < length) {
                const char* row = x + offset_of(output, layout.kept, layout.x_kept);
                const int count = (length - member + group - 1) / group;
                const int initial = begin + member == 0 ? layout.initial : 0;
                v = layout.from_partials
                        ? fold_row<Op, true>(op, row, layout, begin + member, count, 0)
                        : fold_row<Op, false>(op, row, layout, begin + member, count, initial);
            }
        }
        v = group_reduce<Op>(v, valid, group, warp_values);
        if (task < tasks && member == 0) {
            char* p = out + offset_of(output, layout.kept, layout.out_kept) +
                      part * layout.part_stride;
            if (layout.to_partials) {
                *reinterpret_cast<Value*>(p) = v;
            } else {
                *reinterpret_cast<typename Op::Out*>(p) = op.result(v);
            }
        }
    }
}

template <typename Op>
__global__ void __launch_bounds__(HX_REDUCE_BLOCK, HX_REDUCE_MIN_BLOCKS)
reduce(const char* __restrict__ x, char* __restrict__ out,
       const __grid_constant__ ReduceLayout layout) {
    reduce_rows(Op(), x, out, layout);
}

}  // namespace hx
