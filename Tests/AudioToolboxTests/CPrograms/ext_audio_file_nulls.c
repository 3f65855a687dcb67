/*
 * ext_audio_file_nulls.c — ExtAudioFile's C functions called with NULL and dead pointers, as a
 * careless C caller would; prints name=result pairs (CExtAudioFileNullTests reads them).
 *   ext_audio_file_nulls IN.wav OUT.caf
 */
#include <AudioToolbox/AudioToolbox.h>
#include <stdio.h>
#include <string.h>

static CFURLRef URL(const char *path) {
    return CFURLCreateFromFileSystemRepresentation(NULL, (const UInt8 *)path, (CFIndex)strlen(path), false);
}

int main(int argc, char *argv[]) {
    if (argc < 3) return 2;
    CFURLRef in = URL(argv[1]), out = URL(argv[2]);
    ExtAudioFileRef file = NULL;
    printf("open_null_out=%d ", (int)ExtAudioFileOpenURL(in, NULL));
    printf("open_null_url=%d ", (int)ExtAudioFileOpenURL(NULL, &file));
    printf("open_null_url_ref_cleared=%d ", file == NULL);
    AudioStreamBasicDescription format;
    memset(&format, 0, sizeof format);
    printf("create_null_format=%d ", (int)ExtAudioFileCreateWithURL(out, kAudioFileCAFType, NULL, NULL, kAudioFileFlags_EraseFile, &file));
    printf("create_zero_channels=%d ", (int)ExtAudioFileCreateWithURL(out, kAudioFileCAFType, &format, NULL, kAudioFileFlags_EraseFile, &file));
    printf("wrap_null=%d ", (int)ExtAudioFileWrapAudioFileID(NULL, false, &file));
    printf("dispose_null=%d ", (int)ExtAudioFileDispose(NULL));
    UInt32 frames = 16;
    printf("read_null_ref=%d ", (int)ExtAudioFileRead(NULL, &frames, NULL));

    if (ExtAudioFileOpenURL(in, &file) != noErr) return 1;
    AudioBufferList list;
    char buffer[64];
    list.mNumberBuffers = 1;
    list.mBuffers[0].mNumberChannels = 2;
    list.mBuffers[0].mDataByteSize = sizeof buffer;
    list.mBuffers[0].mData = buffer;
    printf("read_null_frames=%d ", (int)ExtAudioFileRead(file, NULL, &list));
    printf("read_null_list=%d ", (int)ExtAudioFileRead(file, &frames, NULL));
    list.mBuffers[0].mData = NULL;
    printf("read_null_data=%d ", (int)ExtAudioFileRead(file, &frames, &list));
    printf("write_null_list=%d ", (int)ExtAudioFileWrite(file, 16, NULL));
    printf("async_null_list=%d ", (int)ExtAudioFileWriteAsync(file, 16, NULL));
    printf("tell_null=%d ", (int)ExtAudioFileTell(file, NULL));
    UInt32 size = sizeof format;
    printf("get_null_size=%d ", (int)ExtAudioFileGetProperty(file, kExtAudioFileProperty_FileDataFormat, NULL, &format));
    printf("get_null_data=%d ", (int)ExtAudioFileGetProperty(file, kExtAudioFileProperty_FileDataFormat, &size, NULL));
    printf("set_null_data=%d ", (int)ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, sizeof format, NULL));
    printf("info_null_outs=%d ", (int)ExtAudioFileGetPropertyInfo(file, kExtAudioFileProperty_FileDataFormat, NULL, NULL));
    printf("dispose=%d ", (int)ExtAudioFileDispose(file));
    printf("dispose_again=%d ", (int)ExtAudioFileDispose(file));
    printf("seek_dead=%d\n", (int)ExtAudioFileSeek(file, 0));
    CFRelease(in);
    CFRelease(out);
    return 0;
}
