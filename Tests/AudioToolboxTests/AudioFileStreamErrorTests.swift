import AudioCodec
import AudioToolbox
import Foundation
import Testing
import JackTestSupport
import RefereeTesting

/// AudioFileStream's result codes: files that cannot stream, streams of no known type,
/// property calls before the header and of the wrong size, bad references, calls from
/// inside the callbacks; and a discontinuity, after which the parser finds the next frame.
@Suite(.refereeCrashesAreKnownIssues) struct AudioFileStreamErrorTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    func ffmpegFile(_ name: String, _ codec: [String]) throws -> [UInt8] {
        let path = scratch.path(name)
        let result = try runReferee(try #require(tool("ffmpeg")), ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                                                                  "sine=frequency=440:sample_rate=44100:duration=1"] + codec + [path])
        try #require(result.status == 0, "ffmpeg: \(result.stderr)")
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test func filesWhoseIndexFollowsTheDataAreNotOptimized() throws {
        // ffmpeg's MPEG-4 without +faststart: 'mdat' before 'moov'; its CAF of ALAC: 'pakt' after 'data'.
        for (name, codec) in [("late-moov.m4a", ["-c:a", "aac"]), ("late-pakt.caf", ["-c:a", "alac"])] {
            let file = try ffmpegFile(name, codec)
            let parsed = AFS.parse(file, chunk: 1500)
            expectStatus(parsed.status, kAudioFileStreamError_NotOptimized, name)
            #expect(parsed.capture.packets.isEmpty && !parsed.capture.properties.contains(kAudioFileStreamProperty_ReadyToProducePackets))
            // The stream stays failed: later bytes get the same result.
            let capture = StreamCapture()
            let stream = try #require(AFS.open(capture))
            defer { AudioFileStreamClose(stream) }
            expectStatus(AFS.feed(stream, file, chunk: file.count), kAudioFileStreamError_NotOptimized)
            expectStatus(AFS.feed(stream, [0, 0, 0, 0], chunk: 4), kAudioFileStreamError_NotOptimized, "after the failure")
        }
    }

    @Test func aStreamOfNoKnownTypeIsUnsupported() {
        let text = Array(String(repeating: "This is not audio. ", count: 20).utf8)
        expectStatus(AFS.parse(text, chunk: 100).status, kAudioFileStreamError_UnsupportedFileType)
        // With an MP3 hint, 64 KiB of junk before any frame header is not MP3 either.
        let junk = [UInt8](repeating: 0x55, count: 70000)
        expectStatus(AFS.parse(junk, chunk: 1500, hint: kAudioFileMP3Type).status, kAudioFileStreamError_UnsupportedFileType)
    }

    @Test func damagedHeadersAreInvalidFiles() {
        // A WAVE whose format chunk is cut short, an AIFF of 0 channels, a CAF of version 2.
        let wave = Array("RIFF".utf8) + [36, 0, 0, 0] + Array("WAVEfmt ".utf8) + [4, 0, 0, 0, 1, 0, 2, 0] + Array("data".utf8) + [0, 0, 0, 0]
        expectStatus(AFS.parse(wave, chunk: 1).status, kAudioFileStreamError_InvalidFile, "short 'fmt '")
        let comm: [UInt8] = [0, 0, 0, 0, 0, 10, 0, 16, 0x40, 0x0E, 0xAC, 0x44] + [UInt8](repeating: 0, count: 6)
        let aiff = Array("FORM".utf8) + [0, 0, 0, 46] + Array("AIFFCOMM".utf8) + [0, 0, 0, 18] + comm + Array("SSND".utf8) + [0, 0, 0, 8] + [UInt8](repeating: 0, count: 8)
        expectStatus(AFS.parse(aiff, chunk: 7).status, kAudioFileStreamError_UnsupportedDataFormat, "0 channels")
        let caf = Array("caff".utf8) + [0, 2, 0, 0] + [UInt8](repeating: 0, count: 12)
        expectStatus(AFS.parse(caf, chunk: 3).status, kAudioFileStreamError_InvalidFile, "CAF version 2")
    }

    @Test func propertiesBeforeTheHeaderAndOfTheWrongSize() throws {
        let file = try ffmpegFile("tone.aac", ["-c:a", "aac"])
        let capture = StreamCapture()
        let stream = try #require(AFS.open(capture))
        defer { AudioFileStreamClose(stream) }
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_DataFormat, &size, &format), kAudioFileStreamError_ValueUnknown,
                     "DataFormat before any byte")
        var ready: UInt32 = 9
        size = 4
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_ReadyToProducePackets, &size, &ready), noErr)
        #expect(ready == 0)
        expectStatus(AFS.feed(stream, file, chunk: 1500), noErr)
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_ReadyToProducePackets, &size, &ready), noErr)
        #expect(ready == 1)
        size = 8
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_DataFormat, &size, &format), kAudioFileStreamError_BadPropertySize)
        size = 4
        var value: UInt32 = 0
        expectStatus(AudioFileStreamGetProperty(stream, 0x7A7A7A7A, &size, &value), kAudioFileStreamError_UnsupportedProperty, "'zzzz'")
        expectStatus(AudioFileStreamGetPropertyInfo(stream, 0x7A7A7A7A, &size, nil), kAudioFileStreamError_UnsupportedProperty)
        expectStatus(AudioFileStreamSetProperty(stream, kAudioFileStreamProperty_DataFormat, 40, &format), kAudioFileStreamError_IllegalOperation)
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketTableInfo, &size, &value), kAudioFileStreamError_UnsupportedProperty,
                     "ADTS has no packet table")
        // Translations: packet 10 is frame 10240; frame 10250 is packet 10, 10 frames in.
        var frames = AudioFramePacketTranslation(mFrame: 0, mPacket: 10, mFrameOffsetInPacket: 0)
        size = UInt32(MemoryLayout<AudioFramePacketTranslation>.size)
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketToFrame, &size, &frames), noErr)
        #expect(frames.mFrame == 10240)
        frames = AudioFramePacketTranslation(mFrame: 10250, mPacket: 0, mFrameOffsetInPacket: 0)
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_FrameToPacket, &size, &frames), noErr)
        #expect(frames.mPacket == 10 && frames.mFrameOffsetInPacket == 10)
        // Bytes: ADTS packet 3 starts where its frame does (the three frames before it are 7 bytes longer each).
        let packets = ADTS.split(file).packets
        var bytes = AudioBytePacketTranslation(mByte: 0, mPacket: 3, mByteOffsetInPacket: 0, mFlags: [])
        size = UInt32(MemoryLayout<AudioBytePacketTranslation>.size)
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketToByte, &size, &bytes), noErr)
        #expect(bytes.mByte == Int64(packets[0..<3].reduce(0) { $0 + $1.count + 7 }) && bytes.mFlags.rawValue == 0)
        bytes.mPacket = 0
        bytes.mByte += 9
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_ByteToPacket, &size, &bytes), noErr)
        #expect(bytes.mPacket == 3 && bytes.mByteOffsetInPacket == 9)
    }

    @Test func badReferencesAndNullArgumentsAreParameterErrors() throws {
        var stream: AudioFileStreamID?
        let capture = StreamCapture()
        let opened = try #require(AFS.open(capture))
        expectStatus(AudioFileStreamParseBytes(opened, 10, nil, []), kAudio_ParamError, "NULL data")
        expectStatus(AudioFileStreamParseBytes(opened, 0, nil, []), noErr, "no bytes")
        expectStatus(AudioFileStreamClose(opened), noErr)
        expectStatus(AudioFileStreamClose(opened), kAudio_ParamError, "closed twice")
        expectStatus(AudioFileStreamParseBytes(opened, 1, [0], []), kAudio_ParamError, "after Close")
        stream = OpaquePointer(bitPattern: 0x1234)
        expectStatus(AudioFileStreamParseBytes(stream!, 1, [0], []), kAudio_ParamError, "not a stream")
    }

    /// A discontinuity drops the partial frame held; the parser finds the next whole frame,
    /// and every packet after it is the file's.
    @Test func aDiscontinuityResumesAtTheNextFrame() throws {
        let file = try ffmpegFile("resume.aac", ["-c:a", "aac"])
        let packets = ADTS.split(file).packets
        let capture = StreamCapture()
        let stream = try #require(AFS.open(capture))
        defer { AudioFileStreamClose(stream) }
        expectStatus(AFS.feed(stream, Array(file.prefix(5000)), chunk: 1500), noErr)
        let before = capture.packets.count
        #expect(capture.packets == Array(packets.prefix(before)))
        // Skip 3000 bytes, as a network reconnecting further on would.
        expectStatus(AFS.feed(stream, Array(file[8000...]), chunk: 1500, flags: .discontinuity), noErr)
        let after = Array(capture.packets[before...])
        let resumed = try #require(packets.firstIndex(of: after.first ?? []), "the first packet after the discontinuity is one of the file's")
        #expect(Array(packets[resumed...]) == after)
        #expect(resumed > before)
    }

    /// Calls into the same stream from its callbacks: ParseBytes and Seek are refused,
    /// properties are answered, Close is safe.
    @Test func callsFromInsideTheCallbacks() throws {
        final class Reentrant {
            var parseStatus: OSStatus = 0
            var packets = 0
        }
        let file = try ffmpegFile("reentrant.aac", ["-c:a", "aac"])
        let state = Reentrant()
        var stream: AudioFileStreamID?
        let listener: AudioFileStream_PropertyListenerProc = { client, stream, _, _ in
            let state = Unmanaged<Reentrant>.fromOpaque(client!).takeUnretainedValue()
            var byte: UInt8 = 0
            state.parseStatus = AudioFileStreamParseBytes(stream, 1, &byte, [])
        }
        let packetsProc: AudioFileStream_PacketsProc = { client, _, count, _, _ in
            Unmanaged<Reentrant>.fromOpaque(client!).takeUnretainedValue().packets += Int(count)
        }
        expectStatus(AudioFileStreamOpen(Unmanaged.passUnretained(state).toOpaque(), listener, packetsProc, 0, &stream), noErr)
        expectStatus(AFS.feed(stream, file, chunk: 1500), noErr)
        expectStatus(state.parseStatus, kAudioFileStreamError_IllegalOperation, "ParseBytes from the listener")
        #expect(state.packets == ADTS.split(file).packets.count)
        expectStatus(AudioFileStreamClose(stream!), noErr)
    }
}

