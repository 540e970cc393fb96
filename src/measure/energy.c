/*
 * energy.c - energy of back-to-back launches over a window of seconds.
 *
 * The NVML energy counter updates about every 100 ms and H100's power
 * sensor samples only part of the time, so one launch is never measured
 * alone: a window of >= 1 s of launches is bracketed by device syncs and
 * counter reads, and divided by the launch count.  A sampling thread reads
 * power every few milliseconds meanwhile; integrated by the trapezoid rule
 * it cross-checks the counter and replaces it where there is none.  Idle
 * power, measured just before, gives the dynamic part.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend_impl.h"
#include "core/error.h"
#include "measure/measure_impl.h"

double os_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void os_sleep_ms(double ms)
{
    if (ms <= 0) return;
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000.0),
                          .tv_nsec = (long)(fmod(ms, 1000.0) * 1e6)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

#define SAMPLE_PERIOD_MS 5.0
#define MAX_SAMPLES 65536

typedef struct sampler {
    opsched_device *dev;
    opsched_ctx *ctx;          /* the thread's own: contexts are not shared */
    pthread_mutex_t lock;
    int stop;
    int n;
    double t[MAX_SAMPLES];
    double w[MAX_SAMPLES];
    double temp, clock;
} sampler;

static void *sampler_main(void *arg)
{
    sampler *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        int stop = s->stop;
        pthread_mutex_unlock(&s->lock);
        if (stop) break;
        opsched_power_sample p;
        if (os_device_power_with(s->dev, s->ctx, &p) == OPSCHED_OK && !isnan(p.power_w) &&
            s->n < MAX_SAMPLES) {
            pthread_mutex_lock(&s->lock);
            s->t[s->n] = os_now_ms();
            s->w[s->n] = p.power_w;
            s->n++;
            if (!isnan(p.temperature_c)) s->temp = p.temperature_c;
            if (!isnan(p.sm_clock_mhz)) s->clock = p.sm_clock_mhz;
            pthread_mutex_unlock(&s->lock);
        }
        os_sleep_ms(SAMPLE_PERIOD_MS);
    }
    return NULL;
}

/* Trapezoid integral of the samples in [t0, t1], in joules. */
static double integrate(const sampler *s, double t0, double t1, double *mean_w)
{
    double j = 0, span = 0;
    for (int i = 1; i < s->n; i++) {
        double a = s->t[i - 1], b = s->t[i];
        if (b <= t0 || a >= t1) continue;
        double wa = s->w[i - 1], wb = s->w[i];
        /* clip the segment to the window, interpolating the power */
        if (a < t0) {
            wa = wa + (wb - wa) * (t0 - a) / (b - a);
            a = t0;
        }
        if (b > t1) {
            wb = s->w[i - 1] + (wb - s->w[i - 1]) * (t1 - s->t[i - 1]) / (s->t[i] - s->t[i - 1]);
            b = t1;
        }
        j += 0.5 * (wa + wb) * (b - a) / 1000.0;
        span += b - a;
    }
    *mean_w = span > 0 ? j / (span / 1000.0) : NAN;
    return span > 0.5 * (t1 - t0) ? j : NAN;
}

/* The samples from t0 on, relative to t_ref, into a caller-owned copy. */
static opsched_status copy_samples(const sampler *s, double t0, double t_ref, opsched_ctx *ctx,
                                   os_power_trace *trace)
{
    int first = 0;
    while (first < s->n && s->t[first] < t0) first++;
    int n = s->n - first;
    if (n <= 0) return OPSCHED_OK;
    trace->t_ms = malloc(sizeof(double) * (size_t)n);
    trace->w = malloc(sizeof(double) * (size_t)n);
    if (!trace->t_ms || !trace->w) {
        free(trace->t_ms);
        free(trace->w);
        trace->t_ms = trace->w = NULL;
        return OS_NOMEM(ctx);
    }
    for (int i = 0; i < n; i++) {
        trace->t_ms[i] = s->t[first + i] - t_ref;
        trace->w[i] = s->w[first + i];
    }
    trace->n = n;
    return OPSCHED_OK;
}

opsched_status os_measure_energy(opsched_device *dev, os_launch_fn launch, void *user,
                                 double window_ms, double idle_ms, opsched_energy *out)
{
    return os_measure_energy_trace(dev, launch, user, window_ms, idle_ms, out, NULL);
}

