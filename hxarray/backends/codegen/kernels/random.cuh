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

#ifdef HX_RNG_HOST
// The CPU's loop (codegen/random.py's host_source defines HX_RNG_HOST; NVRTC never sees this).
// Elements [begin, end), a chunk at a time: the Philox blocks of the chunk's words into a buffer,
// HX_RNG_MIX independent blocks per step (`philox_mix`: some on the scalar 128-bit product
// unit, the others four in the lanes of a vector, interleaved by round, so that both kinds of
// unit are busy: one block at a time waits on the product unit), then the transform over the
// chunk reading its words from the buffer, a loop without branches that the compiler vectorises.
#define HX_RNG_CHUNK 1024

#if defined(__AVX2__)
}  // namespace rng
}  // namespace hx
#include <immintrin.h>
namespace hx {
namespace rng {
typedef __m256i u64x4;
static inline u64x4 v4_set(u64 a, u64 b, u64 c, u64 d) {
    return _mm256_setr_epi64x(i64(a), i64(b), i64(c), i64(d));
}
static inline u64x4 v4_xor(u64x4 a, u64x4 b) { return _mm256_xor_si256(a, b); }
static inline u64x4 v4_xor(u64x4 a, u64 b) { return _mm256_xor_si256(a, _mm256_set1_epi64x(i64(b))); }
// 64 x 64-bit products from AVX2's 32 x 32 -> 64-bit ones (no 64-bit vector product before
// AVX-512): a = ah 2**32 + al, b = bh 2**32 + bl
static inline u64x4 v4_mulhi(u64x4 a, u64 b) {
    const u64x4 m32 = _mm256_set1_epi64x(0xFFFFFFFFLL);
    const u64x4 bl = _mm256_set1_epi64x(i64(b & 0xFFFFFFFFULL)), bh = _mm256_set1_epi64x(i64(b >> 32));
    const u64x4 ah = _mm256_srli_epi64(a, 32);
    const u64x4 ll = _mm256_mul_epu32(a, bl), lh = _mm256_mul_epu32(a, bh);
    const u64x4 hl = _mm256_mul_epu32(ah, bl), hh = _mm256_mul_epu32(ah, bh);
    const u64x4 t = _mm256_add_epi64(hl, _mm256_srli_epi64(ll, 32));  // below 2**64: no carry lost
    const u64x4 u = _mm256_add_epi64(_mm256_and_si256(t, m32), lh);
    return _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(t, 32)), _mm256_srli_epi64(u, 32));
}
static inline u64x4 v4_mullo(u64x4 a, u64 b) {
    const u64x4 bl = _mm256_set1_epi64x(i64(b & 0xFFFFFFFFULL)), bh = _mm256_set1_epi64x(i64(b >> 32));
    const u64x4 cross = _mm256_add_epi64(_mm256_mul_epu32(a, bh),
                                      _mm256_mul_epu32(_mm256_srli_epi64(a, 32), bl));
    return _mm256_add_epi64(_mm256_mul_epu32(a, bl), _mm256_slli_epi64(cross, 32));
}
// four blocks' words x_d (lane j: block j) to out[4 j + d]
static inline void v4_store_blocks(u64* out, u64x4 x0, u64x4 x1, u64x4 x2, u64x4 x3) {
    const u64x4 t0 = _mm256_unpacklo_epi64(x0, x1), t1 = _mm256_unpackhi_epi64(x0, x1);
    const u64x4 t2 = _mm256_unpacklo_epi64(x2, x3), t3 = _mm256_unpackhi_epi64(x2, x3);
    _mm256_storeu_si256(reinterpret_cast<u64x4*>(out), _mm256_permute2x128_si256(t0, t2, 0x20));
    _mm256_storeu_si256(reinterpret_cast<u64x4*>(out + 4), _mm256_permute2x128_si256(t1, t3, 0x20));
    _mm256_storeu_si256(reinterpret_cast<u64x4*>(out + 8), _mm256_permute2x128_si256(t0, t2, 0x31));
    _mm256_storeu_si256(reinterpret_cast<u64x4*>(out + 12), _mm256_permute2x128_si256(t1, t3, 0x31));
}
#else
// without AVX2: the same operations lane by lane (the compiler's generic vectors)
typedef u64 u64x4 __attribute__((vector_size(32)));
static inline u64x4 v4_set(u64 a, u64 b, u64 c, u64 d) { return u64x4{a, b, c, d}; }
static inline u64x4 v4_xor(u64x4 a, u64x4 b) { return a ^ b; }
static inline u64x4 v4_xor(u64x4 a, u64 b) { return a ^ b; }
static inline u64x4 v4_mulhi(u64x4 a, u64 b) {
    return u64x4{__umul64hi(a[0], b), __umul64hi(a[1], b), __umul64hi(a[2], b), __umul64hi(a[3], b)};
}
static inline u64x4 v4_mullo(u64x4 a, u64 b) { return a * b; }
static inline void v4_store_blocks(u64* out, u64x4 x0, u64x4 x1, u64x4 x2, u64x4 x3) {
    for (int j = 0; j < 4; ++j) {
        out[4 * j] = x0[j]; out[4 * j + 1] = x1[j]; out[4 * j + 2] = x2[j]; out[4 * j + 3] = x3[j];
    }
}
#endif

static inline void philox_mix(const u64* c, u64 k0, u64 k1, u64* out);  // generated

// the 256-bit counter of block b of the call (the call's counter + b, carried through the limbs)
static inline void counter_of(const u64* args, u64 b, u64* c) {
    u64 carry = b;
    for (int d = 0; d < 4; ++d) {
        c[d] = args[2 + d] + carry;
        carry = c[d] < carry ? 1 : 0;
    }
}

// the words of the call's blocks [b, b + count), 4 per block, to w
static inline void blocks(const u64* args, u64 b, u64 count, u64* w) {
    u64 c[4 * HX_RNG_MIX];
    u64 i = 0;
    for (; i + HX_RNG_MIX <= count; i += HX_RNG_MIX) {
        for (int j = 0; j < HX_RNG_MIX; ++j) counter_of(args, b + i + j, c + 4 * j);
        philox_mix(c, args[0], args[1], w + 4 * i);
    }
    for (; i < count; ++i) {
        counter_of(args, b + i, c);
        philox(c[0], c[1], c[2], c[3], args[0], args[1], w + 4 * i);
    }
}

struct Buffer {
    const u64* w;  // word `first` of the call
    u64 first;
    u64 operator()(u64 j) const { return w[j - first]; }
};

template <typename E>
inline void fill_range(void* out, i64 begin, i64 end, const u64* args) {
    typename E::T* o = static_cast<typename E::T*>(out);
    u64 buffer[HX_RNG_CHUNK * E::per / E::shared + 4 * HX_RNG_MIX + 8];
    const u64 p0 = args[7], p1 = args[8];
    for (i64 start = begin; start < end; start += HX_RNG_CHUNK) {
        const i64 stop = start + HX_RNG_CHUNK < end ? start + HX_RNG_CHUNK : end;
        const u64 first = u64(start) * E::per / E::shared;
        const u64 last = (u64(stop) * E::per + E::shared - 1) / E::shared;
        const u64 at = args[6] + first;  // the absolute word: block at / 4, lane at % 4
        blocks(args, at >> 2, ((args[6] + last - 1) >> 2) - (at >> 2) + 1, buffer);
        const Buffer from = {buffer + (at & 3), first};
        for (i64 i = start; i < stop; ++i) o[i] = E::at(from, u64(i), p0, p1);
    }
}
#endif  // HX_RNG_HOST

}  // namespace rng
}  // namespace hx
