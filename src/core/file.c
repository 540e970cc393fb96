/*
 * file.c - the one way the library opens a file it reads.
 *
 * open() of a FIFO blocks until a writer appears, and reading a character
 * device may never end, so the type is checked with stat() before the
 * open, and again with fstat() on the descriptor (the name may have been
 * replaced in between); the open itself is non-blocking, so even a FIFO
 * swapped in at that moment cannot hang it.
 *
 * Files the library writes whole (os_file_write_atomic) go to a temporary
 * name beside the target and are renamed over it once on disk, so a
 * failure, a full disk or a crash never leaves a truncated file under the
 * name asked for.
 */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "a special file";
}

static opsched_status refuse(opsched_ctx *ctx, const char *path, const char *what, mode_t m)
{
    return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: the %s is %s, not a regular file", path, what,
                   kind_of(m));
}

opsched_status os_file_open_regular(opsched_ctx *ctx, const char *path, const char *what, int *fd,
                                    int64_t *size)
{
    struct stat sb;
    *fd = -1;
    if (size) *size = 0;
    if (!what) what = "file";
    if (!path || !*path) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "no %s path given", what);
    if (stat(path, &sb) != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot open the %s: %s", path, what,
                       strerror(errno));
    if (!S_ISREG(sb.st_mode)) return refuse(ctx, path, what, sb.st_mode);
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot open the %s: %s", path, what,
                       strerror(errno));
    if (fstat(f, &sb) != 0) {
        int e = errno;
        close(f);
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot stat the %s: %s", path, what, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return refuse(ctx, path, what, sb.st_mode);
    }
    int flags = fcntl(f, F_GETFL);
    if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(f);
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot open the %s: %s", path, what, strerror(e));
    }
    *fd = f;
    if (size) *size = (int64_t)sb.st_size;
    return OPSCHED_OK;
}

static opsched_status too_large(opsched_ctx *ctx, const char *path, const char *what, size_t max)
{
    return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: the %s is larger than the %zu bytes it may have", path,
                   what, max);
}

opsched_status os_file_read(opsched_ctx *ctx, const char *path, const char *what, size_t max,
                            char **out, size_t *size)
{
    opsched_status st = OPSCHED_OK;
    int64_t len64 = 0;
    int fd = -1;
    char *buf = NULL;
    *out = NULL;
    *size = 0;
    if (!what) what = "file";
    if (max > SIZE_MAX / 2) max = SIZE_MAX / 2;
    OS_TRY(os_file_open_regular(ctx, path, what, &fd, &len64));
    if (len64 < 0 || (uint64_t)len64 > max) {
        st = too_large(ctx, path, what, max);
        goto done;
    }
    /* The size is a hint: the file may change while it is read (and files
     * such as those in /proc say 0), so reading goes on to the end. */
    size_t cap = (size_t)len64 + 1, len = 0;
    if (cap < 256) cap = 256;
    if (cap > max + 1) cap = max + 1;
    buf = malloc(cap);
    if (!buf) {
        st = OS_NOMEM(ctx);
        goto done;
    }
    for (;;) {
        if (len + 1 == cap) {
            /* Full: one more byte decides between the end (the usual
             * case, the file being as long as fstat said) and growing. */
            char extra;
            ssize_t r;
            do
                r = read(fd, &extra, 1);
            while (r < 0 && errno == EINTR);
            if (r < 0) {
                st = OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot read the %s: %s", path, what,
                             strerror(errno));
                goto done;
            }
            if (r == 0) break;
            if (len >= max) {
                st = too_large(ctx, path, what, max);
                goto done;
            }
            size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
            char *p = realloc(buf, ncap);
            if (!p) {
                st = OS_NOMEM(ctx);
                goto done;
            }
            buf = p;
            cap = ncap;
            buf[len++] = extra;
            continue;
        }
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot read the %s: %s", path, what,
                         strerror(errno));
            goto done;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    *out = buf;
    *size = len;
    buf = NULL;
done:
    free(buf);
    if (fd >= 0) close(fd);
    return st;
}

opsched_status os_read_file(opsched_ctx *ctx, const char *path, char **out, size_t *size)
{
    return os_file_read(ctx, path, "file", OS_FILE_MAX_DEFAULT, out, size);
}

/* Temporary names: the process id and a counter; O_EXCL settles a clash
 * with another process's file or an old leftover, by taking the next. */
static atomic_uint tmp_counter;

static opsched_status write_all(int fd, const void *data, size_t size)
{
    const char *p = data;
    while (size > 0) {
        size_t chunk = size > ((size_t)1 << 30) ? (size_t)1 << 30 : size;
        ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return OPSCHED_ERR_IO;
        if (w == 0) {
            errno = EIO;
            return OPSCHED_ERR_IO;
        }
        p += w;
        size -= (size_t)w;
    }
    return OPSCHED_OK;
}

/* Flushes the folder holding path, so that the rename itself is on disk;
 * where the file system cannot, the file is written all the same. */
static void sync_parent(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, sizeof(dir), ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof(dir)) return;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

opsched_status os_file_write_atomic(opsched_ctx *ctx, const char *path, const char *what,
                                    const void *const *parts, const size_t *sizes, int n)
{
    struct stat sb;
    char tmp[4096];
    int fd = -1;
    if (!what) what = "file";
    if (!path || !*path) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "no %s path given", what);
    if (n < 0 || (n > 0 && (!parts || !sizes)))
        return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "%s: nothing to write", path);
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) return refuse(ctx, path, what, sb.st_mode);
    for (int tries = 0; fd < 0; tries++) {
        unsigned k = atomic_fetch_add(&tmp_counter, 1u);
        int len = snprintf(tmp, sizeof(tmp), "%s.tmp-%ld-%u", path, (long)getpid(), k);
        if (len < 0 || (size_t)len >= sizeof(tmp))
            return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: the name is too long to write the %s", path,
                           what);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && (errno != EEXIST || tries >= 100))
            return OS_FAIL(ctx, OPSCHED_ERR_IO, "%s: cannot write the %s: %s", path, what,
                           strerror(errno));
    }
    int ok = 1, err = 0;
    for (int i = 0; ok && i < n; i++) {
        if (sizes[i] && !parts[i]) {
            close(fd);
            unlink(tmp);
            return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "%s: part %d of the %s has no data", path,
                           i, what);
        }
        if (sizes[i] && write_all(fd, parts[i], sizes[i]) != OPSCHED_OK) {
            ok = 0;
            err = errno;
        }
    }
    if (ok && fsync(fd) != 0) {
        ok = 0;
        err = errno;
    }
    if (close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        return OS_FAIL(ctx, OPSCHED_ERR_IO,
                       "%s: cannot write the %s: %s (nothing written under that name)", path, what,
                       strerror(err));
    }
    sync_parent(path);
    return OPSCHED_OK;
}
