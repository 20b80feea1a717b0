// 16x16 tiled GEMM: C (m x n) = A (m x k) @ B (k x n), row-major float.
#define T 16
extern "C" __global__ void gemm(const float* A, const float* B, float* C, int m, int n, int k) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < k; t += T) {
        As[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ?
            A[row * k + t + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < k) ?
            B[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < T; j++) acc = fmaf(As[threadIdx.y][j], Bs[j][threadIdx.x], acc);
        __syncthreads();
    }
    if (row < m && col < n) C[row * n + col] = acc;
}
