/*
 * run_io.h - the user's tensors in and out of `opsched run` (--input
 * NAME=FILE.npy, --output-dir DIR).
 */
#ifndef OPSCHED_RUN_IO_H
#define OPSCHED_RUN_IO_H

#include "opsched/graph.h"
#include "opsched/npy.h"
#include "opsched/onnx.h"
#include "tool.h"

#define RUN_IO_MAX 64

typedef struct run_io_input {
    char name[256];
    const char *path;
    opsched_npy_array a;
    int graph_input;     /* index among the graph's inputs (run_io_match); -1: none */
    int given;           /* passed to the loader (run_io_values) */
    opsched_dtype dtype; /* what a holds, as a graph type */
} run_io_input;

typedef struct run_io {
    int n;
    run_io_input in[RUN_IO_MAX];
    const char *out_dir; /* NULL: no outputs written */
    int out_flags;       /* opsched_out_open's: no clobber, no links unless asked */
} run_io;

/* Adds one "NAME=FILE" of --input; a usage error for a bad or repeated one. */
int run_io_add(run_io *io, const char *spec);
/* Reads every file (exit 1 naming the file that cannot be read). */
int run_io_read(opsched_ctx *ctx, run_io *io);
void run_io_clear(run_io *io);
/* The files as values for the ONNX loader (out holds RUN_IO_MAX); those
 * of a type the graph cannot hold are left out.  Returns their count. */
int run_io_values(run_io *io, opsched_onnx_value *out);
/* Explains a failed load caused by a given value: a name the model lacks
 * is a usage error (exit 2) listing its inputs; a shape or type that
 * differs fails (exit 1) naming the file.  -1 when st is about something
 * else. */
int run_io_load_fail(opsched_ctx *ctx, const run_io *io, opsched_status st);
/* Finds each input among g's INPUT tensors and checks its shape and type;
 * an input the loader consumed (a constant or a weight now) is not bound
 * (graph_input -1).  A name the model lacks is a usage error listing its
 * inputs; a shape or type that differs fails (exit 1) naming the file. */
int run_io_match(opsched_ctx *ctx, run_io *io, const opsched_graph *g);

/* Before anything runs: makes out_dir and checks that every output file
 * of g can be written there under out_flags (an existing file or a
 * symbolic link at a name is refused unless --force / --follow-symlinks)
 * and that none is one of the command's n inputs (the --input files among
 * them): exit 2 or 1 with a message naming the file. */
int run_io_check(opsched_ctx *ctx, const run_io *io, const opsched_graph *g,
                 const char *const *inputs, int n);

/* After a refused output name (an existing file, a symbolic link): what
 * to do about it, on stderr. */
void run_io_refusal_hint(opsched_ctx *ctx);

/* Reads graph output i as n elements of dt into buf (an executor's). */
typedef opsched_status (*run_io_get_fn)(void *user, int i, opsched_dtype dt, void *buf, size_t n);
/* Writes every output of g to out_dir/<name>.npy (the directory made when
 * missing), each file whole or not at all. */
int run_io_write(opsched_ctx *ctx, const run_io *io, const opsched_graph *g, run_io_get_fn get,
                 void *user);
/* The file name (without .npy) an output called name gets. */
void run_io_file_name(const char *name, char *buf, size_t size);

#endif /* OPSCHED_RUN_IO_H */
