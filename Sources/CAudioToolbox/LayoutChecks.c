/*
 * Compiles the public headers as C so their _Static_assert layout checks
 * (Apple's struct sizes) run in every build, with gcc-compatible syntax.
 */
#include "include/AudioToolbox/AudioToolbox.h"
