import Foundation
import Glibc
import SoundFile
import Testing

/// A fresh directory for one test's files, removed when the test ends.
final class TemporaryDirectory {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("jaq-soundfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

@Suite struct SoundFileTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    private func ramp(frames: Int, channels: Int) -> [Int16] {
        (0..<frames * channels).map { Int16(truncatingIfNeeded: $0 &* 977 &- 30000) }
    }

    @Test func typedFramesRoundTripThroughWAV() throws {
        let path = directory.path("typed.wav")
        let samples = ramp(frames: 1000, channels: 2)
        let file = try SoundFile(path: path, mode: .write,
                                 format: .init(sampleRate: 48000, channelCount: 2, format: .init(.wav, .pcm16)))
        let written = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        #expect(written.count == 1000 && written.error == nil)
        try file.close()

        let reader = try SoundFile(path: path, mode: .read)
        #expect(reader.info.frameCount == 1000)
        #expect(reader.info.sampleRate == 48000 && reader.info.channelCount == 2)
        #expect(reader.info.format == .init(.wav, .pcm16))
        var back = [Int16](repeating: 0, count: samples.count)
        let read = back.withUnsafeMutableBufferPointer { reader.readFrames(into: $0) }
        #expect(read.count == 1000)
        #expect(back == samples)
    }

    @Test func rawBytesAreTheFileBytes() throws {
        let path = directory.path("raw.aiff")
        let bytes: [UInt8] = [0x7F, 0xFF, 0x80, 0x00, 0x12, 0x34, 0xFE, 0xDC]
        let file = try SoundFile(path: path, mode: .readWrite,
                                 format: .init(sampleRate: 44100, channelCount: 1, format: .init(.aiff, .pcm16)))
        #expect(file.rawDataNeedsEndianSwap, "AIFF stores big-endian samples")
        _ = bytes.withUnsafeBytes { file.writeRaw($0) }
        // Read back in the same handle, from the read position.
        try file.seek(toFrame: 0, for: .read)
        var back = [UInt8](repeating: 0, count: bytes.count)
        let read = back.withUnsafeMutableBytes { file.readRaw(into: $0) }
        #expect(read.count == bytes.count && back == bytes)
        let offset = try file.audioDataOffset()
        try file.close()
        let onDisk = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(onDisk[Int(offset)..<Int(offset) + bytes.count]) == bytes)

        var int16 = [Int16](repeating: 0, count: 4)
        let reader = try SoundFile(path: path, mode: .read)
        _ = int16.withUnsafeMutableBufferPointer { reader.readFrames(into: $0) }
        #expect(int16 == [0x7FFF, -0x8000, 0x1234, -0x0124])
    }

    @Test func headerIsCurrentWhileWritingWithAutomaticUpdates() throws {
        let path = directory.path("live.wav")
        let file = try SoundFile(path: path, mode: .readWrite,
                                 format: .init(sampleRate: 8000, channelCount: 1, format: .init(.wav, .pcm16)))
        #expect(file.setUpdatesHeaderAutomatically(true))
        let samples = ramp(frames: 500, channels: 1)
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        // A second reader sees every frame before the writer closes.
        let reader = try SoundFile(path: path, mode: .read)
        #expect(reader.info.frameCount == 500)
        try file.close()
    }

