/*
 * opsched/npy.h - NumPy .npy files: tensors read and written.
 *
 * Reads the .npy format versions 1.0, 2.0 and 3.0 (the preamble, then a
 * Python dict literal with the keys 'descr', 'fortran_order' and 'shape'),
 * of the dtypes bool ('|b1'), int8/16/32/64, uint8/16/32/64 and float16/32/64,
 * little- or big-endian.  What is read is always in the host's byte order
 * and in C order: big-endian data is byte-swapped, a Fortran-ordered array
 * is transposed to C order (its shape stays the same).
 *
 * Reading is strict: a bad magic, a version other than those three, a
 * header that runs past the end of the data, a dict that is not exactly
 * the three keys with values of their types, a negative dimension, a shape
 * whose element count or byte size overflows, data shorter or longer than
 * the shape says, or a bool byte other than 0 or 1 is OPSCHED_ERR_PARSE;
 * object arrays ('|O'), structured, complex, string, datetime and other
 * dtypes, more than OPSCHED_NPY_MAX_DIMS dimensions and headers longer than
 * OPSCHED_NPY_MAX_HEADER bytes are OPSCHED_ERR_UNSUPPORTED.  Every message
 * names the file (or the buffer's name) and what is wrong with it.
 *
 * Writing produces what numpy.save writes for a C-ordered array in the
 * host's byte order, byte for byte: version 1.0 (2.0 only when the header
 * would not fit in 1.0), the header padded with spaces and ended by a
 * newline so that the data starts at a multiple of 64 bytes.  A file is
 * written whole or not at all: a temporary file beside it, flushed to disk
 * and renamed over the name asked for.
 *
 * bfloat16 is not a NumPy dtype: a bf16 tensor has no .npy form
 * (opsched_npy_dtype_from_dtype says so).
 */
#ifndef OPSCHED_NPY_H
#define OPSCHED_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "opsched/core.h"
#include "opsched/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NumPy's limit on dimensions before NumPy 2.0 (NPY_MAXDIMS). */
#define OPSCHED_NPY_MAX_DIMS 32
/* The longest header (the dict text, padding included) that is read, in
 * every version: a version 1.0 header cannot be longer, and NumPy writes
 * longer ones only for structured dtypes, which are not read anyway.
 * (NumPy >= 1.24 itself refuses headers over 10,000 bytes by default.) */
#define OPSCHED_NPY_MAX_HEADER 65536

/* The element types of .npy files opsched reads and writes, numbered as
 * ONNX's TensorProto.DataType. */
typedef enum opsched_npy_dtype {
    OPSCHED_NPY_FLOAT32 = 1,  /* 'f4' */
    OPSCHED_NPY_UINT8 = 2,    /* 'u1' */
    OPSCHED_NPY_INT8 = 3,     /* 'i1' */
    OPSCHED_NPY_UINT16 = 4,   /* 'u2' */
    OPSCHED_NPY_INT16 = 5,    /* 'i2' */
    OPSCHED_NPY_INT32 = 6,    /* 'i4' */
    OPSCHED_NPY_INT64 = 7,    /* 'i8' */
    OPSCHED_NPY_BOOL = 9,     /* 'b1': one byte, 0 or 1 */
    OPSCHED_NPY_FLOAT16 = 10, /* 'f2': IEEE half */
    OPSCHED_NPY_FLOAT64 = 11, /* 'f8' */
    OPSCHED_NPY_UINT32 = 12,  /* 'u4' */
    OPSCHED_NPY_UINT64 = 13   /* 'u8' */
} opsched_npy_dtype;

/* An array read from a .npy file.  data holds numel elements of dtype in
 * the host's byte order, C order; it is never NULL after a successful
 * read, even for an empty array, and is freed by opsched_npy_array_clear. */
typedef struct opsched_npy_array {
    opsched_npy_dtype dtype;
    int ndim;                           /* 0 for a scalar */
    int64_t dims[OPSCHED_NPY_MAX_DIMS]; /* dims[0..ndim-1], each >= 0 */
    int64_t numel;                      /* product of the dims (1 for a scalar) */
    size_t nbytes;                      /* numel * element size */
    void *data;
    int version; /* the file's format version, 1, 2 or 3 */
    int swapped; /* 1: the file was of the other byte order */
    int fortran; /* 1: the file was in Fortran order (data now in C order) */
} opsched_npy_array;

/* NumPy's name of a dtype ("float32", "bool", ...); "?" for a value that
 * is none of the enum's. */
const char *opsched_npy_dtype_name(opsched_npy_dtype dt);
/* Bytes per element (0 for a value that is none of the enum's). */
size_t opsched_npy_dtype_size(opsched_npy_dtype dt);
/* The graph element type of the same values: float32, float16, int8,
 * uint8, int32, int64 and bool have one; the others
 * OPSCHED_ERR_UNSUPPORTED (no message is recorded: the caller names the
 * tensor). */
opsched_status opsched_npy_dtype_to_dtype(opsched_npy_dtype dt, opsched_dtype *out);
/* The .npy element type of a graph element type; bf16 is
 * OPSCHED_ERR_UNSUPPORTED (not a NumPy dtype), without a message. */
opsched_status opsched_npy_dtype_from_dtype(opsched_dtype dt, opsched_npy_dtype *out);

/* Reads the .npy file at path (a regular file: a directory, FIFO or
 * device is refused without blocking on it) into *out, which the caller
 * clears with opsched_npy_array_clear; on failure *out is empty.  Nothing
 * is allocated for the data before the file is seen to hold it. */
opsched_status opsched_npy_read_file(opsched_ctx *ctx, const char *path, opsched_npy_array *out);

/* The same from the size bytes at data (borrowed for the call); name (NULL:
 * "npy buffer") is what messages call it. */
opsched_status opsched_npy_read_buffer(opsched_ctx *ctx, const void *data, size_t size,
                                       const char *name, opsched_npy_array *out);

/* Frees a's data and empties it; an empty or zeroed array is harmless. */
void opsched_npy_array_clear(opsched_npy_array *a);

/* Writes an array of dtype with ndim (0..OPSCHED_NPY_MAX_DIMS) dims, its
 * data (numel elements, C order, host byte order; may be NULL when numel
 * is 0) to path, whole or not at all: a temporary file beside path
 * ("<path>.tmp-<pid>-<n>", mode 0666 less the umask) is written, flushed
 * to disk (fsync) and renamed over path.  On failure (OPSCHED_ERR_IO:
 * no such directory, a full disk, path a directory...) path is as it was
 * and no temporary file is left. */
opsched_status opsched_npy_write_file(opsched_ctx *ctx, const char *path, opsched_npy_dtype dtype,
                                      int ndim, const int64_t *dims, const void *data);
/* The same with opsched_out_open's flags (OPSCHED_OUT_NO_SYMLINK,
 * OPSCHED_OUT_NO_CLOBBER: for names the user did not give). */
opsched_status opsched_npy_write_file_flags(opsched_ctx *ctx, const char *path, int flags,
                                            opsched_npy_dtype dtype, int ndim, const int64_t *dims,
                                            const void *data);

/* The same file's bytes in a new malloc'd buffer (*out, *size; the
 * caller frees *out). */
opsched_status opsched_npy_write_buffer(opsched_ctx *ctx, opsched_npy_dtype dtype, int ndim,
                                        const int64_t *dims, const void *data, void **out,
                                        size_t *size);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_NPY_H */
