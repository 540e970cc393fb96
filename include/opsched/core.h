/*
 * opsched/core.h - status codes, the library context, logging.
 *
 * Every fallible function of libopsched returns an opsched_status and writes
 * its results through out-parameters that come last.  On failure the context
 * it was given keeps a message naming what went wrong (and, for a failed
 * vendor call, the file:line of that call); opsched_ctx_last_error() returns
 * it.  The library never prints, exits or aborts: diagnostics go through the
 * log callback installed on the context, which is silent by default.
 *
 * Ownership: objects come in create/free pairs; every *_free accepts NULL.
 * A context must outlive every object created with it.  A context is not
 * thread-safe: use one per thread.
 */
#ifndef OPSCHED_CORE_H
#define OPSCHED_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPSCHED_VERSION_MAJOR 0
#define OPSCHED_VERSION_MINOR 1
#define OPSCHED_VERSION_PATCH 0
#define OPSCHED_VERSION_STRING "0.1.0"

typedef enum opsched_status {
    OPSCHED_OK = 0,
    OPSCHED_ERR_INVALID_ARG,  /* a bad argument or option from the caller */
    OPSCHED_ERR_NOMEM,        /* host memory exhausted */
    OPSCHED_ERR_IO,           /* a file could not be read or written */
    OPSCHED_ERR_PARSE,        /* a file is truncated, corrupt or not of the expected format */
    OPSCHED_ERR_SHAPE,        /* shapes that cannot work together */
    OPSCHED_ERR_UNSUPPORTED,  /* valid, but not something this build can do */
    OPSCHED_ERR_NOT_FOUND,    /* a named model, tensor, device or record does not exist */
    OPSCHED_ERR_BACKEND,      /* a vendor library (CUDA, cuDNN, oneDNN, SQLite...) failed */
    OPSCHED_ERR_DEVICE_OOM,   /* device memory exhausted */
    OPSCHED_ERR_INTERRUPTED,  /* stopped on request (signal); state is consistent */
    OPSCHED_ERR_VERSION,      /* data written by a newer opsched */
    OPSCHED_STATUS_COUNT
} opsched_status;

typedef enum opsched_log_level {
    OPSCHED_LOG_ERROR = 0,
    OPSCHED_LOG_WARN,
    OPSCHED_LOG_INFO,
    OPSCHED_LOG_DEBUG
} opsched_log_level;

/* Receives one formatted message, without a trailing newline. */
typedef void (*opsched_log_fn)(opsched_log_level level, const char *msg, void *user);

typedef struct opsched_ctx opsched_ctx;

/* A short, static name for a status ("invalid argument", ...).  Never NULL. */
const char *opsched_status_str(opsched_status status);

/* The library's version string, e.g. "0.1.0". */
const char *opsched_version(void);

/* Creates a context with logging off.  *out is owned by the caller. */
opsched_status opsched_ctx_create(opsched_ctx **out);
void opsched_ctx_free(opsched_ctx *ctx);

/* Installs a log callback; messages above max_level are dropped.  fn may be
 * NULL to silence the library again.  user is borrowed. */
void opsched_ctx_set_log(opsched_ctx *ctx, opsched_log_fn fn, void *user,
                         opsched_log_level max_level);

/* The message of the most recent failure on this context, or "" if none.
 * Borrowed: valid until the next call that fails on the same context. */
const char *opsched_ctx_last_error(const opsched_ctx *ctx);

/* The status of the most recent failure, or OPSCHED_OK. */
opsched_status opsched_ctx_last_status(const opsched_ctx *ctx);

/* Forgets the last error. */
void opsched_ctx_clear_error(opsched_ctx *ctx);

/* ---- output files, written whole or not at all ------------------------- */

/* Every file opsched writes goes through this: the bytes go to a temporary
 * file in the target's directory, which opsched_out_commit flushes to disk
 * (fsync), renames over the target and makes durable (fsync of the
 * directory).  A failed, interrupted or killed command leaves the old file
 * or none under the name, never a truncated one; opsched_out_abort removes
 * the temporary.  The new file gets mode 0666 less the umask.
 *
 * A name that is a symbolic link is written through: the file it points
 * to is replaced (the temporary lies beside it), the link stays. */
enum {
    OPSCHED_OUT_APPEND = 1 << 0,     /* the temporary starts as a copy of the existing file */
    OPSCHED_OUT_NO_SYMLINK = 1 << 1, /* a symbolic link at the name is refused */
    OPSCHED_OUT_NO_CLOBBER = 1 << 2  /* an existing file at the name is refused (a name
                                      * the user did not give: --force lifts it) */
};

typedef struct opsched_out {
    FILE *f;                       /* write here between open and commit */
    char path[4096];               /* the target, symbolic links resolved */
    char tmp[4160];
    char what[64];
} opsched_out;

/* Opens the temporary for path; what names the file in messages ("trace",
 * "schedule").  Fails with OPSCHED_ERR_IO naming the path: a directory or
 * special file at it, a refused link or existing file (flags), a directory
 * that cannot be written. */
opsched_status opsched_out_open(opsched_ctx *ctx, const char *path, const char *what, int flags,
                                opsched_out *o);
/* Flushes, fsyncs, closes and renames; on failure (a full disk, say) the
 * temporary is removed, the old file stays and the message names the path. */
opsched_status opsched_out_commit(opsched_ctx *ctx, opsched_out *o);
/* Closes and removes the temporary; nothing happens to path.  Safe on an
 * opsched_out that was never opened (zeroed) or already committed. */
void opsched_out_abort(opsched_out *o);
/* The whole of text (len bytes) written to path as above. */
opsched_status opsched_out_write(opsched_ctx *ctx, const char *path, const char *what, int flags,
                                 const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_CORE_H */
