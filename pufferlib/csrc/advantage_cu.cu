// advantage_cu.cu: the puffer advantage (GAE and V-trace as one recursion) on a CUDA device.
//
// setup.py compiles this with nvcc into a plain shared library inside the package (no Python or
// torch headers, so it builds against any torch); pufferlib.advantage loads it with ctypes and
// passes device pointers of contiguous float32 tensors plus torch's current stream. The recursion
// is sequential in time, so the parallelism is over segments: one thread walks one segment
// backwards. Same arithmetic, in the same order, as the CPU kernel (csrc/advantage.c).
#include <cuda_runtime.h>

__global__ void puffer_advantage_kernel(const float* __restrict__ values, const float* __restrict__ rewards,
                                        const float* __restrict__ dones, const float* __restrict__ importance,
                                        const float* __restrict__ last_values, float* __restrict__ out, int segments,
                                        int horizon, float gamma, float lam, float rho_clip, float c_clip) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= segments) return;
    long long row = (long long)s * horizon;
    float next_value = last_values[s];
    float next_adv = 0.0f;
    // No importance means ratios of 1, which a clip below 1 still scales.
    float rho_one = fminf(1.0f, rho_clip), c_one = fminf(1.0f, c_clip);
    for (int t = horizon - 1; t >= 0; t--) {
        long long i = row + t;
        float not_done = 1.0f - dones[i];
        float rho = rho_one, c = c_one;
        if (importance != nullptr) {
            float w = importance[i];
            rho = w < rho_clip ? w : rho_clip;
            c = w < c_clip ? w : c_clip;
        }
        float delta = rho * (rewards[i] + gamma * next_value * not_done - values[i]);
        next_adv = delta + gamma * lam * c * not_done * next_adv;
        out[i] = next_adv;
        next_value = values[i];
    }
}

extern "C" {

// Launch on `stream` (a cudaStream_t, e.g. torch.cuda.current_stream().cuda_stream); `importance`
// may be NULL for all ratios 1. Returns a cudaError_t (0 on success) of the launch itself; errors inside
// the kernel surface asynchronously, like any CUDA work on that stream.
int puffer_advantage_cuda(const float* values, const float* rewards, const float* dones, const float* importance,
                          const float* last_values, float* out, int segments, int horizon, float gamma, float lam,
                          float rho_clip, float c_clip, void* stream) {
    if (segments <= 0 || horizon <= 0) return 0;
    const int threads = 128;
    int blocks = (segments + threads - 1) / threads;
    puffer_advantage_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(
        values, rewards, dones, importance, last_values, out, segments, horizon, gamma, lam, rho_clip, c_clip);
    return (int)cudaGetLastError();
}

const char* puffer_advantage_cuda_error(int code) { return cudaGetErrorString((cudaError_t)code); }

}  // extern "C"
