/*
 * FFmpeg (libavcodec, libavformat, libavutil) for Swift: the headers (CFFmpegLoad opens the libraries).
 *
 * Swift imports FFmpeg's functions and structs as they are; the error codes are function-like
 * macros (AVERROR(e), FFERRTAG) that Swift cannot import, so they are spelled here as static
 * inline functions. Nothing else lives here: keep this module small, the codec and file layers
 * (Sources/AudioToolbox/Codec, AudioFile) build on it.
 */
#ifndef JAQ_CFFMPEG_SHIM_H
#define JAQ_CFFMPEG_SHIM_H

#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>

/* AVERROR(EAGAIN): the codec wants input (receive) or output to be drained (send). */
static inline int jaq_averror_eagain(void) { return AVERROR(EAGAIN); }
/* AVERROR_EOF: the codec or the demuxer is drained. */
static inline int jaq_averror_eof(void) { return AVERROR_EOF; }
/* AVERROR_INVALIDDATA: corrupt input. */
static inline int jaq_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
/* AVERROR(ENOMEM). */
static inline int jaq_averror_enomem(void) { return AVERROR(ENOMEM); }
/* AVERROR(EINVAL). */
static inline int jaq_averror_einval(void) { return AVERROR(EINVAL); }
/* AV_NOPTS_VALUE as a plain int64 (the macro is a cast Swift does not import). */
static inline int64_t jaq_av_nopts_value(void) { return AV_NOPTS_VALUE; }
/* AV_INPUT_BUFFER_PADDING_SIZE: zeroed bytes FFmpeg may read past extradata and packet data. */
static inline int jaq_av_input_buffer_padding_size(void) { return AV_INPUT_BUFFER_PADDING_SIZE; }

#endif
