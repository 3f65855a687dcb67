@testable import AudioToolbox
import Foundation
import Testing
import JackTestSupport
import QueueCore

/// Every bad input returns its result code, never a crash.
@Suite struct AudioFileErrorTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    private let stereo16 = Encoding.s16.format(channels: 2, bigEndian: false)

    // MARK: Opening

    @Test func openingMissingFilesDirectoriesAndNonAudio() throws {
        expectStatus(AF.open(scratch.url("missing.wav")).0, kAudioFileFileNotFoundError, "missing file")
        expectStatus(AF.open(scratch.url("no/such/dir/x.wav")).0, kAudioFileFileNotFoundError, "missing directory")
        expectStatus(AF.open(scratch.url).0, kAudio_BadFilePathError, "a directory")

        let text = scratch.url("notes.wav")
        try Data("These are notes, not audio. They go on for a while to fill a header.".utf8).write(to: text)
        expectStatus(AF.open(text).0, kAudioFileUnsupportedFileTypeError, "text")
        let empty = scratch.url("empty.aiff")
        try Data().write(to: empty)
        expectStatus(AF.open(empty).0, kAudioFileUnsupportedFileTypeError, "empty file")
        // BW64 (RF64's successor) is a type libsndfile does not read.
        let bw64 = scratch.url("bw64.wav")
        AF.makeFile(bw64, kAudioFileRF64Type, .s16, channels: 2, bigEndian: false, frames: 10)
        var bytes = try Data(contentsOf: bw64)
        bytes.replaceSubrange(0..<4, with: Array("BW64".utf8))
        try bytes.write(to: bw64)
        expectStatus(AF.open(bw64).0, kAudioFileUnsupportedFileTypeError, "BW64")
        let noise = scratch.url("noise.caf")
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }).write(to: noise)
        expectStatus(AF.open(noise).0, kAudioFileUnsupportedFileTypeError, "bytes of no known type")
    }

    @Test(arguments: [("wav", kAudioFileWAVEType, 30), ("aiff", kAudioFileAIFFType, 40), ("caf", kAudioFileCAFType, 30),
                      ("w64", kAudioFileWave64Type, 50), ("rf64", kAudioFileRF64Type, 40), ("au", kAudioFileNextType, 12)])
    func truncatedHeadersAreInvalidFiles(_ name: String, _ type: AudioFileTypeID, _ keptBytes: Int) throws {
        let url = scratch.url("cut.\(name)")
        AF.makeFile(url, type, .s16, channels: 2, bigEndian: type == kAudioFileAIFFType || type == kAudioFileNextType, frames: 100)
        let whole = try Data(contentsOf: url)
        try whole.prefix(keptBytes).write(to: url)
        expectStatus(AF.open(url).0, kAudioFileInvalidFileError, "\(name) cut to \(keptBytes) bytes")
    }

    @Test func corruptHeadersAreInvalidFiles() throws {
        // A WAVE whose fmt chunk says 0 channels.
        let url = scratch.url("zero-channels.wav")
        AF.makeFile(url, kAudioFileWAVEType, .s16, channels: 2, bigEndian: false, frames: 100)
        var bytes = try Data(contentsOf: url)
        bytes[22] = 0
        bytes[23] = 0
        try bytes.write(to: url)
        expectStatus(AF.open(url).0, kAudioFileInvalidFileError, "zero channels")

        let flac = scratch.url("cut.flac")
        AF.makeFile(flac, kAudioFileFLACType, .s16, channels: 2, bigEndian: false, frames: 1000)
        try Data(contentsOf: flac).prefix(20).write(to: flac)
        expectStatus(AF.open(flac).0, kAudioFileInvalidFileError, "FLAC cut in its STREAMINFO")
    }

    @Test func writeAccessToAFileLibsndfileCanOnlyRead() throws {
        let url = scratch.url("read-only-type.flac")
        AF.makeFile(url, kAudioFileFLACType, .s16, channels: 1, bigEndian: false, frames: 100)
        expectStatus(AF.open(url, .readWritePermission).0, kAudioFileOperationNotSupportedError, "FLAC opened read-write")
        expectStatus(AF.open(url, .readPermission).0, noErr, "FLAC opened read-only")
    }

    // MARK: Creating

    @Test func creatingOverAnExistingFileWithoutEraseFile() throws {
        let url = scratch.url("keep.wav")
        let original = AF.makeFile(url, kAudioFileWAVEType, .s16, channels: 2, bigEndian: false, frames: 64)
        let before = try Data(contentsOf: url)
        expectStatus(AF.create(url, kAudioFileWAVEType, stereo16, flags: []).0, dupFNErr, "create without .eraseFile")
        #expect(try Data(contentsOf: url) == before, "the existing file is untouched")
        let (status, file) = AF.create(url, kAudioFileWAVEType, stereo16, flags: .eraseFile)
        expectStatus(status, noErr, "create with .eraseFile")
        AudioFileClose(file!)
        #expect(try Data(contentsOf: url).count < before.count)
        _ = original
    }

    @Test func creatingInMissingDirectoriesAndOverDirectories() throws {
        expectStatus(AF.create(scratch.url("nowhere/x.wav"), kAudioFileWAVEType, stereo16).0, kAudioFileFileNotFoundError, "missing parent")
        expectStatus(AF.create(scratch.url, kAudioFileWAVEType, stereo16).0, kAudio_BadFilePathError, "a directory, erase")
        expectStatus(AF.create(scratch.url, kAudioFileWAVEType, stereo16, flags: []).0, kAudio_BadFilePathError, "a directory")
        let file = scratch.url("plain")
        try Data("x".utf8).write(to: file)
        expectStatus(AF.create(file.appendingPathComponent("x.wav"), kAudioFileWAVEType, stereo16).0,
                     kAudio_BadFilePathError, "a file used as a directory")
    }

    @Test func unknownAndUnwritableFileTypes() {
        for type in [AudioFileTypeID(0x7878_7878), kAudioFileBW64Type, kAudioFile3GPType, kAudioFileAMRType, kAudioFileSoundDesigner2Type] {
            let url = scratch.url("typed")
            expectStatus(AF.create(url, type, stereo16).0, kAudioFileUnsupportedFileTypeError, fourCharacterCode(OSStatus(bitPattern: type)))
            #expect(!FileManager.default.fileExists(atPath: url.path), "nothing is created for an unwritable type")
        }
        // MPEG-4 and ADTS hold compressed packets (AudioFilePacketTests), not linear PCM.
        for type in [kAudioFileMPEG4Type, kAudioFileM4AType, kAudioFileAAC_ADTSType] {
            let url = scratch.url("typed")
            expectStatus(AF.create(url, type, stereo16).0, kAudioFileUnsupportedDataFormatError, fourCharacterCode(OSStatus(bitPattern: type)))
            #expect(!FileManager.default.fileExists(atPath: url.path), "nothing is created for a format the type cannot hold")
        }
    }

    /// Formats a container cannot hold, and ASBDs no container can.
    static let unsupported: [(AudioFileTypeID, AudioStreamBasicDescription, String)] = {
        func with(_ format: AudioStreamBasicDescription, _ change: (inout AudioStreamBasicDescription) -> Void) -> AudioStreamBasicDescription {
            var format = format
            change(&format)
            return format
        }
        let s16 = Encoding.s16.format(channels: 2, bigEndian: false)
        let s16BE = Encoding.s16.format(channels: 2, bigEndian: true)
        return [
            (kAudioFileWAVEType, s16BE, "big-endian WAVE"),
            (kAudioFileWAVEType, Encoding.s8.format(channels: 1, bigEndian: false), "signed 8-bit WAVE"),
            (kAudioFileRF64Type, Encoding.f32.format(channels: 1, bigEndian: true), "big-endian float RF64"),
            (kAudioFileWave64Type, Encoding.s8.format(channels: 1, bigEndian: false), "signed 8-bit W64"),
            (kAudioFileAIFFType, s16, "little-endian AIFF"),
            (kAudioFileAIFFType, Encoding.f32.format(channels: 2, bigEndian: true), "float AIFF"),
            (kAudioFileAIFFType, Encoding.ulaw.format(channels: 1, bigEndian: false), "µ-law AIFF"),
            (kAudioFileAIFFType, Encoding.u8.format(channels: 1, bigEndian: false), "unsigned AIFF"),
            (kAudioFileAIFCType, Encoding.s8.format(channels: 1, bigEndian: true), "8-bit AIFC"),
            (kAudioFileAIFCType, Encoding.f32.format(channels: 1, bigEndian: false), "little-endian float AIFC"),
            (kAudioFileAIFCType, Encoding.s24.format(channels: 1, bigEndian: false), "little-endian 24-bit AIFC"),
            (kAudioFileCAFType, Encoding.u8.format(channels: 1, bigEndian: false), "unsigned CAF"),
            (kAudioFileNextType, s16, "little-endian NeXT"),
            (kAudioFileFLACType, Encoding.s32.format(channels: 2, bigEndian: false), "32-bit FLAC"),
            (kAudioFileFLACType, Encoding.f32.format(channels: 2, bigEndian: false), "float FLAC"),
            (kAudioFileFLACType, Encoding.s16.format(channels: 9, bigEndian: false), "9-channel FLAC"),
            (kAudioFileOggVorbisType, Encoding.s24.format(channels: 2, bigEndian: false), "24-bit Vorbis"),
            (kAudioFileOggOpusType, Encoding.f32.format(channels: 2, rate: 44100, bigEndian: false), "Opus at 44.1 kHz"),
            (kAudioFileMP3Type, Encoding.s16.format(channels: 3, bigEndian: false), "3-channel MP3"),
            (kAudioFileMP3Type, Encoding.s16.format(channels: 2, rate: 96000, bigEndian: false), "MP3 at 96 kHz"),
            (kAudioFileWAVEType, with(s16) { $0.mFormatFlags |= kAudioFormatFlagIsNonInterleaved }, "non-interleaved"),
            (kAudioFileWAVEType, with(s16) { $0.mBytesPerFrame = 8; $0.mBytesPerPacket = 8 }, "16 bits in 4-byte slots"),
            (kAudioFileWAVEType, with(s16) { $0.mBitsPerChannel = 20 }, "20 bits in 2 bytes"),
            (kAudioFileWAVEType, with(s16) { $0.mChannelsPerFrame = 0 }, "no channels"),
            (kAudioFileWAVEType, with(s16) { $0.mSampleRate = 0 }, "rate 0"),
            (kAudioFileWAVEType, with(s16) { $0.mSampleRate = 22050.5 }, "fractional rate"),
            (kAudioFileWAVEType, with(s16) { $0.mSampleRate = .nan }, "NaN rate"),
            (kAudioFileWAVEType, with(s16) { $0.mFramesPerPacket = 2 }, "2 frames per packet"),
            (kAudioFileWAVEType, with(s16) { $0.mBytesPerPacket = 8 }, "packet and frame sizes differ"),
            (kAudioFileWAVEType, with(s16) { $0.mFormatFlags = kAudioFormatFlagIsPacked }, "unsigned 16-bit"),
            (kAudioFileWAVEType, with(s16) { $0.mFormatFlags = kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked }, "16-bit float"),
            (kAudioFileFLACType, with(s16) { $0.mFormatID = kAudioFormatFLAC }, "FLAC packets"),
            (kAudioFileCAFType, with(s16) { $0.mFormatID = kAudioFormatMPEG4AAC }, "AAC packets"),
            (kAudioFileCAFType, with(s16) { $0.mFormatID = 0x7878_7878 }, "unknown format ID"),
        ]
    }()

    @Test(arguments: unsupported.indices)
    func formatsAContainerCannotHoldAreFmt(_ index: Int) throws {
        let (type, format, what) = Self.unsupported[index]
        let url = scratch.url("format")
        try Data("keep".utf8).write(to: url)
        expectStatus(AF.create(url, type, format).0, kAudioFileUnsupportedDataFormatError, what)
        #expect(try Data(contentsOf: url) == Data("keep".utf8), "\(what): a rejected format leaves an existing file alone")
    }

    // MARK: Reading and writing

    @Test func packetOffsetsOutsideTheFile() throws {
        let url = scratch.url("offsets.caf")
        AF.makeFile(url, kAudioFileCAFType, .s16, channels: 2, bigEndian: true, frames: 100)
        let (_, file) = AF.open(url)
        defer { AudioFileClose(file!) }
        expectStatus(AF.read(file, from: -1, packets: 10, bytesPerPacket: 4).0, kAudioFileInvalidPacketOffsetError, "negative packet")
        expectStatus(AF.read(file, from: 101, packets: 10, bytesPerPacket: 4).0, kAudioFileInvalidPacketOffsetError, "past the end")
        var bytes: UInt32 = 10
        var buffer = [UInt8](repeating: 0, count: 10)
        expectStatus(AudioFileReadBytes(file!, false, -1, &bytes, &buffer), kAudioFilePositionError, "negative byte")
        bytes = 10
        expectStatus(AudioFileReadBytes(file!, false, 401, &bytes, &buffer), kAudioFilePositionError, "byte past the end")
        #expect(bytes == 0)
    }

    @Test func writingToAFileOpenedForReading() throws {
        let url = scratch.url("read-only.aiff")
        let signal = AF.makeFile(url, kAudioFileAIFFType, .s16, channels: 2, bigEndian: true, frames: 100)
        let (_, file) = AF.open(url, .readPermission)
        defer { AudioFileClose(file!) }
        expectStatus(AF.write(file, signal, at: 100, bytesPerPacket: 4).0, kAudioFilePermissionsError, "WritePackets")
        var count: UInt32 = 4
        expectStatus(AudioFileWriteBytes(file!, false, 0, &count, signal), kAudioFilePermissionsError, "WriteBytes")
        expectStatus(AudioFileSetProperty(file!, kAudioFilePropertyMagicCookieData, 4, signal), kAudioFilePermissionsError, "set a cookie")
        #expect(AF.read(file, from: 0, packets: 100, bytesPerPacket: 4).1 == signal, "the file is unchanged")
    }

    @Test func readingAFileOpenedForWritingOnly() throws {
        let url = scratch.url("write-only.wav")
        let signal = AF.makeFile(url, kAudioFileWAVEType, .s16, channels: 2, bigEndian: false, frames: 100)
        let (status, file) = AF.open(url, .writePermission)
        expectStatus(status, noErr, "open for writing")
        expectStatus(AF.read(file, from: 0, packets: 10, bytesPerPacket: 4).0, kAudioFilePermissionsError, "ReadPacketData")
        expectStatus(AF.write(file, signal, at: 100, bytesPerPacket: 4).0, noErr, "append")
        AudioFileClose(file!)
        #expect(AF.property(AF.open(url).1, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 200)
    }

    @Test func writesThatWouldLeaveAGap() throws {
        let url = scratch.url("gap.wav")
        let (_, file) = AF.create(url, kAudioFileWAVEType, stereo16)
        defer { AudioFileClose(file!) }
        let signal = Encoding.s16.signal(frames: 10, channels: 2, bigEndian: false)
        expectStatus(AF.write(file, signal, at: 1, bytesPerPacket: 4).0, kAudioFileInvalidPacketOffsetError, "packet 1 of an empty file")
        expectStatus(AF.write(file, signal, at: -1, bytesPerPacket: 4).0, kAudioFileInvalidPacketOffsetError, "negative packet")
        var count: UInt32 = 4
        expectStatus(AudioFileWriteBytes(file!, false, 8, &count, signal), kAudioFilePositionError, "byte 8 of an empty file")
        expectStatus(AF.write(file, signal, at: 0, bytesPerPacket: 4).0, noErr, "packet 0")
        expectStatus(AF.write(file, signal, at: 11, bytesPerPacket: 4).0, kAudioFileInvalidPacketOffsetError, "packet 11 of 10")
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 10)
    }

    @Test func encodedFilesAreWrittenInOrder() throws {
        let url = scratch.url("order.flac")
        let (_, file) = AF.create(url, kAudioFileFLACType, stereo16)
        defer { AudioFileClose(file!) }
        let signal = Encoding.s16.signal(frames: 10, channels: 2, bigEndian: false)
        expectStatus(AF.write(file, signal, at: 0, bytesPerPacket: 4).0, noErr, "append")
        expectStatus(AF.write(file, signal, at: 5, bytesPerPacket: 4).0, kAudioFileOperationNotSupportedError, "rewrite")
        expectStatus(AF.read(file, from: 0, packets: 10, bytesPerPacket: 4).0, kAudioFilePermissionsError, "read while encoding")
    }

    @Test func inNumBytesSmallerThanThePackets() throws {
        let (_, file) = AF.create(scratch.url("short.wav"), kAudioFileWAVEType, stereo16)
        defer { AudioFileClose(file!) }
        let signal = [UInt8](repeating: 0, count: 40)
        var packets: UInt32 = 10
        expectStatus(AudioFileWritePackets(file!, false, 39, nil, 0, &packets, signal), kAudio_ParamError, "39 bytes for 10 packets")
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 0)
    }

    // MARK: IDs and pointers

    @Test func closedAndBogusAudioFileIDs() throws {
        let url = scratch.url("closed.wav")
        AF.makeFile(url, kAudioFileWAVEType, .s16, channels: 2, bigEndian: false, frames: 10)
        let (_, file) = AF.open(url)
        expectStatus(AudioFileClose(file!), noErr, "close")
        expectStatus(AudioFileClose(file!), kAudioFileNotOpenError, "close twice")
        expectStatus(AF.read(file, from: 0, packets: 1, bytesPerPacket: 4).0, kAudioFileNotOpenError, "read after close")
        expectStatus(AF.property(file, kAudioFilePropertyDataFormat, AudioStreamBasicDescription.self).0, kAudioFileNotOpenError, "property after close")
        expectStatus(AudioFileOptimize(file!), kAudioFileNotOpenError, "optimize after close")
        let bogus = OpaquePointer(bitPattern: 0xDEAD_BEE0)!
        expectStatus(AudioFileClose(bogus), kAudioFileNotOpenError, "an ID that never was")
        expectStatus(AF.write(bogus, [0, 0, 0, 0], at: 0, bytesPerPacket: 4).0, kAudioFileNotOpenError, "write to a bogus ID")
    }

    /// NULL pointers, through the @_cdecl functions C callers reach (Swift's signatures do not
    /// let a NULL through).
    @Test func nullPointersAreParamErrors() throws {
        let url = scratch.url("null.wav")
        AF.makeFile(url, kAudioFileWAVEType, .s16, channels: 2, bigEndian: false, frames: 10)
        var format = stereo16
        var file: AudioFileID?
        try withCFURL(url.path) { cfURL in
            expectStatus(audioFileCreateWithURL(cfURL, kAudioFileWAVEType, &format, 1, nil), kAudio_ParamError, "Create: no outAudioFile")
            expectStatus(audioFileCreateWithURL(cfURL, kAudioFileWAVEType, nil, 1, &file), kAudio_ParamError, "Create: no format")
            expectStatus(audioFileCreateWithURL(nil, kAudioFileWAVEType, &format, 1, &file), kAudio_ParamError, "Create: no URL")
            expectStatus(audioFileOpenURL(cfURL, 1, 0, nil), kAudio_ParamError, "Open: no outAudioFile")
            expectStatus(audioFileOpenURL(nil, 1, 0, &file), kAudio_ParamError, "Open: no URL")
            expectStatus(audioFileOpenURL(cfURL, 0, 0, &file), kAudio_ParamError, "Open: permission 0")
            expectStatus(audioFileOpenURL(cfURL, 7, 0, &file), kAudio_ParamError, "Open: permission 7")
            expectStatus(audioFileOpenURL(cfURL, 3, 0, &file), noErr, "Open")
        }
        let id = try #require(file)
        defer { AudioFileClose(id) }
        var bytes: UInt32 = 40
        var packets: UInt32 = 10
        var buffer = [UInt8](repeating: 0, count: 40)
        expectStatus(audioFileClose(nil), kAudio_ParamError, "Close(NULL)")
        expectStatus(audioFileReadPacketData(id, 0, nil, nil, 0, &packets, &buffer), kAudio_ParamError, "Read: no ioNumBytes")
        expectStatus(audioFileReadPacketData(id, 0, &bytes, nil, 0, nil, &buffer), kAudio_ParamError, "Read: no ioNumPackets")
        expectStatus(audioFileReadPacketData(id, 0, &bytes, nil, 0, &packets, nil), kAudio_ParamError, "Read: no buffer")
        expectStatus(audioFileReadPacketData(nil, 0, &bytes, nil, 0, &packets, &buffer), kAudio_ParamError, "Read: no file")
        expectStatus(audioFileReadPackets(id, 0, nil, nil, 0, &packets, &buffer), kAudio_ParamError, "ReadPackets: no outNumBytes")
        expectStatus(audioFileWritePackets(id, 0, 40, nil, 0, nil, buffer), kAudio_ParamError, "Write: no ioNumPackets")
        expectStatus(audioFileWritePackets(id, 0, 40, nil, 0, &packets, nil), kAudio_ParamError, "Write: no buffer")
        expectStatus(audioFileReadBytes(id, 0, 0, nil, &buffer), kAudio_ParamError, "ReadBytes: no ioNumBytes")
        expectStatus(audioFileReadBytes(id, 0, 0, &bytes, nil), kAudio_ParamError, "ReadBytes: no buffer")
        expectStatus(audioFileWriteBytes(id, 0, 0, nil, buffer), kAudio_ParamError, "WriteBytes: no ioNumBytes")
        expectStatus(audioFileWriteBytes(id, 0, 0, &bytes, nil), kAudio_ParamError, "WriteBytes: no buffer")
        var size: UInt32 = 40
        expectStatus(audioFileGetProperty(id, kAudioFilePropertyDataFormat, nil, &buffer), kAudio_ParamError, "Get: no size")
        expectStatus(audioFileGetProperty(id, kAudioFilePropertyDataFormat, &size, nil), kAudio_ParamError, "Get: no buffer")
        expectStatus(audioFileSetProperty(id, kAudioFilePropertyMagicCookieData, 4, nil), kAudio_ParamError, "Set: no data")
        expectStatus(audioFileGetPropertyInfo(id, kAudioFilePropertyDataFormat, nil, nil), noErr, "GetPropertyInfo: both outputs optional")
        expectStatus(audioFileOptimize(nil), kAudio_ParamError, "Optimize(NULL)")
    }
}

/// Runs `body` with a CoreFoundation URL of `path`, as a C caller makes one (Swift manages
/// the CF object's memory).
func withCFURL(_ path: String, _ body: (__CFURLRef) throws -> Void) throws {
    let bytes = Array(path.utf8)
    let url = try #require(__CFURLCreateFromFileSystemRepresentation(nil, bytes, bytes.count, false))
    try body(url)
}
