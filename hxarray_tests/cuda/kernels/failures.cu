// Kernels that fail on purpose: the simulator must report each as a KernelError.
extern "C" __global__ void divergent_barrier(int* out) {
    if (threadIdx.x < 16) {
        __syncthreads();
        out[threadIdx.x] = 1;
    } else {
        __syncthreads();
        out[threadIdx.x] = 2;
    }
}

extern "C" __global__ void early_exit_barrier(int* out) {
    if (threadIdx.x >= 16) return;  // legal on Volta+, reported in check mode
    __syncthreads();
    out[threadIdx.x] = 1;
}

extern "C" __global__ void bad_mask(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffffu, v, 1);  // names lanes 16..31
    out[threadIdx.x] = v;
}

extern "C" __global__ void out_of_bounds(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    x[i + n] = 1.0f;  // writes n elements past the end
}

extern "C" __global__ void runaway(volatile int* flag) {
    while (flag[0] == 0) {
    }
}

extern "C" __global__ void trap_kernel(int* x) {
    if (threadIdx.x == 3) __trap();
    x[threadIdx.x] = 1;
}

extern "C" __global__ void assert_kernel(int* x) {
    assert(threadIdx.x != 5);
    x[threadIdx.x] = 1;
}

extern "C" __global__ void divide(int* x, int d) { x[threadIdx.x] = x[threadIdx.x] / d; }

extern "C" __global__ void shared_overrun(float* out) {
    __shared__ float tile[32];
    tile[threadIdx.x] = 1.0f;  // launched with more than 32 threads
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x % 32];
}
