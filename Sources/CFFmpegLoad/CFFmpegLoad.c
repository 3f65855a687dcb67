/*
 * FFmpeg, opened when first used.
 *
 * libavformat and libavcodec bring in some 130 shared libraries (codecs, TLS, SSH, GL, ...):
 * linked at start-up they cost every jaq process CPU in the dynamic loader (Docs/codecs.md
 * has the measurement), spent by the PCM takes and playbacks that never touch them. Here each
 * FFmpeg function jaq calls is defined under its own name and forwards to the library, which
 * is opened (dlopen) the first time any of them is called. Where FFmpeg cannot be opened,
 * they fail as FFmpeg fails (NULL, AVERROR(ENOSYS)) and `jaq_ffmpeg_error` says why: a
 * compressed file gets an error, never a crash.
 *
 * Written by hand from FFmpeg's own prototypes (`clang -Xclang -ast-print` of
 * Sources/CFFmpeg/shim.h prints them); there is no generator. The compiler checks each
 * definition against FFmpeg's declaration. A function jaq starts to call is added here, in the
 * struct, jaq_ffmpeg_resolve and a definition (the link fails until it is).
 */
#include "CFFmpegLoad.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>

#define JAQ_STR2(x) #x
#define JAQ_STR(x) JAQ_STR2(x)

static struct {
    __typeof__(&av_channel_layout_copy) av_channel_layout_copy;
    __typeof__(&av_channel_layout_default) av_channel_layout_default;
    __typeof__(&av_dict_free) av_dict_free;
    __typeof__(&av_dict_set) av_dict_set;
    __typeof__(&av_find_best_stream) av_find_best_stream;
    __typeof__(&av_frame_alloc) av_frame_alloc;
    __typeof__(&av_frame_free) av_frame_free;
    __typeof__(&av_frame_get_buffer) av_frame_get_buffer;
    __typeof__(&av_frame_make_writable) av_frame_make_writable;
    __typeof__(&av_frame_unref) av_frame_unref;
    __typeof__(&av_get_bytes_per_sample) av_get_bytes_per_sample;
    __typeof__(&av_log_set_level) av_log_set_level;
    __typeof__(&av_mallocz) av_mallocz;
    __typeof__(&av_new_packet) av_new_packet;
    __typeof__(&av_opt_set) av_opt_set;
    __typeof__(&av_packet_alloc) av_packet_alloc;
    __typeof__(&av_packet_free) av_packet_free;
    __typeof__(&av_packet_get_side_data) av_packet_get_side_data;
    __typeof__(&av_packet_unref) av_packet_unref;
    __typeof__(&av_read_frame) av_read_frame;
    __typeof__(&av_rescale_q) av_rescale_q;
    __typeof__(&av_sample_fmt_is_planar) av_sample_fmt_is_planar;
    __typeof__(&av_strerror) av_strerror;
    __typeof__(&av_write_frame) av_write_frame;
    __typeof__(&av_write_trailer) av_write_trailer;
    __typeof__(&avcodec_alloc_context3) avcodec_alloc_context3;
    __typeof__(&avcodec_find_decoder) avcodec_find_decoder;
    __typeof__(&avcodec_find_decoder_by_name) avcodec_find_decoder_by_name;
    __typeof__(&avcodec_find_encoder) avcodec_find_encoder;
    __typeof__(&avcodec_find_encoder_by_name) avcodec_find_encoder_by_name;
    __typeof__(&avcodec_flush_buffers) avcodec_flush_buffers;
    __typeof__(&avcodec_free_context) avcodec_free_context;
    __typeof__(&avcodec_get_name) avcodec_get_name;
    __typeof__(&avcodec_open2) avcodec_open2;
    __typeof__(&avcodec_receive_frame) avcodec_receive_frame;
    __typeof__(&avcodec_receive_packet) avcodec_receive_packet;
    __typeof__(&avcodec_send_frame) avcodec_send_frame;
    __typeof__(&avcodec_send_packet) avcodec_send_packet;
    __typeof__(&avformat_alloc_output_context2) avformat_alloc_output_context2;
    __typeof__(&avformat_close_input) avformat_close_input;
    __typeof__(&avformat_find_stream_info) avformat_find_stream_info;
    __typeof__(&avformat_free_context) avformat_free_context;
    __typeof__(&avformat_new_stream) avformat_new_stream;
    __typeof__(&avformat_open_input) avformat_open_input;
    __typeof__(&avformat_write_header) avformat_write_header;
    __typeof__(&avio_closep) avio_closep;
    __typeof__(&avio_flush) avio_flush;
    __typeof__(&avio_open) avio_open;
} jaq_ffmpeg;

