// Random-number fills: the loops around a generated element transform (codegen/random.py writes
// `hx::rng::philox` and the transform structs, then includes this). Element i of a call reads the
// words its transform asks for by number; word j is lane (lane + j) % 4 of the Philox block at
// counter + (lane + j) / 4. A thread keeps its last block, so consecutive elements of a thread
// compute each block once.
#pragma once

namespace hx {
namespace rng {

// args: k0, k1, c0, c1, c2, c3 (the 256-bit counter, least significant first), lane, p0, p1.
struct Words {
    const u64* args;
    u64 block;
    u64 w[4];
    __device__ explicit Words(const u64* a) : args(a), block(~0ULL) {}
    __device__ u64 operator()(u64 j) {
        const u64 at = args[6] + j, b = at >> 2;
        if (b != block) {
            u64 c[4];
            u64 carry = b;
            for (int d = 0; d < 4; ++d) {  // counter + b, carried through the limbs
                c[d] = args[2 + d] + carry;
                carry = c[d] < carry ? 1 : 0;
            }
            philox(c[0], c[1], c[2], c[3], args[0], args[1], w);
            block = b;
        }
        // selects, not w[at & 3]: an array indexed at run time would live in local memory
        const u64 lane = at & 3;
        return lane == 0 ? w[0] : lane == 1 ? w[1] : lane == 2 ? w[2] : w[3];
    }
};

// A thread fills RNG_RUN consecutive elements per step of a grid-stride loop.
#define HX_RNG_RUN 4

template <typename E>
__global__ void fill(typename E::T* out, i64 n, u64 k0, u64 k1, u64 c0, u64 c1, u64 c2, u64 c3,
                     u64 lane, u64 p0, u64 p1) {
    const u64 args[9] = {k0, k1, c0, c1, c2, c3, lane, p0, p1};
    Words word(args);
    const i64 stride = i64(gridDim.x) * i64(blockDim.x) * HX_RNG_RUN;
    for (i64 base = (i64(blockIdx.x) * i64(blockDim.x) + i64(threadIdx.x)) * HX_RNG_RUN;
         base < n; base += stride) {
        const i64 stop = base + HX_RNG_RUN < n ? base + HX_RNG_RUN : n;
        for (i64 i = base; i < stop; ++i) out[i] = E::at(word, u64(i), p0, p1);
    }
}

// The CPU's loop: elements [begin, end), a chunk at a time: the chunk's words first (each Philox
// block once), then the transform over the chunk reading them from a buffer, a loop without the
// block check that the compiler can vectorise (__device__ only so that NVRTC accepts it).
#define HX_RNG_CHUNK 256

struct Buffer {
    const u64* w;
    u64 first;
    __device__ u64 operator()(u64 j) const { return w[j - first]; }
};

template <typename E>
__device__ inline void fill_range(void* out, i64 begin, i64 end, const u64* args) {
    typename E::T* o = static_cast<typename E::T*>(out);
    Words word(args);
    u64 buffer[HX_RNG_CHUNK * E::per / E::shared + 1];
    for (i64 start = begin; start < end; start += HX_RNG_CHUNK) {
        const i64 stop = start + HX_RNG_CHUNK < end ? start + HX_RNG_CHUNK : end;
        const u64 first = u64(start) * E::per / E::shared;
        const u64 last = (u64(stop) * E::per + E::shared - 1) / E::shared;
        for (u64 j = first; j < last; ++j) buffer[j - first] = word(j);
        const Buffer from = {buffer, first};
        for (i64 i = start; i < stop; ++i) o[i] = E::at(from, u64(i), args[7], args[8]);
    }
}

}  // namespace rng
}  // namespace hx
