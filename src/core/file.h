/*
 * file.h - opening the files the library reads (models, sweep specs,
 * schedules, ONNX external data, shipped data, .npy tensors): regular files
 * only, never blocking on a FIFO or a device, and never more than a stated
 * size; and writing a file whole or not at all.
 */
#ifndef OS_CORE_FILE_H
#define OS_CORE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "opsched/core.h"

/* The most os_read_file reads: above every file the library reads whole
 * except models (the shipped measurements are tens of MB). */
#define OS_FILE_MAX_DEFAULT ((size_t)1 << 30)
/* A model file: protobuf messages stop at 2 GiB; larger models keep their
 * weights in external data. */
#define OS_FILE_MAX_MODEL (((size_t)1 << 31) - 1)
/* A sweep spec or a schedule: text written by hand or by opsched, far
 * below these for any real network. */
#define OS_FILE_MAX_SPEC ((size_t)16 << 20)
#define OS_FILE_MAX_SCHEDULE ((size_t)256 << 20)

/* Opens path for reading when it is a regular file (a symbolic link to one
 * is fine).  A directory, FIFO, device or socket is refused with
 * OPSCHED_ERR_IO and a message naming path, what it is and `what` the
 * caller wanted ("model", "sweep spec", ...), without blocking on it.  The
 * descriptor (*fd, -1 on failure; the caller closes it) is close-on-exec
 * and blocking; *size, when not NULL, gets the file's size. */
opsched_status os_file_open_regular(opsched_ctx *ctx, const char *path, const char *what, int *fd,
                                    int64_t *size);

/* Reads the whole regular file at path into a new malloc'd buffer
 * (NUL-terminated; *size excludes the NUL).  A file of more than max bytes
 * is refused with OPSCHED_ERR_IO before anything is allocated for it. */
opsched_status os_file_read(opsched_ctx *ctx, const char *path, const char *what, size_t max,
                            char **out, size_t *size);

/* os_file_read of a "file" of at most OS_FILE_MAX_DEFAULT bytes. */
opsched_status os_read_file(opsched_ctx *ctx, const char *path, char **out, size_t *size);

/* The user's cache directory for opsched (the shipped data's databases,
 * the CUDA backend's plan store): $OPSCHED_CACHE_DIR, else
 * $XDG_CACHE_HOME/opsched, else $HOME/.cache/opsched.  0 with it in buf;
 * -1 when none of them is set or it does not fit.  Makes nothing. */
int os_user_cache_dir(char *buf, size_t size);

/* mkdir -p: 0 when dir is a directory afterwards; -1 with errno set
 * otherwise (ENOTDIR when a part of it is something else). */
int os_mkdir_p(const char *dir);

#endif /* OS_CORE_FILE_H */
