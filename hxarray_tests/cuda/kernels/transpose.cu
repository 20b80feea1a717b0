// Tiled transpose through dynamic shared memory (extern __shared__), TILE x (TILE+1) to avoid
// bank conflicts; two extern __shared__ names alias the same buffer, as on a GPU.
// nvrtc-options: -DTILE=32
#ifndef TILE
#define TILE 32
#endif
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
    extern __shared__ float tile[];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (x < cols && y + j < rows) tile[(threadIdx.y + j) * (TILE + 1) + threadIdx.x] =
            in[(long)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (x < rows && y + j < cols)
            out[(long)(y + j) * rows + x] = tile[threadIdx.x * (TILE + 1) + threadIdx.y + j];
}

extern "C" __global__ void alias_check(int* out) {
    extern __shared__ int first[];
    extern __shared__ unsigned char second[];
    if (threadIdx.x == 0) first[0] = 0x01020304;
    __syncthreads();
    out[threadIdx.x] = second[threadIdx.x];
}
