// Inclusive scan of each block with __shfl_up_sync: warps scan, warp totals scanned by warp 0.
extern "C" __global__ void block_scan(const int* in, int* out, int n) {
    __shared__ int warp_totals[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int v = i < n ? in[i] : 0;
    for (int d = 1; d < 32; d <<= 1) {
        int up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    if (lane == 31) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nwarps = (blockDim.x + 31) / 32;
        int t = lane < nwarps ? warp_totals[lane] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            int up = __shfl_up_sync(0xffffffffu, t, d);
            if (lane >= d) t += up;
        }
        warp_totals[lane] = t;
    }
    __syncthreads();
    if (warp > 0) v += warp_totals[warp - 1];
    if (i < n) out[i] = v;
}
