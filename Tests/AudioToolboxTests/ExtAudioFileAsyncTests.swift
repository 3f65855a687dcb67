import AudioToolbox
import Foundation
import Testing
import JackTestSupport

/// ExtAudioFileWriteAsync as Apple documents it (a ring filled by the caller, written by a
/// writer thread), hostile client formats, ConverterConfig in both modes, and lengths in file
/// frames while writing through a resampler.
@Suite(.serialized) struct ExtAudioFileAsyncTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    /// Many small WriteAsync calls from another thread, a synchronous Write after them, then
    /// Dispose: the WAV holds every frame, in order, bit-exact (interleaved and non-interleaved).
    @Test(arguments: [false, true])
    func manySmallAsyncWritesAreBitExact(_ nonInterleaved: Bool) throws {
        let url = scratch.url("async-\(nonInterleaved).wav")
        let frames = 100_003
        let bytes = EAF.int16Bytes(EAF.floats(frames: frames, channels: 2))
        let client = EAF.pcm(44100, channels: 2, nonInterleaved: nonInterleaved)
        let planes = nonInterleaved ? EAF.split(bytes, channels: 2, sampleBytes: 2) : [bytes]
        let (created, out) = EAF.create(url, kAudioFileWAVEType, EAF.pcm(44100, channels: 2))
        try #require(created == noErr)
        expectStatus(EAF.setClient(out, client), noErr)
        expectStatus(ExtAudioFileWriteAsync(out!, 0, nil), noErr, "the priming call")
        let split = 90_000 * Int(client.mBytesPerFrame)
        let asyncPart = planes.map { Array($0[..<split]) }
        let syncPart = planes.map { Array($0[split...]) }
        // 64-frame calls from another thread, as a JACK period would make them (2 s: the ring holds 4).
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var asyncStatus: OSStatus = -1
        nonisolated(unsafe) let file = out
        let writer = Thread {
            asyncStatus = EAF.write(file, planes: asyncPart, client: client, chunk: 64, async: true)
            done.signal()
        }
        writer.start()
        done.wait()
        expectStatus(asyncStatus, noErr, "the async writes")
        expectStatus(EAF.write(out, planes: syncPart, client: client, chunk: 999), noErr, "a synchronous Write after async ones")
        var length: Int64 = 0
        var size = UInt32(8)
        expectStatus(ExtAudioFileGetProperty(out!, kExtAudioFileProperty_FileLengthFrames, &size, &length), noErr)
        #expect(length == Int64(frames))
        expectStatus(ExtAudioFileDispose(out!), noErr)
        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        let (status, read) = EAF.read(input, client: EAF.pcm(44100, channels: 2))
        expectStatus(status, noErr)
        #expect(read[0].count == bytes.count && read[0] == bytes, "\(read[0].count / 4) frames of \(frames)")
    }

    /// A call the ring cannot take whole is refused with Apple's code and leaves nothing of
    /// itself in the file: 4 s of frames fill the ring; the next call, made before the writer
    /// thread has written them, overflows; more than the ring is AsyncWriteTooLarge.
    @Test func aFullRingIsAnOverflowAndKeepsNothingHalfWritten() throws {
        let url = scratch.url("overflow.wav")
        let client = EAF.pcm(44100, channels: 2)
        let (created, out) = EAF.create(url, kAudioFileWAVEType, client)
        try #require(created == noErr)
        expectStatus(ExtAudioFileWriteAsync(out!, 0, nil), noErr, "the priming call")
        let ring = 4 * 44100
        let first = EAF.int16Bytes(EAF.floats(frames: ring, channels: 2))
        let statuses = EAF.withBufferList([UnsafeMutableRawPointer(mutating: first.withUnsafeBytes { $0.baseAddress! })],
                                          bytes: first.count, channelsPerBuffer: 2) { list in
            (ExtAudioFileWriteAsync(out!, UInt32(ring), list), ExtAudioFileWriteAsync(out!, 1000, list),
             ExtAudioFileWriteAsync(out!, UInt32(ring), list))
        }
        expectStatus(statuses.0, noErr, "a ring's worth")
        expectStatus(statuses.1, kExtAudioFileError_AsyncWriteBufferOverflow, "the ring is full")
        expectStatus(statuses.2, kExtAudioFileError_AsyncWriteBufferOverflow, "still full")
        let huge = [UInt8](repeating: 0, count: (ring + 1) * 4)
        let tooLarge = EAF.withBufferList([UnsafeMutableRawPointer(mutating: huge.withUnsafeBytes { $0.baseAddress! })],
                                          bytes: huge.count, channelsPerBuffer: 2) { ExtAudioFileWriteAsync(out!, UInt32(ring + 1), $0) }
        expectStatus(tooLarge, kExtAudioFileError_AsyncWriteTooLarge)
        expectStatus(ExtAudioFileDispose(out!), noErr)
        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        let (status, read) = EAF.read(input, client: client)
        expectStatus(status, noErr)
        #expect(read[0] == first, "\(read[0].count / 4) frames, not the \(ring) taken")
    }

    /// Client formats whose sizes overflow (or make no sense) are kExtAudioFileError_InvalidDataFormat, not a trap.
    @Test func hostileClientFormatsAreInvalidDataFormat() throws {
        let (created, out) = EAF.create(scratch.url("hostile.wav"), kAudioFileWAVEType, EAF.pcm(44100, channels: 2))
        try #require(created == noErr)
        defer { ExtAudioFileDispose(out!) }
        func format(bytes: UInt32, channels: UInt32, bits: UInt32 = 16, nonInterleaved: Bool) -> AudioStreamBasicDescription {
            var f = EAF.pcm(44100, channels: 2, nonInterleaved: nonInterleaved)
            f.mBytesPerFrame = bytes
            f.mBytesPerPacket = bytes
            f.mChannelsPerFrame = channels
            f.mBitsPerChannel = bits
            return f
        }
        let hostile = [format(bytes: 0x10000, channels: 0x10000, nonInterleaved: true),
                       format(bytes: 0xFFFF_FFFF, channels: 2, nonInterleaved: true),
                       format(bytes: 2, channels: 65, nonInterleaved: true),
                       format(bytes: 9, channels: 1, bits: 72, nonInterleaved: false),
                       format(bytes: 5, channels: 2, nonInterleaved: false),
                       format(bytes: 2, channels: 1, bits: 64, nonInterleaved: false)]
        for f in hostile {
            expectStatus(EAF.setClient(out, f), kExtAudioFileError_InvalidDataFormat, "\(f.mBytesPerFrame) bytes, \(f.mChannelsPerFrame) channels")
        }
        expectStatus(EAF.setClient(out, EAF.pcm(44100, channels: 2, float: true, bits: 32, nonInterleaved: true)), noErr, "a sane one still works")
    }

    /// ConverterConfig NULL (size 0 or a NULL CFArrayRef) is taken on files being read and written.
    @Test func converterConfigNullIsTakenInBothModes() throws {
        let url = scratch.url("config.wav")
        let (created, out) = EAF.create(url, kAudioFileWAVEType, EAF.pcm(44100, channels: 2))
        try #require(created == noErr)
        expectStatus(ExtAudioFileSetProperty(out!, kExtAudioFileProperty_ConverterConfig, 0, nil), noErr, "writing, (0, NULL)")
        expectStatus(EAF.write(out, planes: [EAF.int16Bytes(EAF.floats(frames: 1000, channels: 2))], client: EAF.pcm(44100, channels: 2)), noErr)
        expectStatus(ExtAudioFileSetProperty(out!, kExtAudioFileProperty_ConverterConfig, 0, nil), noErr, "writing, after packets")
        expectStatus(ExtAudioFileDispose(out!), noErr)
        let (opened, input) = EAF.open(url)
        try #require(opened == noErr)
        defer { ExtAudioFileDispose(input!) }
        expectStatus(EAF.setClient(input, EAF.pcm(44100, channels: 2, float: true, bits: 32)), noErr)
        expectStatus(ExtAudioFileSetProperty(input!, kExtAudioFileProperty_ConverterConfig, 0, nil), noErr, "reading, (0, NULL)")
        var config: UnsafeRawPointer? = nil
        expectStatus(ExtAudioFileSetProperty(input!, kExtAudioFileProperty_ConverterConfig, UInt32(MemoryLayout<UnsafeRawPointer?>.size), &config),
                     noErr, "reading, a NULL CFArrayRef")
        let (status, read) = EAF.read(input, client: EAF.pcm(44100, channels: 2, float: true, bits: 32))
        expectStatus(status, noErr)
        #expect(read[0].count == 1000 * 8)
    }

    /// Writing 44.1 kHz client frames to a 48 kHz file: FileLengthFrames and Tell count file frames.
    @Test func lengthWhileWritingIsInFileFrames() throws {
        let (created, out) = EAF.create(scratch.url("rate.caf"), kAudioFileCAFType, EAF.pcm(48000, channels: 2))
        try #require(created == noErr)
        defer { ExtAudioFileDispose(out!) }
        expectStatus(EAF.setClient(out, EAF.pcm(44100, channels: 2)), noErr)
        expectStatus(EAF.write(out, planes: [EAF.int16Bytes(EAF.floats(frames: 44100, channels: 2))], client: EAF.pcm(44100, channels: 2)), noErr)
        let (status, length) = EAF.property(out, kExtAudioFileProperty_FileLengthFrames, Int64.self)
        expectStatus(status, noErr)
        #expect(length == 48000)
        var told: Int64 = 0
        expectStatus(ExtAudioFileTell(out!, &told), noErr)
        #expect(told == 48000)
    }
}
