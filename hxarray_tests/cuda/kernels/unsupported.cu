// Inline PTX: valid CUDA that the simulator must refuse at compile time.
extern "C" __global__ void lane_id(unsigned* out) {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[threadIdx.x] = lane;
}
