@testable import AudioToolbox
import Foundation
import JackTestSupport
import SoundFile
import Testing

/// One container writer under Audio File Services and take files: the same format table, the
/// same create path, the same sample transfer, the same 32-bit size limit (lowered here, for
/// the files of one scratch directory, so that passing it takes a megabyte, not 4 GiB).
@Suite struct ContainerFileTests {
    static let limit: Int64 = 48000 * 4  // one second of 16-bit stereo

    /// Runs `body` with the audio limit of files under `scratch` lowered to `limit` bytes.
    func withLoweredLimit(_ scratch: Scratch, _ body: () throws -> Void) rethrows {
        ContainerFile.testLimits.withLock { $0[scratch.path + "/"] = Self.limit }
        defer { _ = ContainerFile.testLimits.withLock { $0.removeValue(forKey: scratch.path + "/") } }
        try body()
    }

    /// libsndfile would write a WAVE's sizes modulo 4 GiB (a 4.02 GiB file whose header says
    /// 24 MiB: measured with libsndfile 1.2.0); AudioFileWritePackets writes what fits and
    /// returns 'off?' for the rest, and the file opens with every packet that was written.
    @Test(arguments: [kAudioFileWAVEType, kAudioFileAIFFType])
    func aWriteThatWouldPassA32BitHeadersLimitWritesWhatFitsAndReturnsOff(_ type: AudioFileTypeID) throws {
        let scratch = try Scratch()
        let url = scratch.url(type == kAudioFileWAVEType ? "long.wav" : "long.aif")
        let bigEndian = type == kAudioFileAIFFType
        let format = Encoding.s16.format(channels: 2, rate: 48000, bigEndian: bigEndian)
        let signal = Encoding.s16.signal(frames: 72000, channels: 2, bigEndian: bigEndian)
        try withLoweredLimit(scratch) {
            let (status, file) = AF.create(url, type, format)
            expectStatus(status, noErr, "create")
            let (written, packets) = AF.write(file, signal, at: 0, bytesPerPacket: 4)
            expectStatus(written, kAudioFileDoesNotAllow64BitDataSizeError, "the write past the limit")
            #expect(packets == 48000, "the packets that fit are written")
            let (again, none) = AF.write(file, Array(signal[0..<400]), at: 48000, bytesPerPacket: 4)
            expectStatus(again, kAudioFileDoesNotAllow64BitDataSizeError, "a write at the limit")
            #expect(none == 0)
            expectStatus(AudioFileClose(file!), noErr, "close")
        }
        let (opened, file) = AF.open(url)
        expectStatus(opened, noErr, "open")
        defer { AudioFileClose(file!) }
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 48000)
        let (read, bytes) = AF.read(file, from: 0, packets: 48000, bytesPerPacket: 4)
        expectStatus(read, noErr, "read")
        #expect(bytes == Array(signal[0..<(48000 * 4)]), "the packets written are the file's")
    }

    /// RF64, Wave64 and CAF count in 64 bits: no limit.
    @Test func rf64AndCAFFilesHaveNoLimit() throws {
        let scratch = try Scratch()
        let format = Encoding.s16.format(channels: 2, rate: 48000, bigEndian: false)
        let signal = Encoding.s16.signal(frames: 72000, channels: 2, bigEndian: false)
        try withLoweredLimit(scratch) {
            for (type, name) in [(kAudioFileRF64Type, "long.rf64"), (kAudioFileCAFType, "long.caf"), (kAudioFileWave64Type, "long.w64")] {
                let (status, file) = AF.create(scratch.url(name), type, format)
                expectStatus(status, noErr, "create \(name)")
                let (written, packets) = AF.write(file, signal, at: 0, bytesPerPacket: 4)
                expectStatus(written, noErr, name)
                #expect(packets == 72000)
                expectStatus(AudioFileClose(file!), noErr, "close")
            }
        }
    }

    /// A `wav` take grows into RF64 instead (libsndfile's RF64 with automatic downgrade: a
    /// plain WAVE with a JUNK chunk below 4 GiB); an `aiff` take stops at the limit with an
    /// error naming the file, its frames before the limit intact.
    @Test func takeFilesShareTheLimitAndWavTakesGrowIntoRF64() throws {
        let scratch = try Scratch()
        let signal = Encoding.s16.signal(frames: 72000, channels: 2, bigEndian: false)
        try withLoweredLimit(scratch) {
            let wav = try AudioTakeFile(path: scratch.path("take.wav"), format: .init(name: "wav", bits: "16"), sampleRate: 48000, channelCount: 2)
            try signal.withUnsafeBytes { try wav.write($0, frames: 72000) }
            try wav.close()
            let aiff = try AudioTakeFile(path: scratch.path("take.aif"), format: .init(name: "aiff", bits: "16"), sampleRate: 48000, channelCount: 2)
            let bigEndian = Encoding.s16.signal(frames: 72000, channels: 2, bigEndian: true)
            #expect {
                try bigEndian.withUnsafeBytes { try aiff.write($0, frames: 72000) }
            } throws: { error in
                (error as? AudioTakeFileError)?.description.contains("take.aif: AIFF files hold at most") == true
            }
            #expect(aiff.framesWritten == 48000)
            try aiff.close()
        }
        let wav = try SoundFile(path: scratch.path("take.wav"), mode: .read)
        #expect(wav.info.frameCount == 72000, "the limit does not apply")
        try wav.close()
        let header = try Data(contentsOf: scratch.url("take.wav")).prefix(16)
        #expect(String(decoding: header[0..<4], as: UTF8.self) == "RIFF", "below 4 GiB an RF64 take is written as WAVE")
        #expect(String(decoding: header[12..<16], as: UTF8.self) == "JUNK", "with the room for RF64's ds64 chunk")
        let aiff = try SoundFile(path: scratch.path("take.aif"), mode: .read)
        #expect(aiff.info.frameCount == 48000)
        try aiff.close()
    }

    /// Take files and AudioFileCreateWithURL store the same samples the same way: a take of
    /// each format and an AudioFile of the same container and layout have equal audio bytes
    /// (CAF little-endian, AIFF big-endian, FLAC through libsndfile's encoder alike).
    @Test(arguments: [("wav", "24", kAudioFileWAVEType), ("caf", "float", kAudioFileCAFType),
                      ("aiff", "16", kAudioFileAIFFType), ("flac", "24", kAudioFileFLACType), ("w64", "32", kAudioFileWave64Type)])
    func aTakeAndAnAudioFileOfTheSameFormatHoldTheSameAudio(_ name: String, _ bits: String, _ type: AudioFileTypeID) throws {
        let scratch = try Scratch()
        let format = try AudioTakeFile.Format(name: name, bits: bits)
        let encoding: Encoding = switch bits { case "16": .s16; case "24": .s24; case "32": .s32; default: .f32 }
        let signal = encoding.signal(frames: 9000, channels: 2, bigEndian: format.bigEndian, overRange: false)
        let take = try AudioTakeFile(path: scratch.path("take.\(format.fileExtension)"), format: format, sampleRate: 48000, channelCount: 2)
        try signal.withUnsafeBytes { try take.write($0, frames: 9000) }
        try take.close()
        let asbd = encoding.format(channels: 2, rate: 48000, bigEndian: format.bigEndian)
        let made = AF.create(scratch.url("api.\(format.fileExtension)"), type, asbd)
        expectStatus(made.0, noErr, "create")
        expectStatus(AF.write(made.1, signal, at: 0, bytesPerPacket: Int(asbd.mBytesPerPacket)).0, noErr, "write")
        expectStatus(AudioFileClose(made.1!), noErr, "close")
        var audio: [[UInt8]] = []
        for file in ["take", "api"] {
            let (status, opened) = AF.open(scratch.url("\(file).\(format.fileExtension)"))
            expectStatus(status, noErr, "open \(file)")
            let dataFormat = try #require(AF.property(opened, kAudioFilePropertyDataFormat, AudioStreamBasicDescription.self).1)
            audio.append(AF.read(opened, from: 0, packets: 9000, bytesPerPacket: Int(dataFormat.mBytesPerPacket)).1)
            AudioFileClose(opened!)
        }
        #expect(audio[0].count == 9000 * Int(asbd.mBytesPerPacket) && audio[1].count == audio[0].count)
        let apart = audio[0].indices.first { audio[0][$0] != audio[1][$0] }
        #expect(apart == nil, "the take and the AudioFile differ from byte \(apart ?? 0)")
        let changed = audio[0].indices.first { audio[0][$0] != signal[$0] }
        #expect(changed == nil, "the samples written (FLAC: decoded exactly) differ from byte \(changed ?? 0)")
    }
}
