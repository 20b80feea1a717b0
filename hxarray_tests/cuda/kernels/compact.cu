// Stream compaction with __ballot_sync and __popc: each block keeps the positive values of its
// chunk in order and writes how many it kept.
extern "C" __global__ void compact(const float* in, int n, float* out, int* counts) {
    __shared__ int warp_counts[32];
    __shared__ int warp_offsets[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = i < n ? in[i] : 0.0f;
    bool keep = i < n && v > 0.0f;
    unsigned ballot = __ballot_sync(0xffffffffu, keep);
    int before = __popc(ballot & ((1u << lane) - 1u));
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    if (threadIdx.x == 0) {
        int total = 0;
        for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++) {
            warp_offsets[w] = total;
            total += warp_counts[w];
        }
        counts[blockIdx.x] = total;
    }
    __syncthreads();
    if (keep) out[blockIdx.x * blockDim.x + warp_offsets[warp] + before] = v;
}