static pthread_once_t jaq_ffmpeg_once = PTHREAD_ONCE_INIT;
static int jaq_ffmpeg_status = -1;
static char jaq_ffmpeg_message[512];

static int jaq_ffmpeg_missing(const char *name) {
    snprintf(jaq_ffmpeg_message, sizeof jaq_ffmpeg_message, "FFmpeg has no %s", name);
    return -1;
}

static int jaq_ffmpeg_resolve(void) {
    /* libavformat depends on libavcodec and libavutil: dlsym on its handle searches them too.
     * The major version is that of the headers jaq was built with. */
    const char *library = "libavformat.so." JAQ_STR(LIBAVFORMAT_VERSION_MAJOR);
    /* Another build of FFmpeg with the same major version (or, in the tests, none). */
    const char *chosen = getenv("JAQ_FFMPEG_LIBRARY");
    if (chosen && *chosen) library = chosen;
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(jaq_ffmpeg_message, sizeof jaq_ffmpeg_message, "cannot open FFmpeg (%s): %s", library, dlerror());
        return -1;
    }
    if (!(jaq_ffmpeg.av_channel_layout_copy = (__typeof__(&av_channel_layout_copy))dlsym(handle, "av_channel_layout_copy"))) return jaq_ffmpeg_missing("av_channel_layout_copy");
    if (!(jaq_ffmpeg.av_channel_layout_default = (__typeof__(&av_channel_layout_default))dlsym(handle, "av_channel_layout_default"))) return jaq_ffmpeg_missing("av_channel_layout_default");
    if (!(jaq_ffmpeg.av_dict_free = (__typeof__(&av_dict_free))dlsym(handle, "av_dict_free"))) return jaq_ffmpeg_missing("av_dict_free");
    if (!(jaq_ffmpeg.av_dict_set = (__typeof__(&av_dict_set))dlsym(handle, "av_dict_set"))) return jaq_ffmpeg_missing("av_dict_set");
    if (!(jaq_ffmpeg.av_find_best_stream = (__typeof__(&av_find_best_stream))dlsym(handle, "av_find_best_stream"))) return jaq_ffmpeg_missing("av_find_best_stream");
    if (!(jaq_ffmpeg.av_frame_alloc = (__typeof__(&av_frame_alloc))dlsym(handle, "av_frame_alloc"))) return jaq_ffmpeg_missing("av_frame_alloc");
    if (!(jaq_ffmpeg.av_frame_free = (__typeof__(&av_frame_free))dlsym(handle, "av_frame_free"))) return jaq_ffmpeg_missing("av_frame_free");
    if (!(jaq_ffmpeg.av_frame_get_buffer = (__typeof__(&av_frame_get_buffer))dlsym(handle, "av_frame_get_buffer"))) return jaq_ffmpeg_missing("av_frame_get_buffer");
    if (!(jaq_ffmpeg.av_frame_make_writable = (__typeof__(&av_frame_make_writable))dlsym(handle, "av_frame_make_writable"))) return jaq_ffmpeg_missing("av_frame_make_writable");
    if (!(jaq_ffmpeg.av_frame_unref = (__typeof__(&av_frame_unref))dlsym(handle, "av_frame_unref"))) return jaq_ffmpeg_missing("av_frame_unref");
    if (!(jaq_ffmpeg.av_get_bytes_per_sample = (__typeof__(&av_get_bytes_per_sample))dlsym(handle, "av_get_bytes_per_sample"))) return jaq_ffmpeg_missing("av_get_bytes_per_sample");
    if (!(jaq_ffmpeg.av_log_set_level = (__typeof__(&av_log_set_level))dlsym(handle, "av_log_set_level"))) return jaq_ffmpeg_missing("av_log_set_level");
    if (!(jaq_ffmpeg.av_mallocz = (__typeof__(&av_mallocz))dlsym(handle, "av_mallocz"))) return jaq_ffmpeg_missing("av_mallocz");
    if (!(jaq_ffmpeg.av_new_packet = (__typeof__(&av_new_packet))dlsym(handle, "av_new_packet"))) return jaq_ffmpeg_missing("av_new_packet");
    if (!(jaq_ffmpeg.av_opt_set = (__typeof__(&av_opt_set))dlsym(handle, "av_opt_set"))) return jaq_ffmpeg_missing("av_opt_set");
    if (!(jaq_ffmpeg.av_packet_alloc = (__typeof__(&av_packet_alloc))dlsym(handle, "av_packet_alloc"))) return jaq_ffmpeg_missing("av_packet_alloc");
    if (!(jaq_ffmpeg.av_packet_free = (__typeof__(&av_packet_free))dlsym(handle, "av_packet_free"))) return jaq_ffmpeg_missing("av_packet_free");
    if (!(jaq_ffmpeg.av_packet_get_side_data = (__typeof__(&av_packet_get_side_data))dlsym(handle, "av_packet_get_side_data"))) return jaq_ffmpeg_missing("av_packet_get_side_data");
    if (!(jaq_ffmpeg.av_packet_unref = (__typeof__(&av_packet_unref))dlsym(handle, "av_packet_unref"))) return jaq_ffmpeg_missing("av_packet_unref");
    if (!(jaq_ffmpeg.av_read_frame = (__typeof__(&av_read_frame))dlsym(handle, "av_read_frame"))) return jaq_ffmpeg_missing("av_read_frame");
    if (!(jaq_ffmpeg.av_rescale_q = (__typeof__(&av_rescale_q))dlsym(handle, "av_rescale_q"))) return jaq_ffmpeg_missing("av_rescale_q");
    if (!(jaq_ffmpeg.av_sample_fmt_is_planar = (__typeof__(&av_sample_fmt_is_planar))dlsym(handle, "av_sample_fmt_is_planar"))) return jaq_ffmpeg_missing("av_sample_fmt_is_planar");
    if (!(jaq_ffmpeg.av_strerror = (__typeof__(&av_strerror))dlsym(handle, "av_strerror"))) return jaq_ffmpeg_missing("av_strerror");
    if (!(jaq_ffmpeg.av_write_frame = (__typeof__(&av_write_frame))dlsym(handle, "av_write_frame"))) return jaq_ffmpeg_missing("av_write_frame");
    if (!(jaq_ffmpeg.av_write_trailer = (__typeof__(&av_write_trailer))dlsym(handle, "av_write_trailer"))) return jaq_ffmpeg_missing("av_write_trailer");
    if (!(jaq_ffmpeg.avcodec_alloc_context3 = (__typeof__(&avcodec_alloc_context3))dlsym(handle, "avcodec_alloc_context3"))) return jaq_ffmpeg_missing("avcodec_alloc_context3");
    if (!(jaq_ffmpeg.avcodec_find_decoder = (__typeof__(&avcodec_find_decoder))dlsym(handle, "avcodec_find_decoder"))) return jaq_ffmpeg_missing("avcodec_find_decoder");
    if (!(jaq_ffmpeg.avcodec_find_decoder_by_name = (__typeof__(&avcodec_find_decoder_by_name))dlsym(handle, "avcodec_find_decoder_by_name"))) return jaq_ffmpeg_missing("avcodec_find_decoder_by_name");
    if (!(jaq_ffmpeg.avcodec_find_encoder = (__typeof__(&avcodec_find_encoder))dlsym(handle, "avcodec_find_encoder"))) return jaq_ffmpeg_missing("avcodec_find_encoder");
    if (!(jaq_ffmpeg.avcodec_find_encoder_by_name = (__typeof__(&avcodec_find_encoder_by_name))dlsym(handle, "avcodec_find_encoder_by_name"))) return jaq_ffmpeg_missing("avcodec_find_encoder_by_name");
    if (!(jaq_ffmpeg.avcodec_flush_buffers = (__typeof__(&avcodec_flush_buffers))dlsym(handle, "avcodec_flush_buffers"))) return jaq_ffmpeg_missing("avcodec_flush_buffers");
    if (!(jaq_ffmpeg.avcodec_free_context = (__typeof__(&avcodec_free_context))dlsym(handle, "avcodec_free_context"))) return jaq_ffmpeg_missing("avcodec_free_context");
    if (!(jaq_ffmpeg.avcodec_get_name = (__typeof__(&avcodec_get_name))dlsym(handle, "avcodec_get_name"))) return jaq_ffmpeg_missing("avcodec_get_name");
    if (!(jaq_ffmpeg.avcodec_open2 = (__typeof__(&avcodec_open2))dlsym(handle, "avcodec_open2"))) return jaq_ffmpeg_missing("avcodec_open2");
    if (!(jaq_ffmpeg.avcodec_receive_frame = (__typeof__(&avcodec_receive_frame))dlsym(handle, "avcodec_receive_frame"))) return jaq_ffmpeg_missing("avcodec_receive_frame");
    if (!(jaq_ffmpeg.avcodec_receive_packet = (__typeof__(&avcodec_receive_packet))dlsym(handle, "avcodec_receive_packet"))) return jaq_ffmpeg_missing("avcodec_receive_packet");
    if (!(jaq_ffmpeg.avcodec_send_frame = (__typeof__(&avcodec_send_frame))dlsym(handle, "avcodec_send_frame"))) return jaq_ffmpeg_missing("avcodec_send_frame");
    if (!(jaq_ffmpeg.avcodec_send_packet = (__typeof__(&avcodec_send_packet))dlsym(handle, "avcodec_send_packet"))) return jaq_ffmpeg_missing("avcodec_send_packet");
    if (!(jaq_ffmpeg.avformat_alloc_output_context2 = (__typeof__(&avformat_alloc_output_context2))dlsym(handle, "avformat_alloc_output_context2"))) return jaq_ffmpeg_missing("avformat_alloc_output_context2");
    if (!(jaq_ffmpeg.avformat_close_input = (__typeof__(&avformat_close_input))dlsym(handle, "avformat_close_input"))) return jaq_ffmpeg_missing("avformat_close_input");
    if (!(jaq_ffmpeg.avformat_find_stream_info = (__typeof__(&avformat_find_stream_info))dlsym(handle, "avformat_find_stream_info"))) return jaq_ffmpeg_missing("avformat_find_stream_info");
    if (!(jaq_ffmpeg.avformat_free_context = (__typeof__(&avformat_free_context))dlsym(handle, "avformat_free_context"))) return jaq_ffmpeg_missing("avformat_free_context");
    if (!(jaq_ffmpeg.avformat_new_stream = (__typeof__(&avformat_new_stream))dlsym(handle, "avformat_new_stream"))) return jaq_ffmpeg_missing("avformat_new_stream");
    if (!(jaq_ffmpeg.avformat_open_input = (__typeof__(&avformat_open_input))dlsym(handle, "avformat_open_input"))) return jaq_ffmpeg_missing("avformat_open_input");
    if (!(jaq_ffmpeg.avformat_write_header = (__typeof__(&avformat_write_header))dlsym(handle, "avformat_write_header"))) return jaq_ffmpeg_missing("avformat_write_header");
    if (!(jaq_ffmpeg.avio_closep = (__typeof__(&avio_closep))dlsym(handle, "avio_closep"))) return jaq_ffmpeg_missing("avio_closep");
    if (!(jaq_ffmpeg.avio_flush = (__typeof__(&avio_flush))dlsym(handle, "avio_flush"))) return jaq_ffmpeg_missing("avio_flush");
    if (!(jaq_ffmpeg.avio_open = (__typeof__(&avio_open))dlsym(handle, "avio_open"))) return jaq_ffmpeg_missing("avio_open");
    return 0;
}

