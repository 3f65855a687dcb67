#include "CJack.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static jack_client_t *open_once(const char *client_name, jack_options_t options, jack_status_t *status,
                                const char *server_name) {
    if (server_name != NULL && server_name[0] != '\0') {
        return jack_client_open(client_name, (jack_options_t)(options | JackServerName), status, server_name);
    }
    return jack_client_open(client_name, options, status);
}

/*
 * Quiet opens (see CJack.h): while any thread is inside jaq_jack_client_open, the C library's
 * `stderr` stream (a variable glibc lets a program set) is one on /dev/null; the first thread
 * in puts it there, the last one out puts the real one back. fd 2 itself is left alone, so
 * what jaq writes to it from another thread meanwhile (the watchdog's line about a server that
 * hangs the open) still arrives. The /dev/null stream is never closed: a library that kept the
 * pointer it found may write to it later.
 */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static int quiet_enabled = 0;
static int quiet_depth = 0;
static FILE *quiet_null = NULL;
static FILE *quiet_saved = NULL;

void jaq_jack_set_quiet_open(int quiet) {
    pthread_mutex_lock(&quiet_lock);
    quiet_enabled = quiet;
    pthread_mutex_unlock(&quiet_lock);
}

static void quiet_enter(void) {
    pthread_mutex_lock(&quiet_lock);
    if (quiet_enabled && quiet_depth++ == 0) {
        if (quiet_null == NULL) quiet_null = fopen("/dev/null", "we");
        if (quiet_null != NULL) {
            fflush(stderr);
            quiet_saved = stderr;
            stderr = quiet_null;
        }
    }
    pthread_mutex_unlock(&quiet_lock);
}

static void quiet_leave(void) {
    pthread_mutex_lock(&quiet_lock);
    if (quiet_depth > 0 && --quiet_depth == 0 && quiet_saved != NULL) {
        stderr = quiet_saved;
        quiet_saved = NULL;
    }
    pthread_mutex_unlock(&quiet_lock);
}

/*
 * PipeWire's libjack (0.3.65, Debian 12) fails an open with JackFailure | JackInitFailure when
 * another client's port disappears while this one is connecting: the new client binds every
 * port it is told about, the server answers "no global N" and then an error on the core
 * ("unknown resource"), and on_error marks the whole client failed. Two processes opening and
 * closing queues at once hit it often. The server is running and a second try succeeds, so
 * retry that status a bounded number of times (jackd2 reports a missing server as
 * JackServerFailed, which is not retried).
 */
jack_client_t *jaq_jack_client_open(const char *client_name, jack_options_t options, jack_status_t *status,
                                    const char *server_name) {
    jack_client_t *client = NULL;
    quiet_enter();
    for (int attempt = 0; attempt < JAQ_JACK_OPEN_ATTEMPTS; attempt++) {
        jack_status_t local = (jack_status_t)0;
        client = open_once(client_name, options, &local, server_name);
        if (status != NULL) *status = local;
        if (client != NULL || !jaq_jack_open_failure_is_transient(local)) break;
        usleep(5000);
    }
    quiet_leave();
    return client;
}

int jaq_jack_open_failure_is_transient(jack_status_t status) {
    return (status & JackInitFailure) != 0 && (status & (JackServerFailed | JackServerError | JackVersionError)) == 0;
}

const char *jaq_jack_default_audio_type(void) { return JACK_DEFAULT_AUDIO_TYPE; }

/* struct sched_attr (include/uapi/linux/sched/types.h), spelled out: glibc 2.36 has no wrapper. */
struct jaq_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
};

int jaq_thread_set_slice(unsigned long long slice_ns) {
#ifdef SYS_sched_setattr
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);  /* the calling thread's, on Linux */
    if (nice == -1 && errno != 0) return -1;
    struct jaq_sched_attr attr = {0};
    attr.size = sizeof attr;
    attr.sched_policy = SCHED_OTHER;
    attr.sched_nice = nice;
    attr.sched_runtime = slice_ns;
    return (int)syscall(SYS_sched_setattr, 0, &attr, 0);
#else
    (void)slice_ns;
    errno = ENOSYS;
    return -1;
#endif
}