opsched_status os_measure_energy_trace(opsched_device *dev, os_launch_fn launch, void *user,
                                       double window_ms, double idle_ms, opsched_energy *out,
                                       os_power_trace *trace)
{
    opsched_ctx *ctx = opsched_device_ctx(dev);
    opsched_status st = OPSCHED_OK;
    if (trace) memset(trace, 0, sizeof(*trace));
    memset(out, 0, sizeof(*out));
    out->energy_j = out->dynamic_energy_j = out->energy_power_j = NAN;
    out->power_mean_w = out->idle_power_w = out->temperature_c = out->sm_clock_mhz = NAN;
    opsched_power_sample p0;
    if (opsched_device_power(dev, &p0) != OPSCHED_OK) {
        opsched_ctx_clear_error(ctx);
        return OPSCHED_OK; /* no sensor: energy stays invalid */
    }
    int has_counter = !isnan(p0.energy_mj), has_power = !isnan(p0.power_w);
    if (!has_counter && !has_power) return OPSCHED_OK;
    opsched_device_info info;
    OS_TRY(opsched_device_info_get(dev, &info));
    out->power_limit_w = info.power_limit_w;

    sampler *s = calloc(1, sizeof(*s));
    opsched_ctx *tctx = NULL;
    if (!s) return OS_NOMEM(ctx);
    if (opsched_ctx_create(&tctx) != OPSCHED_OK) {
        free(s);
        return OS_NOMEM(ctx);
    }
    s->dev = dev;
    s->ctx = tctx;
    s->temp = s->clock = NAN;
    pthread_mutex_init(&s->lock, NULL);
    pthread_t thread;
    int started = 0;
    if (has_power) {
        if (pthread_create(&thread, NULL, sampler_main, s) != 0) {
            st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "cannot start the power-sampling thread");
            goto done;
        }
        started = 1;
    }
    /* Idle window: nothing enqueued. */
    OS_TRY_GOTO(st, opsched_device_sync(dev), done);
    opsched_power_sample pi0, pi1;
    double ti0 = os_now_ms();
    OS_TRY_GOTO(st, opsched_device_power(dev, &pi0), done);
    os_sleep_ms(idle_ms);
    OS_TRY_GOTO(st, opsched_device_power(dev, &pi1), done);
    double ti1 = os_now_ms();

    /* Busy window, bracketed by syncs and counter reads. */
    opsched_power_sample pb0, pb1;
    OS_TRY_GOTO(st, opsched_device_sync(dev), done);
    OS_TRY_GOTO(st, opsched_device_power(dev, &pb0), done);
    double tb0 = os_now_ms();
    long launches = 0, calls = 0;
    while (os_now_ms() - tb0 < window_ms) {
        int k = 0;
        OS_TRY_GOTO(st, launch(user, &k), done);
        launches += k;
        /* Bound the queue so the window's end is the work's end. */
        if (++calls % 16 == 0) OS_TRY_GOTO(st, opsched_device_sync(dev), done);
    }
    OS_TRY_GOTO(st, opsched_device_sync(dev), done);
    double tb1 = os_now_ms();
    OS_TRY_GOTO(st, opsched_device_power(dev, &pb1), done);

    if (started) {
        pthread_mutex_lock(&s->lock);
        s->stop = 1;
        pthread_mutex_unlock(&s->lock);
        pthread_join(thread, NULL);
        started = 0;
    }
    double dt_s = (tb1 - tb0) / 1000.0;
    out->launches = launches;
    out->window_ms = tb1 - tb0;
    double idle_w = NAN;
    if (has_counter && ti1 - ti0 > 0 && pi1.energy_mj > pi0.energy_mj)
        idle_w = (pi1.energy_mj - pi0.energy_mj) / (ti1 - ti0); /* mJ/ms = W */
    double mean_idle = NAN;
    double idle_int = integrate(s, ti0, ti1, &mean_idle);
    if (isnan(idle_w)) idle_w = isnan(idle_int) ? NAN : mean_idle;
    out->idle_power_w = idle_w;
    double mean_w = NAN;
    double e_int = integrate(s, tb0, tb1, &mean_w);
    if (launches > 0 && !isnan(e_int)) out->energy_power_j = e_int / (double)launches;
    if (launches > 0 && has_counter && pb1.energy_mj >= pb0.energy_mj) {
        double e = (pb1.energy_mj - pb0.energy_mj) / 1000.0;
        snprintf(out->method, sizeof(out->method), "counter");
        out->energy_j = e / (double)launches;
        out->power_mean_w = e / dt_s;
        out->valid = 1;
    } else if (launches > 0 && !isnan(e_int)) {
        snprintf(out->method, sizeof(out->method), "power");
        out->energy_j = out->energy_power_j;
        out->power_mean_w = mean_w;
        out->valid = 1;
    }
    if (out->valid && !isnan(idle_w))
        out->dynamic_energy_j = (out->energy_j * (double)launches - idle_w * dt_s) / (double)launches;
    out->temperature_c = !isnan(s->temp) ? s->temp : pb1.temperature_c;
    out->sm_clock_mhz = !isnan(s->clock) ? s->clock : pb1.sm_clock_mhz;
    if (trace) st = copy_samples(s, ti0, tb0, ctx, trace);
done:
    if (started) {
        pthread_mutex_lock(&s->lock);
        s->stop = 1;
        pthread_mutex_unlock(&s->lock);
        pthread_join(thread, NULL);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
    opsched_ctx_free(tctx);
    return st;
}
