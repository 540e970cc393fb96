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

#endif /* OS_MEASURE_IMPL_H */
