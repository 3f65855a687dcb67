#ifndef JAQ_COREFOUNDATION_H
#define JAQ_COREFOUNDATION_H
/*
 * Apple's CoreFoundation.h includes the standard C headers, and C code written
 * against it (recorder.c in the recording guide calls strlen and atof without
 * including <string.h>) relies on that; so does this one.
 */
#include <sys/types.h>
#include <stdarg.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "CFBase.h"
#include "CFString.h"
#include "CFRunLoop.h"
#include "CFURL.h"
#include "CFDictionary.h"
#endif
