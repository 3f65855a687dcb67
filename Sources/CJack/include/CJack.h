/*
 * CJack: the JACK C API for Swift, plus a shim for what Swift cannot call.
 * This is the only place that includes <jack/jack.h>.
 */
#ifndef JAQ_CJACK_H
#define JAQ_CJACK_H

#include <jack/jack.h>
#include <jack/types.h>
#include <stdint.h>

/*
 * jack_client_open is variadic (the server name follows the options), which
 * Swift cannot call; this takes the server name as a plain argument
 * (NULL: the default server, or $JACK_DEFAULT_SERVER).
 */
jack_client_t *jaq_jack_client_open(const char *client_name, jack_options_t options, jack_status_t *status,
                                    const char *server_name);

/*
 * How many times jaq_jack_client_open tries when PipeWire's libjack reports a transient
 * failure (JackInitFailure on a running server; see CJack.c), 5 ms apart.
 */
#define JAQ_JACK_OPEN_ATTEMPTS 40

/*
 * Quiet opens, for a command-line program whose stderr is its user's: libjack's own messages go
 * through jack_set_error_function, but while a client opens, the libraries under it may write
 * to the C stderr stream directly (libdb: "/dev/shm/jack_db-0/__db.002: No such file or
 * directory" when a server that is stopping removes the metadata database another process is
 * opening). With quiet opens on, the C library's `stderr` stream writes to /dev/null for the
 * time jaq_jack_client_open takes (fd 2 is untouched: write to it, not to the C stream, from
 * other threads); a library, whose process's stderr is not its own, leaves them off, the
 * default.
 */
void jaq_jack_set_quiet_open(int quiet);

/* Whether a failed open's status is PipeWire's transient JackInitFailure (worth another try). */
int jaq_jack_open_failure_is_transient(jack_status_t status);

/*
 * Asks the scheduler to run the calling thread (an ordinary SCHED_OTHER one) soon after it wakes:
 * a scheduling slice of `slice_ns` (Linux 6.12 and later, EEVDF: a waking thread with a shorter
 * slice than the running one preempts it), at its current nice value. sched_setattr has no glibc
 * wrapper; it is a syscall. Returns 0, or -1 with errno (older kernels accept and ignore the slice).
 */
int jaq_thread_set_slice(unsigned long long slice_ns);

/* JACK_DEFAULT_AUDIO_TYPE is a macro string Swift does not import. */
const char *jaq_jack_default_audio_type(void);

#endif
