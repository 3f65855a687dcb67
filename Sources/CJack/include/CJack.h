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

/* JACK_DEFAULT_AUDIO_TYPE is a macro string Swift does not import. */
const char *jaq_jack_default_audio_type(void);

#endif