static int jaq_ffmpeg_failed;

static void jaq_ffmpeg_open(void) {
    jaq_ffmpeg_status = jaq_ffmpeg_resolve();
    __atomic_store_n(&jaq_ffmpeg_failed, jaq_ffmpeg_status != 0, __ATOMIC_RELEASE);
}

int jaq_ffmpeg_load(void) {
    pthread_once(&jaq_ffmpeg_once, jaq_ffmpeg_open);
    return jaq_ffmpeg_status;
}

const char *jaq_ffmpeg_error(void) {
    return jaq_ffmpeg_load() == 0 ? NULL : jaq_ffmpeg_message;
}

const char *jaq_ffmpeg_failure(void) {
    return __atomic_load_n(&jaq_ffmpeg_failed, __ATOMIC_ACQUIRE) ? jaq_ffmpeg_message : NULL;
}

int av_channel_layout_copy(AVChannelLayout *dst, const AVChannelLayout *src) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_channel_layout_copy(dst, src) : AVERROR(ENOSYS);
}

void av_channel_layout_default(AVChannelLayout *ch_layout, int nb_channels) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.av_channel_layout_default(ch_layout, nb_channels);
}

void av_dict_free(AVDictionary **m) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.av_dict_free(m);
}

int av_dict_set(AVDictionary **pm, const char *key, const char *value, int flags) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_dict_set(pm, key, value, flags) : AVERROR(ENOSYS);
}