    /// A file opened by path to be written keeps its offset in memory (no `lseek` per libsndfile
    /// seek or tell): an existing file opened again for reading and writing reads its old frames,
    /// takes new ones after them, shows them to another reader once its header is rewritten, and
    /// reads back whole; the read and write positions stay apart throughout.
    @Test func aFileWrittenAgainKeepsItsOldFramesAndTakesNewOnesAfterThem() throws {
        let path = directory.path("again.wav")
        let first = ramp(frames: 700, channels: 2)
        let second = first.map { $0 &+ 1 }
        let file = try SoundFile(path: path, mode: .write,
                                 format: .init(sampleRate: 48000, channelCount: 2, format: .init(.wav, .pcm16)))
        _ = first.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()

        let again = try SoundFile(path: path, mode: .readWrite)
        #expect(again.info.frameCount == 700)
        #expect(try again.seek(toFrame: 700, for: .write) == 700)
        let written = second.withUnsafeBufferPointer { again.writeFrames($0) }
        #expect(written.count == 700 && written.error == nil)
        // Reads come from the read position (frame 0), not from where the writes ended.
        var head = [Int16](repeating: 0, count: 200)
        _ = head.withUnsafeMutableBufferPointer { again.readFrames(into: $0) }
        #expect(head == Array(first[0..<200]))
        again.updateHeaderNow()
        #expect(try SoundFile(path: path, mode: .read).info.frameCount == 1400)
        // The write position is where the writes left it: more frames go on after them.
        _ = first[0..<100].withUnsafeBufferPointer { again.writeFrames($0) }
        try again.close()

        let reader = try SoundFile(path: path, mode: .read)
        #expect(reader.info.frameCount == 1450)
        var back = [Int16](repeating: 0, count: 1450 * 2)
        _ = back.withUnsafeMutableBufferPointer { reader.readFrames(into: $0) }
        #expect(back == first + second + Array(first[0..<100]))
        var size = stat()
        #expect(stat(path, &size) == 0 && size.st_size == 44 + 1450 * 4, "a 44-byte header and the frames: \(size.st_size)")
    }

