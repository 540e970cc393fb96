/*
 * check.c - the numerics check of a profile: the device's outputs against
 * the CPU backend's on the same weights and input.
 *
 * Both executors are made from the same graph with the same seed, so they
 * hold the same weights (the graph's payloads, or random values that the
 * executor draws per tensor from the seed in f32 before converting them to
 * the storage type) and the same input.  The reference runs in strict fp32
 * and NCHW with the library's own algorithm choice; the error is the
 * relative L2 norm over all outputs together, against a tolerance that fits
 * the math mode (opsched_profile_tolerance).
 *
 * When the error is above that tolerance, a second reference run with its
 * inputs moved by CHECK_JITTER relative measures how far the graph's own
 * outputs move under rounding-sized changes (check_sensitivity).  A
 * training graph's gradients pass through Relu masks: an activation within
 * rounding of zero flips its mask under any change, so two correct
 * backends differ by as much as the reference differs from itself.  The
 * check then passes when the error is within CHECK_SENSITIVITY_FACTOR times
 * that, and the report says so; a wrong rule gives errors of order one.
 */
#define CHECK_JITTER 1e-6
#define CHECK_SENSITIVITY_FACTOR 3.0
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "profile/profile_impl.h"

/* Opens the CPU device, or borrows dev when it is one.  *ref stays NULL
 * (and the note says why) when this build has no CPU backend. */
static opsched_status reference_device(os_profiler *p, opsched_device **ref, int *owned)
{
    opsched_device_info info;
    OS_TRY(opsched_device_info_get(p->dev, &info));
    *owned = 0;
    *ref = NULL;
    if (strcmp(info.backend, "cpu") == 0) {
        *ref = p->dev;
        return OPSCHED_OK;
    }
    opsched_status st = opsched_device_open(p->ctx, "cpu", 0, ref);
    if (st == OPSCHED_ERR_NOT_FOUND || st == OPSCHED_ERR_UNSUPPORTED) {
        snprintf(p->r->check_note, sizeof(p->r->check_note), "no CPU backend for the reference: %s",
                 opsched_ctx_last_error(p->ctx));
        opsched_ctx_clear_error(p->ctx);
        return OPSCHED_OK;
    }
    OS_TRY(st);
    *owned = 1;
    return OPSCHED_OK;
}

opsched_status os_profile_check(os_profiler *p)
{
    opsched_status st = OPSCHED_OK;
    opsched_device *cpu = NULL;
    opsched_executor *ref = NULL, *jit = NULL;
    int owned = 0;
    opsched_profile_result *r = p->r;
    r->check_tolerance = opsched_profile_tolerance(p->o.exec.plan.math);
    r->check_sensitivity = NAN;

    OS_TRY(reference_device(p, &cpu, &owned));
    if (!cpu) return OPSCHED_OK;
    opsched_exec_options ro;
    memset(&ro, 0, sizeof(ro));
    ro.plan.math = OPSCHED_MATH_FP32;
    ro.plan.layout = OPSCHED_LAYOUT_NCHW;
    ro.seed = p->o.exec.seed;
    st = opsched_executor_create(cpu, p->g, NULL, &ro, &ref);
    if (st == OPSCHED_ERR_UNSUPPORTED || st == OPSCHED_ERR_DEVICE_OOM) {
        /* The reference, not the device under test, cannot run g. */
        snprintf(r->check_note, sizeof(r->check_note), "the CPU reference cannot run it: %s",
                 opsched_ctx_last_error(p->ctx));
        opsched_ctx_clear_error(p->ctx);
        st = OPSCHED_OK;
        goto done;
    }
    if (st != OPSCHED_OK) goto done;
    OS_TRY_GOTO(st, opsched_executor_randomize_inputs(ref, p->o.exec.seed), done);
    OS_TRY_GOTO(st, opsched_executor_randomize_inputs(p->ex, p->o.exec.seed), done);
    OS_TRY_GOTO(st, opsched_executor_run(p->ex), done);
    OS_TRY_GOTO(st, opsched_device_sync(p->dev), done);
    OS_TRY_GOTO(st, opsched_executor_run(ref), done);
    OS_TRY_GOTO(st, opsched_device_sync(cpu), done);
    OS_TRY_GOTO(st, opsched_executor_compare(p->ex, ref, &r->check_rel_l2), done);
    r->check_passed = r->check_rel_l2 <= r->check_tolerance;
    if (!r->check_passed && isfinite(r->check_rel_l2)) {
        /* Is the gap the graph's conditioning?  The reference again, its
         * inputs moved by rounding-sized amounts, against itself. */
        OS_TRY_GOTO(st, opsched_executor_create(cpu, p->g, NULL, &ro, &jit), done);
        OS_TRY_GOTO(st,
                    opsched_executor_randomize_inputs_jittered(jit, p->o.exec.seed, CHECK_JITTER),
                    done);
        OS_TRY_GOTO(st, opsched_executor_run(jit), done);
        OS_TRY_GOTO(st, opsched_device_sync(cpu), done);
        OS_TRY_GOTO(st, opsched_executor_compare(jit, ref, &r->check_sensitivity), done);
        r->check_passed = isfinite(r->check_sensitivity) &&
                          r->check_rel_l2 <= CHECK_SENSITIVITY_FACTOR * r->check_sensitivity;
    }
done:
    opsched_executor_free(jit);
    opsched_executor_free(ref);
    if (owned) opsched_device_close(cpu);
    return st;
}
