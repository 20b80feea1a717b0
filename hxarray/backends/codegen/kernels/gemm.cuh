// Batched matrix products out[b] = a[b] @ b[b] for every dtype: a 64x64 tile of the output per
// block of 256 threads, each thread accumulating a 4x4 micro-tile (rows ty + 16i, columns
// tx + 16j) from 16-deep slices of a and b staged in shared memory. Each output element is the
// sum of its products in order of k from +0, as numpy's own (non-BLAS) loop: integers wrap, bool
// is an or of ands, complex numbers use numpy's product, and floating-point products and sums are
// rounded one by one (never contracted to fused multiply-adds), so a GPU and the simulator give
// the same bits. Every operand has byte strides of its own (rows, columns, and up to HX_MAX_DIMS
// collapsed batch axes, 0 where broadcast); elements past the matrices' edges load as zeros.
#pragma once
#include "hxarray.cuh"

namespace hx {

struct GemmLayout {
    Shape batch;               // the batch axes (size: the number of products)
    Strides a_batch, b_batch, out_batch;
    i64 m, n, k;
    i64 a_row, a_col, b_row, b_col, out_row, out_col;  // bytes
};

#define HX_GEMM_BM 64
#define HX_GEMM_BN 64
#define HX_GEMM_BK 16
#define HX_GEMM_THREADS 256

template <typename T>
__device__ __forceinline__ T gemm_load(const char* base, i64 row, i64 col, i64 rows, i64 cols,
                                       i64 row_step, i64 col_step) {
    if (row < rows && col < cols) {
        return *reinterpret_cast<const T*>(base + row * row_step + col * col_step);
    }
    return T(0);
}

// acc + a * b, each operation rounded on its own.
__device__ __forceinline__ f32 gemm_step(f32 acc, f32 a, f32 b) {
    return __fadd_rn(acc, __fmul_rn(a, b));
}
__device__ __forceinline__ f64 gemm_step(f64 acc, f64 a, f64 b) {
    return __dadd_rn(acc, __dmul_rn(a, b));
}
__device__ __forceinline__ c64 gemm_step(c64 acc, c64 a, c64 b) {
    return c64(__fadd_rn(acc.real(), __fsub_rn(__fmul_rn(a.real(), b.real()),
                                               __fmul_rn(a.imag(), b.imag()))),
               __fadd_rn(acc.imag(), __fadd_rn(__fmul_rn(a.real(), b.imag()),
                                               __fmul_rn(a.imag(), b.real()))));
}
__device__ __forceinline__ c128 gemm_step(c128 acc, c128 a, c128 b) {
    return c128(__dadd_rn(acc.real(), __dsub_rn(__dmul_rn(a.real(), b.real()),
                                                __dmul_rn(a.imag(), b.imag()))),
                __dadd_rn(acc.imag(), __dadd_rn(__dmul_rn(a.real(), b.imag()),
                                                __dmul_rn(a.imag(), b.real()))));
}
template <typename T> __device__ __forceinline__ T gemm_step(T acc, T a, T b) {
    return ops::add(acc, ops::multiply(a, b));
}

// V: the type products are summed in (float for float16, as numpy's loop; rounded once).
template <typename T, typename V = T>
__global__ void __launch_bounds__(HX_GEMM_THREADS) gemm(const char* a, const char* b, char* out,
                                                          GemmLayout layout) {
    // Raw storage: complex types have constructors, which __shared__ variables may not run.
    __shared__ __align__(16) unsigned char a_raw[HX_GEMM_BK * HX_GEMM_BM * sizeof(T)];
    __shared__ __align__(16) unsigned char b_raw[HX_GEMM_BK * HX_GEMM_BN * sizeof(T)];
    T* a_tile = reinterpret_cast<T*>(a_raw);  // [k][row]
    T* b_tile = reinterpret_cast<T*>(b_raw);  // [k][col]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const i64 tiles_m = (layout.m + HX_GEMM_BM - 1) / HX_GEMM_BM;
    const i64 tiles_n = (layout.n + HX_GEMM_BN - 1) / HX_GEMM_BN;
    for (i64 batch = blockIdx.z; batch < layout.batch.size; batch += gridDim.z) {
        const char* a_base = a + offset_of(batch, layout.batch, layout.a_batch);
        const char* b_base = b + offset_of(batch, layout.batch, layout.b_batch);
        char* out_base = out + offset_of(batch, layout.batch, layout.out_batch);
        for (i64 tile_m = blockIdx.y; tile_m < tiles_m; tile_m += gridDim.y) {
            for (i64 tile_n = blockIdx.x; tile_n < tiles_n; tile_n += gridDim.x) {
                const i64 row0 = tile_m * HX_GEMM_BM, col0 = tile_n * HX_GEMM_BN;
                V acc[4][4];
                for (int i = 0; i < 4; ++i) {
                    for (int j = 0; j < 4; ++j) acc[i][j] = V(0);
                }
                for (i64 k0 = 0; k0 < layout.k; k0 += HX_GEMM_BK) {
                    // consecutive threads read consecutive k of a row of a, and consecutive
                    // columns of a row of b
                    for (int e = threadIdx.x; e < HX_GEMM_BM * HX_GEMM_BK; e += HX_GEMM_THREADS) {
                        const int r = e / HX_GEMM_BK, c = e % HX_GEMM_BK;
                        a_tile[c * HX_GEMM_BM + r] = gemm_load<T>(
                            a_base, row0 + r, k0 + c, layout.m, layout.k, layout.a_row,
                            layout.a_col);
                    }
                    for (int e = threadIdx.x; e < HX_GEMM_BK * HX_GEMM_BN; e += HX_GEMM_THREADS) {
                        const int r = e / HX_GEMM_BN, c = e % HX_GEMM_BN;
                        b_tile[r * HX_GEMM_BN + c] = gemm_load<T>(
                            b_base, k0 + r, col0 + c, layout.k, layout.n, layout.b_row,
                            layout.b_col);
                    }
                    __syncthreads();
                    for (int kk = 0; kk < HX_GEMM_BK; ++kk) {
                        T av[4], bv[4];
                        for (int i = 0; i < 4; ++i) av[i] = a_tile[kk * HX_GEMM_BM + ty + 16 * i];
                        for (int j = 0; j < 4; ++j) bv[j] = b_tile[kk * HX_GEMM_BN + tx + 16 * j];
                        for (int i = 0; i < 4; ++i) {
                            for (int j = 0; j < 4; ++j) {
                                acc[i][j] = gemm_step(acc[i][j], cast<V>(av[i]),
                                                      cast<V>(bv[j]));
                            }
                        }
                    }
                    __syncthreads();
                }
                for (int i = 0; i < 4; ++i) {
                    const i64 row = row0 + ty + 16 * i;
                    if (row >= layout.m) break;
                    for (int j = 0; j < 4; ++j) {
                        const i64 col = col0 + tx + 16 * j;
                        if (col >= layout.n) break;
                        *reinterpret_cast<T*>(out_base + row * layout.out_row +
                                              col * layout.out_col) = cast<T>(acc[i][j]);
                    }
                }
            }
        }
    }
}

}  // namespace hx
