#ifndef JAQ_CFFMPEG_LOAD_H
#define JAQ_CFFMPEG_LOAD_H

/* FFmpeg is opened (dlopen) the first time one of its functions is called: CFFmpegLoad.c. */

/* Opens FFmpeg if it is not open yet: 0 when it can be used, -1 when not (then each FFmpeg
 * function jaq calls fails as FFmpeg fails: NULL or AVERROR(ENOSYS)). Thread-safe. */
int jaq_ffmpeg_load(void);

/* Why FFmpeg cannot be used, or NULL when it can (opens it first if needed). */
const char *jaq_ffmpeg_error(void);

/* Why FFmpeg could not be opened, if it was tried and failed; NULL otherwise (never opens it). */
const char *jaq_ffmpeg_failure(void);

#endif
