// Cumulative sums and products along one axis (codegen/scan.py plans the launch), with the
// reductions' Sum and Prod ops: elements are cast to the accumulator on load, and the first
// element of a row is its own prefix (no identity is combined).
//
// scan_rows: one thread per row (or part of a row), in order: numpy's sequence of operations
// exactly for whole rows (short rows, or enough rows to fill the device); rows split into parts
// where neighbouring rows lie closer in memory than a row's elements (neighbouring threads then
// read neighbouring addresses).
// scan_parts: one block per part of a row, tile by tile. The block loads the tile coalesced
// (element k by thread k mod blockDim.x: a warp reads consecutive elements) into shared memory;
// thread t combines scan_items<Value>() consecutive elements there; the first warp scans the
// threads' totals (each lane rakes blockDim.x / 32 consecutive totals in shared memory, the
// lanes scan with shuffles); each thread rescans its elements from its prefix (the carry of the
// earlier tiles, the last output of the previous tile, and parts, then the earlier lanes'
// threads, then the lane's earlier threads), each output in place of its element in shared
// memory, which the block stores coalesced. Five barriers per tile. A row split into parts
// takes the parts' totals from a first pass (the reduce kernel, in part order); a part's carry
// combines the earlier parts' totals in order.
// Every order is fixed by the launch configuration: the same bits on every run and stream.
#pragma once
#include "reduction.cuh"

#define HX_SCAN_BLOCK 256  // the most threads per block of scan_parts
#define HX_SCAN_MIN_BLOCKS 4  // blocks of scan_parts resident per SM at least (registers capped)

