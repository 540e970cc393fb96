/*
 * outfile.c - output files written whole or not at all (opsched/core.h).
 *
 * The temporary lies in the target's own directory, so the rename that
 * publishes it never crosses file systems and is atomic; the directory is
 * synced after it, so the new name survives a power cut once commit
 * returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "opsched/core.h"

#define MAX_LINKS 40

/* The directory part of path ("." when none) into dir. */
static void dir_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* Follows symbolic links from path to the name that is really written
 * (which need not exist yet) into out. */
static opsched_status resolve(opsched_ctx *ctx, const char *path, const char *what, int flags,
                              char *out, size_t n)
{
    char cur[4096];
    if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur))
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: the %s's name is too long", path, what);
    for (int hops = 0;; hops++) {
        struct stat sb;
        if (lstat(cur, &sb) != 0) {
            if (errno != ENOENT)
                return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot write the %s: %s", path, what,
                               strerror(errno));
            break; /* a new file */
        }
        if (!S_ISLNK(sb.st_mode)) {
            if (!S_ISREG(sb.st_mode))
                return OS_FAIL(ctx, OPSCHED_ERR_IO,
                               "%s: cannot write the %s there: it is %s, not a regular file",
                               path, what, S_ISDIR(sb.st_mode) ? "a directory" : "a special file");
            if (flags & OPSCHED_OUT_NO_CLOBBER)
                return OS_FAIL(ctx, OPSCHED_ERR_IO,
                               "%s: a file of that name exists; the %s is not written over it "
                               "unless forced",
                               path, what);
            break;
        }
        if (flags & OPSCHED_OUT_NO_SYMLINK)
            return OS_FAIL(ctx, OPSCHED_ERR_IO,
                           "%s: the name is a symbolic link; the %s is not written through it "
                           "unless links are to be followed",
                           path, what);
        if (hops == MAX_LINKS)
            return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: too many levels of symbolic links", path);
        char target[4096];
        ssize_t len = readlink(cur, target, sizeof(target) - 1);
        if (len < 0)
            return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot read the link: %s", cur,
                           strerror(errno));
        target[len] = '\0';
        char next[4096];
        if (target[0] == '/') {
            snprintf(next, sizeof(next), "%s", target);
        } else {
            char dir[4096];
            dir_of(cur, dir, sizeof(dir));
            if (snprintf(next, sizeof(next), "%s/%s", dir, target) >= (int)sizeof(next))
                return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: the link's target's name is too long",
                               path);
        }
        memcpy(cur, next, sizeof(cur));
    }
    if (snprintf(out, n, "%s", cur) >= (int)n)
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: the %s's name is too long", path, what);
    return OPSCHED_OK;
}

/* Copies the existing file at path (if any) into fd. */
static int copy_existing(const char *path, int fd)
{
    int in = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (in < 0) return errno == ENOENT ? 0 : -1;
    char buf[1 << 16];
    ssize_t got;
    int rc = 0;
    while ((got = read(in, buf, sizeof(buf))) != 0) {
        if (got < 0) {
            if (errno == EINTR) continue;
            rc = -1;
            break;
        }
        for (ssize_t off = 0; off < got;) {
            ssize_t put = write(fd, buf + off, (size_t)(got - off));
            if (put < 0) {
                if (errno == EINTR) continue;
                rc = -1;
                break;
            }
            off += put;
        }
        if (rc) break;
    }
    int e = errno;
    close(in);
    errno = e;
    return rc;
}

opsched_status opsched_out_open(opsched_ctx *ctx, const char *path, const char *what, int flags,
                                opsched_out *o)
{
    if (!o) return OPSCHED_ERR_INVALID_ARG;
    memset(o, 0, sizeof(*o));
    if (!what) what = "output";
    snprintf(o->what, sizeof(o->what), "%s", what);
    if (!path || !*path) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "no %s file name", what);
    OS_TRY(resolve(ctx, path, what, flags, o->path, sizeof(o->path)));
    unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL) ^ (unsigned)(uintptr_t)o;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        seed = seed * 1103515245u + 12345u;
        snprintf(o->tmp, sizeof(o->tmp), "%s.tmp.%ld.%06x", o->path, (long)getpid(),
                 (seed >> 8) & 0xffffff);
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        o->tmp[0] = '\0';
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot write the %s beside it: %s", o->path,
                       what, strerror(e));
    }
    if ((flags & OPSCHED_OUT_APPEND) && copy_existing(o->path, fd) != 0) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot copy the %s to extend it: %s", o->path,
                       what, strerror(e));
    }
    if (!(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: %s", o->path, strerror(e));
    }
    if (flags & OPSCHED_OUT_APPEND) fseek(o->f, 0, SEEK_END);
    return OPSCHED_OK;
}

static void sync_dir(const char *path)
{
    char dir[4096];
    dir_of(path, dir, sizeof(dir));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd); /* some file systems refuse: the rename itself is done */
    close(fd);
}

opsched_status opsched_out_commit(opsched_ctx *ctx, opsched_out *o)
{
    if (!o || !o->f) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "no output file is open");
    int ok = fflush(o->f) == 0 && !ferror(o->f) && fsync(fileno(o->f)) == 0;
    int err = ok ? 0 : (errno ? errno : EIO);
    if (fclose(o->f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    o->f = NULL;
    if (ok && rename(o->tmp, o->path) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        unlink(o->tmp);
        o->tmp[0] = '\0';
        return OS_FAIL(ctx, OPSCHED_ERR_IO,
                       "%s: writing the %s failed: %s (nothing was written under that name; "
                       "what was there is unchanged)",
                       o->path, o->what, strerror(err));
    }
    o->tmp[0] = '\0';
    sync_dir(o->path);
    return OPSCHED_OK;
}

void opsched_out_abort(opsched_out *o)
{
    if (!o) return;
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) unlink(o->tmp);
    o->tmp[0] = '\0';
}

opsched_status opsched_out_write(opsched_ctx *ctx, const char *path, const char *what, int flags,
                                 const void *data, size_t len)
{
    opsched_out o;
    OS_TRY(opsched_out_open(ctx, path, what, flags, &o));
    if (len && fwrite(data, 1, len, o.f) != len) {
        int e = errno;
        opsched_out_abort(&o);
        return OS_FAIL(ctx, OPSCHED_ERR_IO,
                       "%s: writing the %s failed: %s (what was there is unchanged)", o.path, what,
                       strerror(e));
    }
    return opsched_out_commit(ctx, &o);
}
