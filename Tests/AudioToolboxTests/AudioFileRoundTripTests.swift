import AudioToolbox
import Foundation
import Testing
import JackTestSupport
import QueueCore

/// One writable container and one sample format it holds.
struct StoredFormat: Sendable, CustomTestStringConvertible {
    let type: AudioFileTypeID
    let encoding: Encoding
    let bigEndian: Bool
    /// Whether the file created here can be read back before it is closed.
    var readableWhileWriting: Bool { type != kAudioFileNextType }
    var extensionName: String {
        switch type {
        case kAudioFileWAVEType: "wav"
        case kAudioFileRF64Type: "rf64"
        case kAudioFileWave64Type: "w64"
        case kAudioFileAIFFType: "aiff"
        case kAudioFileAIFCType: "aifc"
        case kAudioFileCAFType: "caf"
        default: "au"
        }
    }
    var testDescription: String { "\(fourCharacterCode(OSStatus(bitPattern: type))) \(encoding) \(bigEndian ? "BE" : "LE")" }

    /// Every container × sample format jaq writes bit-exact (the table of Docs/audiofile.md).
    static let all: [StoredFormat] = {
        var all: [StoredFormat] = []
        let littleEndianPCM: [Encoding] = [.u8, .s16, .s24, .s32, .f32, .f64, .ulaw, .alaw]
        for type in [kAudioFileWAVEType, kAudioFileRF64Type, kAudioFileWave64Type] {
            all += littleEndianPCM.map { StoredFormat(type: type, encoding: $0, bigEndian: false) }
        }
        all += [Encoding.s8, .s16, .s24, .s32].map { StoredFormat(type: kAudioFileAIFFType, encoding: $0, bigEndian: true) }
        all += [Encoding.s16, .s24, .s32].map { StoredFormat(type: kAudioFileAIFCType, encoding: $0, bigEndian: true) }
        all.append(StoredFormat(type: kAudioFileAIFCType, encoding: .s16, bigEndian: false))
        all += [Encoding.f32, .f64, .ulaw, .alaw].map { StoredFormat(type: kAudioFileAIFCType, encoding: $0, bigEndian: true) }
        for bigEndian in [true, false] {
            all += [Encoding.s8, .s16, .s24, .s32, .f32, .f64].map { StoredFormat(type: kAudioFileCAFType, encoding: $0, bigEndian: bigEndian) }
        }
        all += [Encoding.ulaw, .alaw].map { StoredFormat(type: kAudioFileCAFType, encoding: $0, bigEndian: false) }
        all += [Encoding.s8, .s16, .s24, .s32, .f32, .f64, .ulaw, .alaw].map {
            StoredFormat(type: kAudioFileNextType, encoding: $0, bigEndian: true)
        }
        return all
    }()
}

@Suite struct AudioFileRoundTripTests {
    let scratch: Scratch
    init() throws { scratch = try Scratch() }

    /// WritePackets → (same ID) ReadPacketData → Close → OpenURL → ReadPacketData: the same bytes.
    @Test(arguments: StoredFormat.all, [1, 2, 3])
    func bytesRoundTripBitExact(_ stored: StoredFormat, channels: Int) throws {
        let url = scratch.url("round-trip.\(stored.extensionName)")
        let format = stored.encoding.format(channels: channels, rate: 48000, bigEndian: stored.bigEndian)
        let frames = 1000
        let signal = stored.encoding.signal(frames: frames, channels: channels, bigEndian: stored.bigEndian)
        let bpp = Int(format.mBytesPerPacket)

        let (created, file) = AF.create(url, stored.type, format)
        expectStatus(created, noErr, "create")
        guard let file else { return }
        // Three writes, as a recording callback would make them.
        var packet = 0
        for count in [300, 500, 200] {
            let slice = Array(signal[packet * bpp..<(packet + count) * bpp])
            let (status, written) = AF.write(file, slice, at: Int64(packet), bytesPerPacket: bpp)
            expectStatus(status, noErr, "write at \(packet)")
            #expect(written == UInt32(count))
            packet += count
        }
        if stored.readableWhileWriting {
            let (status, back) = AF.read(file, from: 0, packets: frames, bytesPerPacket: bpp)
            expectStatus(status, noErr, "read back through the same ID")
            #expect(back == signal, "same-ID read-back differs")
        }
        expectStatus(AudioFileClose(file), noErr, "close")

        let (opened, reader) = AF.open(url)
        expectStatus(opened, noErr, "open")
        guard let reader else { return }
        defer { AudioFileClose(reader) }
        let dataFormat = try #require(AF.dataFormat(reader))
        #expect(dataFormat.matches(format), "data format after reopening: \(dataFormat), created with \(format)")
        #expect(AF.property(reader, kAudioFilePropertyFileFormat, UInt32.self).1 == stored.type)
        #expect(AF.property(reader, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == UInt64(frames))
        #expect(AF.property(reader, kAudioFilePropertyAudioDataByteCount, UInt64.self).1 == UInt64(signal.count))
        let (status, back) = AF.read(reader, from: 0, packets: frames, bytesPerPacket: bpp)
        expectStatus(status, noErr, "read after reopening")
        #expect(back == signal, "bytes after reopening differ")

        // The data starts at DataOffset in the file: the bytes there are the packets.
        let offset = try #require(AF.property(reader, kAudioFilePropertyDataOffset, Int64.self).1)
        let onDisk = try Data(contentsOf: url)
        #expect(Array(onDisk[Int(offset)..<Int(offset) + bpp * 10]) == Array(signal.prefix(bpp * 10)))
    }

