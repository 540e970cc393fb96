/*
 * npy_tool.c - a test driver of opsched/npy.h for tests/npy_numpy.py,
 * which checks it against NumPy itself.
 *
 *   npy_tool dump FILE...        one line per file: "ok DTYPE DIMS HEX" (DIMS
 *                                comma-separated, "-" for a scalar; HEX the
 *                                data as read, host byte order, C order) or
 *                                "error STATUS MESSAGE"
 *   npy_tool copy IN OUT [IN OUT]...   reads IN, writes what it read to OUT
 *                                (opsched_npy_write_file); one line per pair
 *                                ("ok" or "error STATUS MESSAGE")
 *
 * Exit status 0 when every line was printed, whatever they say; 2 on a
 * usage error.
 */
#include <stdio.h>
#include <string.h>

#include "opsched/npy.h"

static void error_line(opsched_ctx *ctx, opsched_status st)
{
    printf("error %s %s\n", opsched_status_str(st), opsched_ctx_last_error(ctx));
}

static void dump(opsched_ctx *ctx, const char *path)
{
    opsched_npy_array a;
    opsched_status st = opsched_npy_read_file(ctx, path, &a);
    if (st != OPSCHED_OK) {
        error_line(ctx, st);
        return;
    }
    printf("ok %s ", opsched_npy_dtype_name(a.dtype));
    if (a.ndim == 0) printf("-");
    for (int i = 0; i < a.ndim; i++)
        printf("%s%lld", i ? "," : "", (long long)a.dims[i]);
    printf(" ");
    const unsigned char *p = a.data;
    for (size_t i = 0; i < a.nbytes; i++)
        printf("%02x", p[i]);
    printf("%s\n", a.nbytes ? "" : "-");
    opsched_npy_array_clear(&a);
}

static void copy(opsched_ctx *ctx, const char *in, const char *out)
{
    opsched_npy_array a;
    opsched_status st = opsched_npy_read_file(ctx, in, &a);
    if (st == OPSCHED_OK) st = opsched_npy_write_file(ctx, out, a.dtype, a.ndim, a.dims, a.data);
    if (st == OPSCHED_OK)
        printf("ok\n");
    else
        error_line(ctx, st);
    opsched_npy_array_clear(&a);
}

int main(int argc, char **argv)
{
    opsched_ctx *ctx = NULL;
    if (argc < 2 || (strcmp(argv[1], "dump") != 0 && strcmp(argv[1], "copy") != 0) ||
        (strcmp(argv[1], "copy") == 0 && argc % 2 != 0)) {
        fprintf(stderr, "usage: npy_tool dump FILE... | npy_tool copy IN OUT [IN OUT]...\n");
        return 2;
    }
    if (opsched_ctx_create(&ctx) != OPSCHED_OK) return 1;
    if (strcmp(argv[1], "dump") == 0)
        for (int i = 2; i < argc; i++)
            dump(ctx, argv[i]);
    else
        for (int i = 2; i + 1 < argc; i += 2)
            copy(ctx, argv[i], argv[i + 1]);
    opsched_ctx_free(ctx);
    return fflush(stdout) == 0 ? 0 : 1;
}
