import AudioToolbox
import Foundation
import Testing

/// The codec of an MPEG-4 file's stream, as libavformat names it, becomes Apple's format ID
/// (AudioCodec's `Codec` between them): every codec jaq reads packets of in MPEG-4, and 'fmt?'
/// for one it has none for.
extension AudioFilePacketTests {
    /// MPEG-4 files ffmpeg writes with FLAC, Opus and MP3: the format ID of the codec, the
    /// packets ffprobe lists.
    @Test(arguments: [(["-c:a", "flac", "-strict", "experimental"], kAudioFormatFLAC), (["-c:a", "libopus", "-b:a", "96k"], kAudioFormatOpus),
                      (["-c:a", "libmp3lame", "-b:a", "128k"], kAudioFormatMPEGLayer3)])
    func mpeg4FromFFmpegReadsAsItsCodec(_ codec: [String], _ formatID: AudioFormatID) throws {
        let path = try makeFile("codec.mp4", codec: codec, rate: 48000)
        let source = try load(path)
        #expect(source.format.mFormatID == formatID,
                "\(codec[1]) in MP4 reads as \(fourCharacterCode(source.format.mFormatID)), not \(fourCharacterCode(formatID))")
        #expect(source.format.mChannelsPerFrame == 2 && source.format.mSampleRate == 48000)
        expectSamePackets(source.read, try probePackets(path), codec[1])
    }

    /// An MPEG-4 file of AC-3, a codec jaq has no packet reader for: 'fmt?', not 'dta?' or a trap.
    @Test func mpeg4OfACodecWithoutAPacketReaderIsUnsupportedDataFormat() throws {
        let path = try makeFile("ac3.mp4", codec: ["-c:a", "ac3"], rate: 48000)
        #expect(try probeStream(path).codec == "ac3")
        let (status, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, kAudioFileUnsupportedDataFormatError, "AC-3 in MP4")
        if let file { AudioFileClose(file) }
    }
}