    /// A write of no packets (inNumBytes 0, no descriptions: a recording callback handed an
    /// empty buffer) returns noErr and writes nothing, as on Apple platforms, in every container
    /// and sample format; one past the end is `kAudioFileInvalidPacketOffsetError`, as a write
    /// there would be.
    @Test(arguments: StoredFormat.all)
    func writesOfNoPacketsAreNoOps(_ stored: StoredFormat) throws {
        let url = scratch.url("empty-writes.\(stored.extensionName)")
        let format = stored.encoding.format(channels: 2, rate: 48000, bigEndian: stored.bigEndian)
        let signal = stored.encoding.signal(frames: 1000, channels: 2, bigEndian: stored.bigEndian)
        let bpp = Int(format.mBytesPerPacket)
        let (created, file) = AF.create(url, stored.type, format)
        expectStatus(created, noErr, "create")
        guard let file else { return }
        func writeNothing(at packet: Int) {
            var none: UInt32 = 0
            expectStatus(AudioFileWritePackets(file, false, 0, nil, Int64(packet), &none, signal), noErr, "no packets at \(packet)")
            #expect(none == 0)
        }
        var packet = 0
        for count in [300, 500, 200] {
            writeNothing(at: packet)
            let (status, written) = AF.write(file, Array(signal[packet * bpp..<(packet + count) * bpp]), at: Int64(packet), bytesPerPacket: bpp)
            expectStatus(status, noErr, "write at \(packet)")
            #expect(written == UInt32(count))
            packet += count
        }
        writeNothing(at: packet)
        var none: UInt32 = 0
        expectStatus(AudioFileWritePackets(file, false, 0, nil, Int64(packet + 1), &none, signal), kAudioFileInvalidPacketOffsetError,
                     "no packets past the end")
        expectStatus(AudioFileClose(file), noErr, "close")

        let (opened, reader) = AF.open(url)
        expectStatus(opened, noErr, "open")
        guard let reader else { return }
        defer { AudioFileClose(reader) }
        #expect(AF.property(reader, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 1000)
        let (status, back) = AF.read(reader, from: 0, packets: 1000, bytesPerPacket: bpp)
        expectStatus(status, noErr, "read after reopening")
        #expect(back == signal, "the file holds the packets written, nothing else")
    }

    @Test func readsInPiecesAndAtTheEnd() throws {
        let url = scratch.url("pieces.caf")
        let signal = AF.makeFile(url, kAudioFileCAFType, .s24, channels: 2, bigEndian: true, frames: 100)

        let (_, reader) = AF.open(url)
        defer { AudioFileClose(reader!) }
        var pieces: [UInt8] = []
        var start: Int64 = 0
        var status = noErr
        while status == noErr {
            let (result, bytes) = AF.read(reader, from: start, packets: 33, bytesPerPacket: 6)
            status = result
            pieces += bytes
            start += Int64(bytes.count / 6)
        }
        // 33 + 33 + 33 + 1: the last read reaches the end and says so, with the short count.
        expectStatus(status, kAudioFileEndOfFileError, "last read")
        #expect(pieces == signal)
        #expect(start == 100)

        // Starting exactly at the end: EOF with nothing read.
        let (atEnd, nothing) = AF.read(reader, from: 100, packets: 10, bytesPerPacket: 6)
        expectStatus(atEnd, kAudioFileEndOfFileError, "read at the end")
        #expect(nothing.isEmpty)

        // A buffer smaller than the packets asked for limits the read; it is not an error.
        var buffer = [UInt8](repeating: 0, count: 60)
        var bytes: UInt32 = 40
        var packets: UInt32 = 10
        expectStatus(AudioFileReadPacketData(reader!, false, &bytes, nil, 10, &packets, &buffer), noErr, "short buffer")
        #expect(packets == 6 && bytes == 36)
        #expect(Array(buffer.prefix(36)) == Array(signal[60..<96]))
    }

