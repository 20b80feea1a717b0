// Warp-shuffle reductions: sum with __shfl_down_sync, max with __shfl_xor_sync (every lane
// ends with the result), one atomicAdd per warp.
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ int warp_max(int v) {
    for (int mask = 16; mask > 0; mask >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, mask));
    return v;
}

extern "C" __global__ void warp_sums(const float* x, float* total, int* maxima, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    int m = i < n ? static_cast<int>(x[i] * 10.0f) : -2147483647 - 1;
    float s = warp_sum(v);
    int mx = warp_max(m);
    int lane = threadIdx.x % warpSize;
    int warp = i / warpSize;
    if (lane == 0) atomicAdd(total, s);
    if (lane == 7) maxima[warp] = mx;
}
