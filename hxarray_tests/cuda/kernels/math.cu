// The CUDA math library and intrinsics: each thread writes one row of results.
#define NF 16
extern "C" __global__ void float_math(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], s, c;
    sincosf(v, &s, &c);
    float* o = out + i * NF;
    o[0] = rsqrtf(v);
    o[1] = fmaf(v, 2.0f, 1.0f);
    o[2] = s;
    o[3] = c;
    o[4] = __expf(v);
    o[5] = __logf(v);
    o[6] = __int_as_float(__float_as_int(v) + 1);
    o[7] = (float)__popc(__float_as_uint(v));
    o[8] = __ldg(&x[i]) * 3.0f;
    o[9] = cbrtf(v) + erff(v) + tgammaf(v) + log1pf(v) + expm1f(v);
    o[10] = __saturatef(v - 1.0f);
    o[11] = (float)__clz(__float_as_int(v));
    o[12] = hypotf(v, 1.0f) + atan2f(v, 2.0f);
    o[13] = min(v, 2.0f) + max(v, 2.0f);
    o[14] = __fdividef(1.0f, v) + sqrtf(v) + powf(v, 1.5f);
    o[15] = (float)__float2int_rn(v * 10.0f);
}

extern "C" __global__ void double_math(const double* x, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i], s, c;
    sincos(v, &s, &c);
    double* o = out + i * 6;
    o[0] = rsqrt(v);
    o[1] = fma(v, v, -1.0);
    o[2] = s * c;
    o[3] = __longlong_as_double(__double_as_longlong(v) ^ (1LL << 63));
    o[4] = exp(v) + log(v) + tanh(v);
    o[5] = (double)__double2hiint(v);
}
