// Barrier and warp-vote variants: __syncthreads_count/_and/_or, __any_sync, __all_sync,
// __activemask, __syncwarp, sub-warp shuffles with a width, __reduce_add_sync.
extern "C" __global__ void votes(const int* pred, int* out) {
    int t = threadIdx.x;
    int p = pred[blockIdx.x * blockDim.x + t];
    int count = __syncthreads_count(p);
    int all = __syncthreads_and(p);
    int any = __syncthreads_or(p);
    int wany = __any_sync(0xffffffffu, p);
    int wall = __all_sync(0xffffffffu, p);
    unsigned active = __activemask();
    __syncwarp();
    int sub = __shfl_sync(0xffffffffu, t, 0, 8);   // lane 0 of each group of 8
    unsigned wsum = __reduce_add_sync(0xffffffffu, (unsigned)p);
    int* o = out + (blockIdx.x * blockDim.x + t) * 8;
    o[0] = count; o[1] = all; o[2] = any; o[3] = wany; o[4] = wall;
    o[5] = (int)active; o[6] = sub; o[7] = (int)wsum;
}
