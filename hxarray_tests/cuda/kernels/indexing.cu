// Every built-in index in 3-D, a __device__ global updated atomically, a __constant__ table,
// printf from a kernel, and a templated device function.
__device__ unsigned int launched_threads;
__constant__ int weights[4] = {1, 10, 100, 1000};

template <typename T>
__device__ T linear(T x, T y, T z, T nx, T ny) { return (z * ny + y) * nx + x; }

extern "C" __global__ void where_am_i(int* out) {
    unsigned nx = gridDim.x * blockDim.x, ny = gridDim.y * blockDim.y;
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    unsigned i = linear(x, y, z, nx, ny);
    out[i * 4 + 0] = threadIdx.x * weights[0] + threadIdx.y * weights[1] + threadIdx.z * weights[2];
    out[i * 4 + 1] = blockIdx.x * weights[0] + blockIdx.y * weights[1] + blockIdx.z * weights[2];
    out[i * 4 + 2] = blockDim.x * weights[0] + blockDim.y * weights[1] + blockDim.z * weights[2];
    out[i * 4 + 3] = gridDim.x * weights[0] + gridDim.y * weights[1] + gridDim.z * weights[3];
    atomicAdd(&launched_threads, 1u);
    if (i == 0) printf("hello from thread %u of kernel where_am_i\n", i);
}

extern "C" __global__ void read_counter(unsigned int* out) { out[0] = launched_threads; }
