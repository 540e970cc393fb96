/*
 * stop.c - Ctrl-C for long commands (sweep, profile): the first SIGINT or
 * SIGTERM asks the work to stop after what is in flight, a second one ends
 * the process at once.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

static volatile sig_atomic_t stop_flag;
static const char *stop_msg = "";
static struct sigaction old_int, old_term;

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
    return &stop_flag;
}

void tool_stop_restore(void)
{
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
}
