/*
 * error.h - internal error and logging helpers shared by every module.
 *
 * os_fail() records a message (and the source location) on the context and
 * returns the status, so a failing path reads `return OS_FAIL(ctx, ...)`.
 * OS_TRY forwards a failure unchanged; OS_TRY_GOTO sends it to a function's
 * single cleanup label.
 */
#ifndef OS_CORE_ERROR_H
#define OS_CORE_ERROR_H

#include <stdarg.h>

#include "opsched/core.h"

#if defined(__GNUC__)
#define OS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define OS_PRINTF(a, b)
#endif

opsched_status os_fail(opsched_ctx *ctx, opsched_status status, const char *file, int line,
                       const char *fmt, ...) OS_PRINTF(5, 6);
void os_log(opsched_ctx *ctx, opsched_log_level level, const char *fmt, ...) OS_PRINTF(3, 4);
/* Where the last failure was recorded ("src/x.c:12"), or "". */
const char *os_ctx_where(const opsched_ctx *ctx);

#define OS_FAIL(ctx, status, ...) os_fail((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)
#define OS_NOMEM(ctx) OS_FAIL((ctx), OPSCHED_ERR_NOMEM, "out of host memory")

#define OS_TRY(expr)                                                                   \
    do {                                                                               \
        opsched_status os_try_st_ = (expr);                                            \
        if (os_try_st_ != OPSCHED_OK) return os_try_st_;                               \
    } while (0)

#define OS_TRY_GOTO(st, expr, label)                                                   \
    do {                                                                               \
        (st) = (expr);                                                                 \
        if ((st) != OPSCHED_OK) goto label;                                            \
    } while (0)

#endif /* OS_CORE_ERROR_H */