int av_find_best_stream(AVFormatContext *ic, enum AVMediaType type, int wanted_stream_nb, int related_stream, const AVCodec **decoder_ret, int flags) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_find_best_stream(ic, type, wanted_stream_nb, related_stream, decoder_ret, flags) : AVERROR(ENOSYS);
}

AVFrame *av_frame_alloc(void) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_frame_alloc() : NULL;
}

void av_frame_free(AVFrame **frame) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.av_frame_free(frame);
}

int av_frame_get_buffer(AVFrame *frame, int align) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_frame_get_buffer(frame, align) : AVERROR(ENOSYS);
}

int av_frame_make_writable(AVFrame *frame) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_frame_make_writable(frame) : AVERROR(ENOSYS);
}

void av_frame_unref(AVFrame *frame) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.av_frame_unref(frame);
}

int av_get_bytes_per_sample(enum AVSampleFormat sample_fmt) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_get_bytes_per_sample(sample_fmt) : 0;
}

void av_log_set_level(int level) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.av_log_set_level(level);
}

void *av_mallocz(size_t size) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_mallocz(size) : NULL;
}

int av_new_packet(AVPacket *pkt, int size) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_new_packet(pkt, size) : AVERROR(ENOSYS);
}

int av_opt_set(void *obj, const char *name, const char *val, int search_flags) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_opt_set(obj, name, val, search_flags) : AVERROR(ENOSYS);
}

