import CAudioToolbox

/// Tells a stream's format from its first bytes (the type hint settles what the bytes
/// cannot: a stream that starts with junk before its first ADTS or MP3 frame).
enum StreamSniffer {
    /// The parser for the stream `input` starts, nil while too few bytes have arrived.
    /// - Throws: 'typ?' for a stream of no type jaq parses.
    static func parser(for input: StreamBuffer, hint: AudioFileTypeID) throws(AudioToolboxError) -> StreamFormatParser? {
        guard input.count >= 12 else {
            // Short streams of frames are told as soon as a header shows.
            if input.count >= 4, input[0] == 0xFF, input[1] & 0xE0 == 0xE0 { return frameParser(input, hint: hint) }
            return nil
        }
        switch (input.tag(0), input.tag(8)) {
        case ("caff", _): return ChunkStreamParser(CAFChunkSyntax())
        case ("RIFF", "WAVE"): return ChunkStreamParser(WAVEChunkSyntax())
        case ("FORM", "AIFF"), ("FORM", "AIFC"): return ChunkStreamParser(AIFFChunkSyntax())
        default: break
        }
        if ["ftyp", "moov", "mdat", "free", "wide", "skip"].contains(input.tag(4)) { return ChunkStreamParser(MP4ChunkSyntax()) }
        if input[0] == 0x49, input[1] == 0x44, input[2] == 0x33 {  // "ID3": MP3, or ADTS when the caller says so
            return FrameStreamParser(kind: hint == kAudioFileAAC_ADTSType ? .adts : .mp3)
        }
        if input[0] == 0xFF, input[1] & 0xE0 == 0xE0 { return frameParser(input, hint: hint) }
        switch hint {
        case kAudioFileAAC_ADTSType: return FrameStreamParser(kind: .adts)
        case kAudioFileMP3Type, kAudioFileMP2Type, kAudioFileMP1Type: return FrameStreamParser(kind: .mp3)
        default:
            throw AudioToolboxError(kAudioFileStreamError_UnsupportedFileType, "the stream's first bytes are of no type jaq parses")
        }
    }

    /// ADTS (layer bits 00) or MPEG audio, from the sync word.
    private static func frameParser(_ input: StreamBuffer, hint _: AudioFileTypeID) -> StreamFormatParser {
        FrameStreamParser(kind: input[1] & 0x06 == 0 ? .adts : .mp3)
    }
}
