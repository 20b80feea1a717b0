// A deliberately slow kernel (a long dependent loop) and a copy kernel, for stream ordering.
extern "C" __global__ void slow_fill(float* x, int n, float value, int spin) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < spin; k++) acc = acc * 0.999f + 1.0f;
    x[i] = value + acc * 0.0f;
}

extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
