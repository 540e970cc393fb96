/*
 * kernels_launch.cuh - how every own kernel is launched and how it begins:
 * programmatic dependent launch (PDL, sm_90 and later).
 *
 * A launch made with cudaLaunchAttributeProgrammaticStreamSerialization
 * may start before the kernel ahead of it in the stream has finished: its
 * blocks are scheduled once every block of the one ahead has begun (or
 * exited), and wait at `griddepcontrol.wait` until that grid has completed
 * and its memory is visible.  In a CUDA graph the launch becomes a
 * programmatic edge; the gap between two dependent kernels (their launch
 * and ramp, a few microseconds at batch 1) is hidden behind the tail of
 * the first.
 *
 * The contract that makes this safe: every __global__ function of the
 * backend begins with cuk_kernel_enter(), before any load or store, and
 * every launch goes through cuk_launch().  A kernel that reads nothing
 * before the wait cannot see a half-written input, whatever launched
 * ahead of it (own kernels, cuBLAS, cuDNN, copies); libraries' kernels are
 * launched without the attribute and keep their full dependency.
 * tests/cuda_launch_lint.sh checks the contract on the sources.
 *
 * Whether launches carry the attribute is the calling thread's setting
 * (cuk_set_pdl): the backend turns it on around a plan's planning and
 * launch where the device has sm_90 and the plan's options allow it
 * (--ablate pdl turns it off).  Off, cuk_launch is an ordinary launch and
 * the wait is a no-op.
 */
#ifndef OS_CUDA_KERNELS_LAUNCH_CUH
#define OS_CUDA_KERNELS_LAUNCH_CUH

#include <utility>

#include <cuda_runtime.h>

#include "backend/cuda/kernels.h"

/* What every own kernel does first: wait for the grids it depends on, then
 * let the next launch's blocks be scheduled as this grid's finish. */
__device__ __forceinline__ void cuk_kernel_enter()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* A launch's configuration, with the programmatic attribute (in *attr)
 * where the calling thread's setting asks for it. */
static inline cudaLaunchConfig_t cuk_launch_config(dim3 grid, dim3 block, size_t shared,
                                                   cudaStream_t stream, cudaLaunchAttribute *attr)
{
    attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr->val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = shared;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = cuk_pdl_now() ? 1 : 0;
    return cfg;
}

/* kernel<<<grid, block, shared, stream>>>(args...), programmatic where the
 * thread's setting asks for it.  The arguments are converted to the
 * kernel's parameter types as <<<>>> converts them. */
template <typename... KArgs, typename... Args>
static inline cudaError_t cuk_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t shared,
                                     cudaStream_t stream, Args &&...args)
{
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = cuk_launch_config(grid, block, shared, stream, &attr);
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

/* The same for a kernel chosen at run time, the addresses of its arguments
 * in args (cudaLaunchKernel's form). */
static inline cudaError_t cuk_launch_args(const void *kernel, dim3 grid, dim3 block, size_t shared,
                                          cudaStream_t stream, void **args)
{
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = cuk_launch_config(grid, block, shared, stream, &attr);
    return cudaLaunchKernelExC(&cfg, kernel, args);
}

#endif
