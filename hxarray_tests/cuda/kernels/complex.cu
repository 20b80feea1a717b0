// Complex arithmetic through CuPy's complex.cuh: the same source on a GPU and the simulator.
#include <cupy/complex.cuh>

template <typename T>
__device__ complex<T> formula(complex<T> a, complex<T> b) {
    return a * b + conj(a) / b - exp(a) * T(0.5) + sqrt(b) + complex<T>(abs(a), arg(b));
}

extern "C" __global__ void complex64_ops(const complex<float>* a, const complex<float>* b,
                                         complex<float>* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = formula(a[i], b[i]);
}

extern "C" __global__ void complex128_ops(const complex<double>* a, const complex<double>* b,
                                          complex<double>* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = formula(a[i], b[i]);
}