AVPacket *av_packet_alloc(void) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_packet_alloc() : NULL;
}

void av_packet_free(AVPacket **pkt) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.av_packet_free(pkt);
}

uint8_t *av_packet_get_side_data(const AVPacket *pkt, enum AVPacketSideDataType type, size_t *size) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_packet_get_side_data(pkt, type, size) : NULL;
}

void av_packet_unref(AVPacket *pkt) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.av_packet_unref(pkt);
}

int av_read_frame(AVFormatContext *s, AVPacket *pkt) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_read_frame(s, pkt) : AVERROR(ENOSYS);
}

int64_t av_rescale_q(int64_t a, AVRational bq, AVRational cq) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_rescale_q(a, bq, cq) : 0;
}

int av_sample_fmt_is_planar(enum AVSampleFormat sample_fmt) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_sample_fmt_is_planar(sample_fmt) : 0;
}

int av_strerror(int errnum, char *errbuf, size_t errbuf_size) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_strerror(errnum, errbuf, errbuf_size) : AVERROR(ENOSYS);
}

int av_write_frame(AVFormatContext *s, AVPacket *pkt) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_write_frame(s, pkt) : AVERROR(ENOSYS);
}

int av_write_trailer(AVFormatContext *s) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.av_write_trailer(s) : AVERROR(ENOSYS);
}