namespace hx {

// Consecutive elements per thread of scan_parts (codegen/scan.py's `items`): 16, fewer for wide
// values, so that a tile stages at most 16 KiB.
template <typename Value> __device__ constexpr int scan_items() {
    return sizeof(Value) <= 4 ? 16 : int(64 / sizeof(Value));
}
// A tile element's place in shared memory: one word of padding per 32, so that the threads
// taking consecutive elements meet no bank conflicts.
__device__ __forceinline__ int staged_at(int k) { return k + (k >> 5); }

struct ScanLayout {
    Shape rows;          // the other axes, collapsed; `contiguous` unused
    Strides x_rows;      // x's byte strides along them
    Strides out_rows;    // out's byte strides along them
    i64 length;          // elements along the scanned axis (at least 1)
    i64 x_step;          // x's byte stride along it
    i64 out_step;        // out's byte stride along it
    i64 chunk;           // elements per part
    i64 parts;           // parts per row
    const char* totals;  // parts > 1: Op::Value totals of parts 0 .. parts - 2, [part][row]
};

// Task `task` of a launch: part `part` of row `row`, its elements [begin, end).
struct ScanTask {
    const char* in;  // where the row starts in x and in out
    char* out;
    i64 row, part, begin, end;
};
__device__ __forceinline__ ScanTask scan_task(const char* x, char* out, const ScanLayout& layout,
                                              i64 task) {
    ScanTask t;
    t.row = task % layout.rows.size;
    t.part = task / layout.rows.size;
    t.in = x + offset_of(t.row, layout.rows, layout.x_rows);
    t.out = out + offset_of(t.row, layout.rows, layout.out_rows);
    t.begin = t.part * layout.chunk;
    t.end = t.begin + layout.chunk < layout.length ? t.begin + layout.chunk : layout.length;
    return t;
}

// The combination of the totals of parts 0 .. part - 1 of `row`, in order.
template <typename Op>
__device__ typename Op::Value carry_into(const ScanLayout& layout, i64 row, i64 part) {
    const typename Op::Value* totals =
        reinterpret_cast<const typename Op::Value*>(layout.totals);
    typename Op::Value c = totals[row];
    for (i64 p = 1; p < part; ++p) c = Op::combine(c, totals[p * layout.rows.size + row]);
    return c;
}

template <typename Op>
__global__ void scan_rows(const char* __restrict__ x, char* __restrict__ out, ScanLayout layout) {
    typedef typename Op::Out Out;
    const i64 rows = layout.rows.size;
    for (i64 task = i64(blockIdx.x) * blockDim.x + threadIdx.x; task < rows * layout.parts;
         task += i64(gridDim.x) * blockDim.x) {
        const ScanTask t = scan_task(x, out, layout, task);
        typename Op::Value acc = Op::load(t.in + t.begin * layout.x_step, t.begin);
        if (t.part > 0) acc = Op::combine(carry_into<Op>(layout, t.row, t.part), acc);
        *reinterpret_cast<Out*>(t.out + t.begin * layout.out_step) = Op::result(acc);
        for (i64 i = t.begin + 1; i < t.end; ++i) {
            acc = Op::combine(acc, Op::load(t.in + i * layout.x_step, i));
            *reinterpret_cast<Out*>(t.out + i * layout.out_step) = Op::result(acc);
        }
    }
}

// The inclusive scan of v over the lanes of a warp (every lane takes part).
template <typename Op>
__device__ __forceinline__ typename Op::Value warp_scan(typename Op::Value v, int lane) {
    for (int offset = 1; offset < 32; offset *= 2) {
        typename Op::Value earlier = hx::shfl_up(v, unsigned(offset));
        if (lane >= offset) v = Op::combine(earlier, v);
    }
    return v;
}

template <typename Op>
__global__ void __launch_bounds__(HX_SCAN_BLOCK, HX_SCAN_MIN_BLOCKS)
scan_parts(const char* __restrict__ x, char* __restrict__ out, ScanLayout layout) {
    typedef typename Op::Value Value;
    typedef typename Op::Out Out;
    constexpr int ITEMS = scan_items<Value>();
    constexpr int TILE = HX_SCAN_BLOCK * ITEMS;
    __shared__ __align__(16) unsigned char shared[(HX_SCAN_BLOCK + 1) * sizeof(Value)];
    __shared__ __align__(16) unsigned char staging[(TILE + TILE / 32) * sizeof(Value)];
    Value* prefixes = reinterpret_cast<Value*>(shared);  // a thread's total, then its prefix
    Value* carry = prefixes + HX_SCAN_BLOCK;
    Value* staged = reinterpret_cast<Value*>(staging);  // the tile's elements, then outputs
    const int lane = int(threadIdx.x) & 31;
    const int threads = int(blockDim.x);
    const int per_lane = threads >> 5;  // threads each lane of warp 0 rakes
    const i64 rows = layout.rows.size;
    for (i64 task = blockIdx.x; task < rows * layout.parts; task += gridDim.x) {
        const ScanTask t = scan_task(x, out, layout, task);
        __syncthreads();  // the previous task is done with carry and prefixes
        if (threadIdx.x == 0 && t.part > 0) *carry = carry_into<Op>(layout, t.row, t.part);
        bool has_carry = t.part > 0;
        for (i64 tile = t.begin; tile < t.end; tile += i64(threads) * ITEMS) {
            const int size = t.end - tile < i64(threads) * ITEMS ? int(t.end - tile)
                                                                 : threads * ITEMS;
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {  // coalesced: element k by thread k % threads
                const int k = j * threads + int(threadIdx.x);
                if (k < size) {
                    staged[staged_at(k)] = Op::load(t.in + (tile + k) * layout.x_step, tile + k);
                }
            }
            __syncthreads();
            const int first = int(threadIdx.x) * ITEMS;
            const int n = size - first <= 0 ? 0 : (size - first < ITEMS ? size - first : ITEMS);
            Value total{};  // threads past the end come last and feed no prefix
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                if (j < n) {
                    const Value item = staged[staged_at(first + j)];
                    total = j == 0 ? item : Op::combine(total, item);
                }
            }
            prefixes[threadIdx.x] = total;
            __syncthreads();
            if (threadIdx.x < 32) {  // raking: lane l turns the totals of its threads into
                Value* mine = prefixes + lane * per_lane;  // their exclusive prefixes
                Value own = mine[0];
                for (int k = 1; k < per_lane; ++k) own = Op::combine(own, mine[k]);
                const Value inclusive = warp_scan<Op>(own, lane);
                const Value before = hx::shfl_up(inclusive, 1u);
                bool has = has_carry;
                Value running = has ? *carry : Value{};
                if (lane > 0) {
                    running = has ? Op::combine(running, before) : before;
                    has = true;
                }
                for (int k = 0; k < per_lane; ++k) {
                    const Value t = mine[k];
                    mine[k] = running;
                    running = has ? Op::combine(running, t) : t;
                    has = true;
                }
            }
            __syncthreads();
            const bool has_prefix = has_carry || threadIdx.x > 0;
            Value acc = prefixes[threadIdx.x];
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {  // each output in place of its element
                if (j < n) {
                    const Value item = staged[staged_at(first + j)];
                    acc = (j == 0 && !has_prefix) ? item : Op::combine(acc, item);
                    staged[staged_at(first + j)] = acc;
                }
            }
            // The last output of the tile carries into the next one; warp 0 reads it after
            // the next tile's barriers.
            if (n > 0 && first + n == size) *carry = acc;
            has_carry = true;
            __syncthreads();
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {  // coalesced, as loaded
                const int k = j * threads + int(threadIdx.x);
                if (k < size) {
                    *reinterpret_cast<Out*>(t.out + (tile + k) * layout.out_step) =
                        Op::result(staged[staged_at(k)]);
                }
            }
            __syncthreads();  // staged is free for the next tile
        }
    }
}

}  // namespace hx
