#ifndef JAQ_CRUBBERBAND_LOAD_H
#define JAQ_CRUBBERBAND_LOAD_H

/* Rubber Band is opened (dlopen) when the first time/pitch unit using it is made:
 * CRubberBandLoad.c. */

/* Why Rubber Band cannot be used, or NULL when it can (opens it first if needed). Thread-safe. */
const char *jaq_rubberband_error(void);

#endif
