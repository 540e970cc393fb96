/*
 * measure_impl.h - what the measurement files share.
 */
#ifndef OS_MEASURE_IMPL_H
#define OS_MEASURE_IMPL_H

#include "opsched/measure.h"

/* Enqueues one batch of launches; returns how many launches it enqueued. */
typedef opsched_status (*os_launch_fn)(void *user, int *launches);

double os_now_ms(void);
void os_sleep_ms(double ms);

/* Runs launch() back to back for at least window_ms (after an idle window
 * of idle_ms) and fills *out.  out->valid is 0 when the device has no
 * sensor; that is not a failure. */
opsched_status os_measure_energy(opsched_device *dev, os_launch_fn launch, void *user,
                                 double window_ms, double idle_ms, opsched_energy *out);

/* The power samples of an energy window, for a timeline: milliseconds from
 * the start of the busy window (negative in the idle window before it) and
 * watts.  The arrays are malloc'd and belong to the caller. */
typedef struct os_power_trace {
    int n;
    double *t_ms;
    double *w;
} os_power_trace;

/* os_measure_energy that also hands back its power samples when trace is
 * not NULL (n = 0 when the device has no power sensor). */
opsched_status os_measure_energy_trace(opsched_device *dev, os_launch_fn launch, void *user,
                                       double window_ms, double idle_ms, opsched_energy *out,
                                       os_power_trace *trace);

#endif /* OS_MEASURE_IMPL_H */
