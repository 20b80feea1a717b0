// Shared-memory tree reduction: one partial sum per block (deterministic).
#define BLOCK 256
extern "C" __global__ void __launch_bounds__(BLOCK) block_sum(const double* x, double* partial,
                                                              int n) {
    __shared__ double cache[BLOCK];
    double v = 0.0;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x) v += x[i];
    cache[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}
