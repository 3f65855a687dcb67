#ifndef JAQ_CSOXR_LOAD_H
#define JAQ_CSOXR_LOAD_H

/* libsoxr is opened (dlopen) when the first resampler is made: CSoxrLoad.c. */

/* Why libsoxr cannot be used, or NULL when it can (opens it first if needed). Thread-safe. */
const char *jaq_soxr_error(void);

#endif