    /// Space reserved ahead of a take's writes and not used by its end is given back at close:
    /// a finished file holds on disk what its size says, not its last reservation too.
    @Test func unusedReservedSpaceIsGivenBackAtClose() throws {
        let path = directory.path("reserved.wav")
        let file = try SoundFile(path: path, mode: .write,
                                 format: .init(sampleRate: 48000, channelCount: 1, format: .init(.wav, .pcm16)))
        let reserved = try file.reserveSpace(byteCount: 8 << 20)
        let samples = ramp(frames: 48000, channels: 1)
        _ = samples.withUnsafeBufferPointer { file.writeFrames($0) }
        var open = stat()
        #expect(stat(path, &open) == 0)
        try file.close()
        var closed = stat()
        #expect(stat(path, &closed) == 0)
        // The file system here (the test's temporary directory) reserves: this test means nothing where it cannot.
        #expect(reserved, "fallocate is not supported where the test's files are")
        #expect(Int64(open.st_blocks) * 512 >= 8 << 20, "the reservation was taken: \(open.st_blocks) blocks")
        #expect(Int64(closed.st_blocks) * 512 < Int64(closed.st_size) + 64 << 10,
                "\(closed.st_blocks * 512) bytes on disk for a file of \(closed.st_size)")
        let reader = try SoundFile(path: path, mode: .read)
        #expect(reader.info.frameCount == 48000)
    }

    /// A take of known length reserves exactly what its last frames take (`jaq record -d`):
    /// the file ends where its reservation ends, holds no block past its size, and reads back
    /// every frame. An earlier, larger reservation is still given back when a later one that
    /// ends sooner is the last (a take stopped before the end reserved ahead).
    @Test func exactReservationEndsWithTheFileAndAnEarlierLargerOneIsStillGivenBack() throws {
        let samples = ramp(frames: 48000, channels: 1)
        let dataBytes = 48000 * 2
        // Exactly the frames' bytes, reserved after the header: the file ends on the reservation.
        let exactPath = directory.path("exact.wav")
        let exact = try SoundFile(path: exactPath, mode: .write,
                                  format: .init(sampleRate: 48000, channelCount: 1, format: .init(.wav, .pcm16)))
        #expect(try exact.reserveSpace(byteCount: dataBytes), "fallocate is not supported where the test's files are")
        _ = samples.withUnsafeBufferPointer { exact.writeFrames($0) }
        try exact.close()
        var closed = stat()
        #expect(stat(exactPath, &closed) == 0)
        #expect(closed.st_size == 44 + off_t(dataBytes), "a 44-byte header and the frames: \(closed.st_size)")
        let block = Int64(max(closed.st_blksize, 4096))
        let rounded = (Int64(closed.st_size) + block - 1) / block * block
        #expect(Int64(closed.st_blocks) * 512 <= rounded, "\(closed.st_blocks * 512) bytes on disk for a file of \(closed.st_size)")
        var back = [Int16](repeating: 0, count: 48000)
        let reader = try SoundFile(path: exactPath, mode: .read)
        #expect(reader.info.frameCount == 48000)
        _ = back.withUnsafeMutableBufferPointer { reader.readFrames(into: $0) }
        #expect(back == samples)

        // 8 MiB ahead first, then the last frames exactly: the 8 MiB are past the end and go back.
        let earlierPath = directory.path("earlier.wav")
        let earlier = try SoundFile(path: earlierPath, mode: .write,
                                    format: .init(sampleRate: 48000, channelCount: 1, format: .init(.wav, .pcm16)))
        #expect(try earlier.reserveSpace(byteCount: 8 << 20))
        _ = samples.withUnsafeBufferPointer { earlier.writeFrames($0) }
        #expect(try earlier.reserveSpace(byteCount: dataBytes))
        _ = samples.withUnsafeBufferPointer { earlier.writeFrames($0) }
        try earlier.close()
        #expect(stat(earlierPath, &closed) == 0)
        #expect(closed.st_size == 44 + 2 * off_t(dataBytes))
        #expect(Int64(closed.st_blocks) * 512 < Int64(closed.st_size) + 64 << 10,
                "\(closed.st_blocks * 512) bytes on disk for a file of \(closed.st_size)")
    }

    @Test func channelMapIsStoredInCAF() throws {
        let path = directory.path("map.caf")
        let file = try SoundFile(path: path, mode: .readWrite,
                                 format: .init(sampleRate: 48000, channelCount: 3, format: .init(.caf, .float)))
        #expect(file.setChannelMap([.left, .right, .lfe]))
        _ = [Float](repeating: 0.5, count: 30).withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
        let reader = try SoundFile(path: path, mode: .read)
        #expect(reader.channelMap == [.left, .right, .lfe])
        #expect(reader.info.frameCount == 10)
    }

    @Test func errorsCarryErrnoOrLibsndfileReason() throws {
        #expect {
            _ = try SoundFile(path: directory.path("missing.wav"), mode: .read)
        } throws: { ($0 as? SoundFileError)?.errno == ENOENT }
        #expect {
            _ = try SoundFile(path: directory.url.path, mode: .read)
        } throws: { ($0 as? SoundFileError)?.errno == EISDIR }

        let text = directory.path("text.wav")
        try Data("this is not audio at all, just some words".utf8).write(to: URL(fileURLWithPath: text))
        do {
            _ = try SoundFile(path: text, mode: .read)
            Issue.record("a text file opened as sound")
        } catch {
            #expect(error.errno == nil)
            #expect(!error.reason.isEmpty)
        }

        let existing = directory.path("existing.wav")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: existing))
        #expect {
            _ = try SoundFile(path: existing, mode: .write,
                              format: .init(sampleRate: 8000, channelCount: 1, format: .init(.wav, .pcm16)), replacing: false)
        } throws: { ($0 as? SoundFileError)?.errno == EEXIST }
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep")
    }

    @Test func formatChecksAndAvailability() {
        #expect(SoundFile.Info(sampleRate: 44100, channelCount: 2, format: .init(.aiff, .pcm24)).isWritable)
        #expect(!SoundFile.Info(sampleRate: 44100, channelCount: 2, format: .init(.wav, .pcmS8)).isWritable)
        #expect(SoundFile.isAvailable(.flac, .pcm16))
        #expect(SoundFile.Format(.wav, .pcm16).majorName.contains("WAV"))
        #expect(SoundFile.Format(rawValue: 0x0002_0002) == .init(.aiff, .pcm16))
        #expect(SoundFile.version.hasPrefix("libsndfile"))
    }

    @Test func seekingAndReadingPastTheEnd() throws {
        let path = directory.path("seek.w64")
        let samples = ramp(frames: 100, channels: 3)
        let file = try SoundFile(path: path, mode: .write,
                                 format: .init(sampleRate: 22050, channelCount: 3, format: .init(.w64, .pcm32)))
        _ = samples.map { Int32($0) << 16 }.withUnsafeBufferPointer { file.writeFrames($0) }
        try file.close()
        let reader = try SoundFile(path: path, mode: .read)
        #expect(try reader.seek(toFrame: 90) == 90)
        var tail = [Int16](repeating: 0, count: 3 * 20)
        let read = tail.withUnsafeMutableBufferPointer { reader.readFrames(into: $0) }
        #expect(read.count == 10 && read.error == nil)
        #expect(Array(tail[0..<30]) == Array(samples[270..<300]))
        #expect(throws: SoundFileError.self) { try reader.seek(toFrame: 101) }
    }
}
