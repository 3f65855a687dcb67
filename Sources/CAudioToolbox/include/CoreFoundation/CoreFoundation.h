#ifndef JAQ_COREFOUNDATION_H
#define JAQ_COREFOUNDATION_H
#include "CFBase.h"
#include "CFString.h"
#include "CFRunLoop.h"
#include "CFURL.h"
#endif
