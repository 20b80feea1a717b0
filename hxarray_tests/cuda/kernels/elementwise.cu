// Grid-stride elementwise kernels: a plain extern "C" one and a template (name expressions).
// name-expressions: axpby<float>, axpby<double>
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y,
                                 long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        y[i] = a * x[i] + y[i];
    }
}

template <typename T>
__global__ void axpby(T a, const T* x, T b, T* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = a * x[i] + b * y[i];
    }
}

extern "C" __global__ void empty() {}