    @available(*, deprecated, message: "exercises the deprecated AudioFileReadPackets on purpose")
    @Test func deprecatedReadPacketsReturnsNoErrAtTheEnd() throws {
        let url = scratch.url("old.aiff")
        let signal = AF.makeFile(url, kAudioFileAIFFType, .s16, channels: 2, bigEndian: true, frames: 50)

        let (_, reader) = AF.open(url)
        defer { AudioFileClose(reader!) }
        var buffer = [UInt8](repeating: 0, count: 400)
        var bytes: UInt32 = 0
        var packets: UInt32 = 100
        expectStatus(AudioFileReadPackets(reader!, false, &bytes, nil, 20, &packets, &buffer), noErr, "ReadPackets over the end")
        #expect(packets == 30 && bytes == 120)
        #expect(Array(buffer.prefix(120)) == Array(signal[80...]))
        packets = 100
        expectStatus(AudioFileReadPackets(reader!, false, &bytes, nil, 50, &packets, &buffer), noErr, "ReadPackets at the end")
        #expect(packets == 0 && bytes == 0, "the guide's playback callback stops on 0 packets")
    }

    @Test func bytesReadAndWrittenAtAnyAlignment() throws {
        let url = scratch.url("bytes.wav")
        let format = Encoding.s24.format(channels: 2, bigEndian: false) // 6-byte frames
        let signal = Encoding.s24.signal(frames: 400, channels: 2, bigEndian: false)
        let (_, file) = AF.create(url, kAudioFileWAVEType, format)
        // Chunks of 1000 bytes: frames straddle the chunk boundaries.
        var offset = 0
        while offset < signal.count {
            var count = UInt32(min(1000, signal.count - offset))
            let status = signal[offset..<offset + Int(count)].withUnsafeBytes {
                AudioFileWriteBytes(file!, false, Int64(offset), &count, $0.baseAddress!)
            }
            expectStatus(status, noErr, "WriteBytes at \(offset)")
            offset += Int(count)
        }
        #expect(AF.property(file, kAudioFilePropertyAudioDataByteCount, UInt64.self).1 == UInt64(signal.count))
        // Overwrite an unaligned range inside the data, then read unaligned ranges back.
        var patched = signal
        let patch: [UInt8] = [1, 2, 3, 4, 5, 6, 7]
        patched.replaceSubrange(1003..<1010, with: patch)
        var patchCount = UInt32(patch.count)
        expectStatus(AudioFileWriteBytes(file!, false, 1003, &patchCount, patch), noErr, "unaligned overwrite")
        AudioFileClose(file!)

        let (_, reader) = AF.open(url)
        defer { AudioFileClose(reader!) }
        #expect(AF.property(reader, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 400)
        var buffer = [UInt8](repeating: 0, count: 1000)
        var count: UInt32 = 13
        expectStatus(AudioFileReadBytes(reader!, false, 999, &count, &buffer), noErr, "unaligned read")
        #expect(Array(buffer.prefix(13)) == Array(patched[999..<1012]))
        count = 1000
        expectStatus(AudioFileReadBytes(reader!, false, Int64(signal.count - 5), &count, &buffer), kAudioFileEndOfFileError, "read over the end")
        #expect(count == 5 && Array(buffer.prefix(5)) == Array(patched.suffix(5)))
    }

    @Test func aPartialFrameAtTheEndIsPaddedAtClose() throws {
        let url = scratch.url("tail.aiff")
        let (_, file) = AF.create(url, kAudioFileAIFFType, Encoding.s16.format(channels: 2, bigEndian: true))
        var count: UInt32 = 6
        expectStatus(AudioFileWriteBytes(file!, false, 0, &count, [1, 2, 3, 4, 5, 6] as [UInt8]), noErr, "6 bytes of 4-byte frames")
        #expect(AF.property(file, kAudioFilePropertyAudioDataByteCount, UInt64.self).1 == 6)
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == 1)
        AudioFileClose(file!)
        let (_, reader) = AF.open(url)
        defer { AudioFileClose(reader!) }
        let (_, bytes) = AF.read(reader, from: 0, packets: 2, bytesPerPacket: 4)
        #expect(bytes == [1, 2, 3, 4, 5, 6, 0, 0])
    }

    @Test func packetsCanBeOverwrittenAndAppendedInAnOpenedFile() throws {
        let url = scratch.url("append.w64")
        let format = Encoding.f32.format(channels: 1, bigEndian: false)
        let signal = Encoding.f32.signal(frames: 200, channels: 1, bigEndian: false)
        let (_, file) = AF.create(url, kAudioFileWave64Type, format)
        _ = AF.write(file, Array(signal[0..<400]), at: 0, bytesPerPacket: 4)
        AudioFileClose(file!)

        let (opened, writer) = AF.open(url, .readWritePermission)
        expectStatus(opened, noErr, "open for read-write")
        _ = AF.write(writer, Array(signal[400...]), at: 100, bytesPerPacket: 4)
        let (_, back) = AF.read(writer, from: 0, packets: 200, bytesPerPacket: 4)
        #expect(back == signal)
        AudioFileClose(writer!)
        let (_, reader) = AF.open(url)
        defer { AudioFileClose(reader!) }
        #expect(AF.read(reader, from: 0, packets: 200, bytesPerPacket: 4).1 == signal)
    }
}
