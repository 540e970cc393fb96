/*
 * comm_impl.h - how opsched commbench's processes talk: the parent
 * (commbench.c) forks one process per GPU, and each rank (cuda_nccl.c in
 * the CUDA backend) measures its share of every collective and writes
 * fixed-size messages up a pipe.  The parent alone touches the store, so
 * a rank that dies never leaves it half written.
 */
#ifndef OS_COMM_IMPL_H
#define OS_COMM_IMPL_H

#include "opsched/comm.h"

#define OS_COMM_MAX_SAMPLES 100
#define OS_NCCL_ID_BYTES 128

typedef enum os_comm_kind {
    OS_COMM_PROBE = 1, /* the probe: GPUs visible and GPU 0's description */
    OS_COMM_ID,        /* rank 0: the NCCL unique id, for the parent to pass on */
    OS_COMM_HELLO,     /* a rank is up: its GPU and links */
    OS_COMM_RESULT,    /* a rank's samples of one case */
    OS_COMM_FAIL,      /* a rank failed: status and text */
    OS_COMM_DONE       /* a rank finished every case */
} os_comm_kind;

typedef struct os_comm_msg {
    int kind, rank, case_index, status;
    int gpus;    /* OS_COMM_PROBE */
    int nvlinks; /* OS_COMM_HELLO: active NVLinks, -1 unknown */
    int n;       /* samples */
    int64_t wrong;
    double max_error;
    double samples[OS_COMM_MAX_SAMPLES]; /* milliseconds per operation */
    unsigned char id[OS_NCCL_ID_BYTES];
    opsched_device_info dev; /* PROBE, HELLO */
    char text[512];          /* FAIL: why; HELLO (rank 0): peer access */
} os_comm_msg;

typedef struct os_comm_case {
    opsched_collective collective;
    int64_t bytes, count;
} os_comm_case;

typedef struct os_comm_rank {
    int rank, ranks;
    const os_comm_case *cases;
    int n_cases;
    const opsched_commbench_options *o;
    int up;   /* write end to the parent */
    int down; /* read end from the parent (ranks > 0: the id) */
    const char *nccl_path;
} os_comm_rank;

/* In a forked child: measures rank r's part of every case, writing HELLO,
 * RESULT per case and DONE (or FAIL) to r->up.  Returns the exit code. */
int os_comm_rank_main(const os_comm_rank *r);

/* In a forked child: writes one OS_COMM_PROBE (GPUs visible, GPU 0's
 * description, or FAIL) to fd.  Returns the exit code. */
int os_comm_probe_main(int fd);

/* In the parent (no CUDA): NCCL can be loaded; its version code and the
 * file loaded.  OPSCHED_ERR_UNSUPPORTED naming the file and dlerror
 * otherwise. */
opsched_status os_nccl_check(opsched_ctx *ctx, int *version, char *path, size_t size);

/* write(2) / read(2) of a whole message; 0 on success, -1 on error or
 * (read) end of file. */
int os_comm_write(int fd, const os_comm_msg *m);
int os_comm_read(int fd, os_comm_msg *m);

/* A training graph's phases (opsched_training_graph): *loss the node
 * making the output "loss" (forward is every node up to it), *opt_start the
 * first node of the optimizer step (after the last "grad/" output's
 * producer; the node count when the graph has no "step/" outputs).
 * OPSCHED_ERR_INVALID_ARG when the graph has no "loss". */
opsched_status os_training_phases(opsched_ctx *ctx, const opsched_graph *tg, int *loss,
                                  int *opt_start);

#endif /* OS_COMM_IMPL_H */
