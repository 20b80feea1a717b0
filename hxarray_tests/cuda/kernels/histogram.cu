// Histogram with shared-memory atomics, merged into global memory with atomicAdd; and one kernel
// exercising every atomic operation on every type CUDA defines it for.
#define BINS 64
extern "C" __global__ void histogram(const unsigned char* data, int n, unsigned int* bins) {
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i] % BINS], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

extern "C" __global__ void atomics(int* i32, unsigned int* u32, long long* i64,
                                   unsigned long long* u64, float* f32, double* f64,
                                   const int* values, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int v = values[t];
    atomicAdd(&i32[0], v);
    atomicSub(&i32[1], v);
    atomicMin(&i32[2], v);
    atomicMax(&i32[3], v);
    atomicAnd(&i32[4], ~(1 << (t % 31)));
    atomicOr(&i32[5], 1 << (t % 31));
    atomicXor(&i32[6], v);
    int old = i32[7], assumed;  // an increment by compare-and-swap: ends at n
    do {
        assumed = old;
        old = atomicCAS(&i32[7], assumed, assumed + 1);
    } while (old != assumed);
    atomicAdd(&u32[0], (unsigned)v);
    atomicMin(&u32[1], (unsigned)v);
    atomicMax(&u32[2], (unsigned)v);
    atomicInc(&u32[3], 1000000u);
    atomicMin(&i64[0], (long long)v * -1000000000LL);
    atomicMin(&i64[1], (long long)v);
    atomicMax(&i64[2], (long long)v);
    atomicAdd(&u64[0], (unsigned long long)v);
    atomicExch(&u64[1], 7ull);
    atomicAdd(&f32[0], 0.5f);
    atomicExch(&f32[1], 1.5f);
    atomicAdd(&f64[0], 0.25);
    atomicAdd(&f64[1], (double)v);
}
