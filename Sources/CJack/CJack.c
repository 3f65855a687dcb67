#include "CJack.h"
#include <stddef.h>
#include <unistd.h>

static jack_client_t *open_once(const char *client_name, jack_options_t options, jack_status_t *status,
                                const char *server_name) {
    if (server_name != NULL && server_name[0] != '\0') {
        return jack_client_open(client_name, (jack_options_t)(options | JackServerName), status, server_name);
    }
    return jack_client_open(client_name, options, status);
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
    for (int attempt = 0; attempt < JAQ_JACK_OPEN_ATTEMPTS; attempt++) {
        jack_status_t local = (jack_status_t)0;
        client = open_once(client_name, options, &local, server_name);
        if (status != NULL) *status = local;
        if (client != NULL || !jaq_jack_open_failure_is_transient(local)) break;
        usleep(5000);
    }
    return client;
}

int jaq_jack_open_failure_is_transient(jack_status_t status) {
    return (status & JackInitFailure) != 0 && (status & (JackServerFailed | JackServerError | JackVersionError)) == 0;
}

const char *jaq_jack_default_audio_type(void) { return JACK_DEFAULT_AUDIO_TYPE; }
