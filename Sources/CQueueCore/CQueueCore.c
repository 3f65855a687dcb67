// The target's functions are inline in include/CQueueCore.h; SwiftPM wants a source file.
#include "CQueueCore.h"
