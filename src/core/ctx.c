/*
 * ctx.c - the library context: last error, its location, the log callback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define OS_MSG_MAX 1024

struct opsched_ctx {
    opsched_status last_status;
    char last_error[OS_MSG_MAX];
    char where[128];
    opsched_log_fn log_fn;
    void *log_user;
    opsched_log_level log_level;
};

static const char *const status_names[OPSCHED_STATUS_COUNT] = {
    [OPSCHED_OK] = "ok",
    [OPSCHED_ERR_INVALID_ARG] = "invalid argument",
    [OPSCHED_ERR_NOMEM] = "out of host memory",
    [OPSCHED_ERR_IO] = "I/O error",
    [OPSCHED_ERR_PARSE] = "malformed input",
    [OPSCHED_ERR_SHAPE] = "impossible shape",
    [OPSCHED_ERR_UNSUPPORTED] = "unsupported",
    [OPSCHED_ERR_NOT_FOUND] = "not found",
    [OPSCHED_ERR_BACKEND] = "backend error",
    [OPSCHED_ERR_DEVICE_OOM] = "out of device memory",
    [OPSCHED_ERR_INTERRUPTED] = "interrupted",
    [OPSCHED_ERR_VERSION] = "written by a newer version",
};

const char *opsched_status_str(opsched_status status)
{
    if ((int)status < 0 || status >= OPSCHED_STATUS_COUNT) return "unknown status";
    return status_names[status];
}

const char *opsched_version(void) { return OPSCHED_VERSION_STRING; }

opsched_status opsched_ctx_create(opsched_ctx **out)
{
    if (!out) return OPSCHED_ERR_INVALID_ARG;
    *out = calloc(1, sizeof(**out));
    if (!*out) return OPSCHED_ERR_NOMEM;
    (*out)->log_level = OPSCHED_LOG_WARN;
    return OPSCHED_OK;
}

void opsched_ctx_free(opsched_ctx *ctx) { free(ctx); }

void opsched_ctx_set_log(opsched_ctx *ctx, opsched_log_fn fn, void *user,
                         opsched_log_level max_level)
{
    if (!ctx) return;
    ctx->log_fn = fn;
    ctx->log_user = user;
    ctx->log_level = max_level;
}

const char *opsched_ctx_last_error(const opsched_ctx *ctx)
{
    return ctx ? ctx->last_error : "";
}

opsched_status opsched_ctx_last_status(const opsched_ctx *ctx)
{
    return ctx ? ctx->last_status : OPSCHED_OK;
}

void opsched_ctx_clear_error(opsched_ctx *ctx)
{
    if (!ctx) return;
    ctx->last_status = OPSCHED_OK;
    ctx->last_error[0] = '\0';
    ctx->where[0] = '\0';
}

const char *os_ctx_where(const opsched_ctx *ctx) { return ctx ? ctx->where : ""; }

opsched_status os_fail(opsched_ctx *ctx, opsched_status status, const char *file, int line,
                       const char *fmt, ...)
{
    if (!ctx) return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->last_error, sizeof(ctx->last_error), fmt, ap);
    va_end(ap);
    ctx->last_status = status;
    const char *base = strstr(file, "src/");
    snprintf(ctx->where, sizeof(ctx->where), "%s:%d", base ? base : file, line);
    if (ctx->log_fn && ctx->log_level >= OPSCHED_LOG_DEBUG) {
        char msg[OS_MSG_MAX + 160];
        snprintf(msg, sizeof(msg), "%s (%s, at %s)", ctx->last_error,
                 opsched_status_str(status), ctx->where);
        ctx->log_fn(OPSCHED_LOG_DEBUG, msg, ctx->log_user);
    }
    return status;
}

void os_log(opsched_ctx *ctx, opsched_log_level level, const char *fmt, ...)
{
    if (!ctx || !ctx->log_fn || level > ctx->log_level) return;
    char msg[OS_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ctx->log_fn(level, msg, ctx->log_user);
}