extension AudioFileStreamErrorTests {
    /// Junk before the first frame (a stream joined mid-way) holding a false sync word: the
    /// parser starts at the first frame that a matching frame follows.
    @Test func junkWithAFalseSyncWordBeforeTheFirstFrame() throws {
        let file = try ffmpegFile("joined.aac", ["-c:a", "aac"])
        let packets = ADTS.split(file).packets
        // 0xFFF1 0x50... reads as an ADTS header of a 48 kHz mono frame of 64 bytes: not the stream's.
        let junk: [UInt8] = [1, 2, 3, 0xFF, 0xF1, 0x4C, 0x40, 0x08, 0x1F, 0xFC] + [UInt8](repeating: 7, count: 100)
        for chunk in [1, 1500] {
            let parsed = AFS.parse(junk + file, chunk: chunk, hint: kAudioFileAAC_ADTSType)
            expectStatus(parsed.status, noErr)
            #expect(parsed.capture.packets == packets, "a chunk of \(chunk): \(parsed.capture.packets.count) packets of \(packets.count)")
            #expect(parsed.properties.dataOffset == Int64(junk.count))
        }
    }

    /// Numbers in a file or a call that overflow 64 bits are result codes, never a trap: an MP4
    /// edit list whose duration times the media's timescale passes 2^63 (found by review: it
    /// trapped), and PacketToFrame of a packet whose first frame fits but whose offset does not.
    @Test func productsPast64BitsAreResultCodes() throws {
        var file = try ffmpegFile("huge-edit.m4a", ["-c:a", "aac", "-movflags", "+faststart"])
        func find(_ box: String) throws -> Int {
            let tag = Array(box.utf8)
            return try #require((0..<(file.count - 4)).first { Array(file[$0..<$0 + 4]) == tag }, "no '\(box)'") + 4
        }
        // mdhd (version 0): version/flags, creation, modification, then the timescale.
        let mdhd = try find("mdhd")
        try #require(file[mdhd] == 0, "a version-0 mdhd")
        for k in 0..<4 { file[mdhd + 12 + k] = 0xFF }
        // elst (version 0): version/flags, entry count, then the first edit's duration.
        let elst = try find("elst")
        try #require(file[elst] == 0, "a version-0 elst")
        for k in 0..<4 { file[elst + 8 + k] = 0xFF }
        let parsed = AFS.parse(file, chunk: 1500)
        // The stream still parses (no edit list is used): its packets come, or a result code.
        #expect(parsed.status == noErr || parsed.status == kAudioFileStreamError_InvalidFile, "\(parsed.status)")

        let mp3 = try ffmpegFile("offset.mp3", ["-c:a", "libmp3lame"])
        let capture = StreamCapture()
        let stream = try #require(AFS.open(capture))
        defer { AudioFileStreamClose(stream) }
        expectStatus(AFS.feed(stream, mp3, chunk: mp3.count), noErr)
        var translation = AudioFramePacketTranslation(mFrame: 0, mPacket: Int64.max / 1152, mFrameOffsetInPacket: 1000)
        var size = UInt32(MemoryLayout<AudioFramePacketTranslation>.size)
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketToFrame, &size, &translation),
                     kAudioFileStreamError_InvalidPacketOffset)
        translation = AudioFramePacketTranslation(mFrame: 0, mPacket: 3, mFrameOffsetInPacket: 10)
        expectStatus(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketToFrame, &size, &translation), noErr)
        #expect(translation.mFrame == 3 * 1152 + 10)
    }
}
