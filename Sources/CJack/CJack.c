#include "CJack.h"
#include <stddef.h>

jack_client_t *jaq_jack_client_open(const char *client_name, jack_options_t options, jack_status_t *status,
                                    const char *server_name) {
    if (server_name != NULL && server_name[0] != '\0') {
        return jack_client_open(client_name, (jack_options_t)(options | JackServerName), status, server_name);
    }
    return jack_client_open(client_name, options, status);
}

const char *jaq_jack_default_audio_type(void) { return JACK_DEFAULT_AUDIO_TYPE; }
