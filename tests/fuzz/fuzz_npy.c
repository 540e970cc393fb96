/*
 * fuzz_npy.c - libFuzzer target for the .npy reader (src/core/npy.c):
 * the preamble, the header dict, the shape against the data's length,
 * byte swapping and the Fortran-to-C transposition.
 *
 * Any input must read or fail cleanly.  An array that reads must be
 * consistent (element count and bytes from its shape), must write, and
 * what was written must read back as the same array, in version 1.0, in
 * host order and C order.  Anything else is a bug and stops the run.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opsched/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    opsched_ctx *ctx = NULL;
    opsched_npy_array a, b;
    void *written = NULL;
    size_t written_size = 0;
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 0;
    if (opsched_npy_read_buffer(ctx, data, size, "fuzz", &a) != OPSCHED_OK) {
        if (a.data || opsched_ctx_last_error(ctx)[0] == '\0') __builtin_trap();
        opsched_ctx_free(ctx);
        return 0;
    }
    int64_t numel = 1;
    for (int i = 0; i < a.ndim; i++) {
        if (a.dims[i] < 0) __builtin_trap();
        numel *= a.dims[i];
    }
    if (!a.data || a.ndim < 0 || a.ndim > OPSCHED_NPY_MAX_DIMS || a.numel != numel ||
        a.nbytes != (size_t)numel * opsched_npy_dtype_size(a.dtype) || a.version < 1 ||
        a.version > 3)
        __builtin_trap();
    if (opsched_npy_write_buffer(ctx, a.dtype, a.ndim, a.dims, a.data, &written, &written_size) !=
            OPSCHED_OK ||
        opsched_npy_read_buffer(ctx, written, written_size, "rewritten", &b) != OPSCHED_OK)
        __builtin_trap();
    if (b.dtype != a.dtype || b.ndim != a.ndim || b.numel != a.numel || b.nbytes != a.nbytes ||
        memcmp(b.dims, a.dims, sizeof(int64_t) * (size_t)a.ndim) != 0 ||
        (a.nbytes && memcmp(b.data, a.data, a.nbytes) != 0) || b.version != 1 || b.swapped ||
        b.fortran)
        __builtin_trap();
    opsched_npy_array_clear(&b);
    opsched_npy_array_clear(&a);
    free(written);
    opsched_ctx_free(ctx);
    return 0;
}
