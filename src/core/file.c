/*
 * file.c - the one way the library opens a file it reads.
 *
 * open() of a FIFO blocks until a writer appears, and reading a character
 * device may never end, so the type is checked with stat() before the
 * open, and again with fstat() on the descriptor (the name may have been
 * replaced in between); the open itself is non-blocking, so even a FIFO
 * swapped in at that moment cannot hang it.
 *
 * Files the library writes go through opsched_out (outfile.c).
 */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
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

int os_user_cache_dir(char *buf, size_t size)
{
    const char *env = getenv("OPSCHED_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    int w;
    if (env && *env)
        w = snprintf(buf, size, "%s", env);
    else if (xdg && *xdg)
        w = snprintf(buf, size, "%s/opsched", xdg);
    else if (home && *home)
        w = snprintf(buf, size, "%s/.cache/opsched", home);
    else
        return -1;
    return w < 0 || (size_t)w >= size ? -1 : 0;
}

int os_mkdir_p(const char *dir)
{
    char p[4096];
    if (!dir || !*dir || snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0') continue;
        char keep = *c;
        *c = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
        *c = keep;
        if (!keep) break;
    }
    struct stat st;
    if (stat(p, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}
