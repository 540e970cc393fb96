/*
 * stop.c - Ctrl-C for long commands (sweep, profile): the first SIGINT or
 * SIGTERM asks the work to stop after what is in flight, a second one ends
 * the process at once.
 *
 * The signals are taken on a thread of their own: the calling thread (and
 * every thread it starts afterwards, the compute threads among them) blocks
 * them, so a signal never lands in the middle of computation.  A handler
 * running on a compute thread pushes its frame onto that thread's stack,
 * and oneDNN's JIT kernels keep data below the stack pointer: on the CPU
 * backend an interrupt in a convolution corrupted the heap ("corrupted
 * size vs. prev_size" in a later free, 1 run in 4 of tests/profile_cli.sh
 * with four copies running).
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

static volatile sig_atomic_t stop_flag;
static const char *stop_msg = "";
static struct sigaction old_int, old_term;
static sigset_t old_mask;
static pthread_t sig_thread;
static int sig_thread_running;

static void on_signal(int sig)
{
    if (stop_flag) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_flag = 1;
    ssize_t r = write(STDERR_FILENO, stop_msg, strlen(stop_msg));
    (void)r;
}

static void stop_signals(sigset_t *s)
{
    sigemptyset(s);
    sigaddset(s, SIGINT);
    sigaddset(s, SIGTERM);
}

/* The one thread that takes the signals: it waits, and the handler runs on
 * its stack. */
static void *signal_thread(void *arg)
{
    (void)arg;
    sigset_t s;
    stop_signals(&s);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    for (;;) pause();
    return NULL;
}

volatile sig_atomic_t *tool_stop_install(const char *message)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    stop_msg = message;
    stop_flag = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigset_t s;
    stop_signals(&s);
    pthread_sigmask(SIG_BLOCK, &s, &old_mask);
    /* Without the thread the signals stay unblocked here, as before. */
    sig_thread_running = pthread_create(&sig_thread, NULL, signal_thread, NULL) == 0;
    if (!sig_thread_running) pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    return &stop_flag;
}

void tool_stop_restore(void)
{
    if (sig_thread_running) {
        pthread_cancel(sig_thread); /* pause() is a cancellation point */
        pthread_join(sig_thread, NULL);
        sig_thread_running = 0;
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
}