AVCodecContext *avcodec_alloc_context3(const AVCodec *codec) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_alloc_context3(codec) : NULL;
}

const AVCodec *avcodec_find_decoder(enum AVCodecID id) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_find_decoder(id) : NULL;
}

const AVCodec *avcodec_find_decoder_by_name(const char *name) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_find_decoder_by_name(name) : NULL;
}

const AVCodec *avcodec_find_encoder(enum AVCodecID id) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_find_encoder(id) : NULL;
}

const AVCodec *avcodec_find_encoder_by_name(const char *name) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_find_encoder_by_name(name) : NULL;
}

void avcodec_flush_buffers(AVCodecContext *avctx) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.avcodec_flush_buffers(avctx);
}

void avcodec_free_context(AVCodecContext **avctx) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.avcodec_free_context(avctx);
}

const char *avcodec_get_name(enum AVCodecID id) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_get_name(id) : NULL;
}

int avcodec_open2(AVCodecContext *avctx, const AVCodec *codec, AVDictionary **options) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_open2(avctx, codec, options) : AVERROR(ENOSYS);
}

int avcodec_receive_frame(AVCodecContext *avctx, AVFrame *frame) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_receive_frame(avctx, frame) : AVERROR(ENOSYS);
}

int avcodec_receive_packet(AVCodecContext *avctx, AVPacket *avpkt) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_receive_packet(avctx, avpkt) : AVERROR(ENOSYS);
}

int avcodec_send_frame(AVCodecContext *avctx, const AVFrame *frame) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_send_frame(avctx, frame) : AVERROR(ENOSYS);
}

int avcodec_send_packet(AVCodecContext *avctx, const AVPacket *avpkt) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avcodec_send_packet(avctx, avpkt) : AVERROR(ENOSYS);
}

int avformat_alloc_output_context2(AVFormatContext **ctx, const AVOutputFormat *oformat, const char *format_name, const char *filename) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avformat_alloc_output_context2(ctx, oformat, format_name, filename) : AVERROR(ENOSYS);
}

void avformat_close_input(AVFormatContext **s) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.avformat_close_input(s);
}

int avformat_find_stream_info(AVFormatContext *ic, AVDictionary **options) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avformat_find_stream_info(ic, options) : AVERROR(ENOSYS);
}

void avformat_free_context(AVFormatContext *s) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.avformat_free_context(s);
}

AVStream *avformat_new_stream(AVFormatContext *s, const AVCodec *c) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avformat_new_stream(s, c) : NULL;
}

int avformat_open_input(AVFormatContext **ps, const char *url, const AVInputFormat *fmt, AVDictionary **options) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avformat_open_input(ps, url, fmt, options) : AVERROR(ENOSYS);
}

int avformat_write_header(AVFormatContext *s, AVDictionary **options) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avformat_write_header(s, options) : AVERROR(ENOSYS);
}

int avio_closep(AVIOContext **s) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avio_closep(s) : AVERROR(ENOSYS);
}

void avio_flush(AVIOContext *s) {
    if (jaq_ffmpeg_load() == 0) jaq_ffmpeg.avio_flush(s);
}

int avio_open(AVIOContext **s, const char *url, int flags) {
    return jaq_ffmpeg_load() == 0 ? jaq_ffmpeg.avio_open(s, url, flags) : AVERROR(ENOSYS);
}
