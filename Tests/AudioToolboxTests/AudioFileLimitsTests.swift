import AudioToolbox
import Foundation
import Glibc
import Testing
import JackTestSupport

/// Failures a test process cannot cause in itself without disturbing its other tests: a full
/// disk (RLIMIT_FSIZE) and POSIX permissions (which root ignores). CPrograms/audiofile_limits.c
/// runs the calls in a child process: under the file-size limit, or as user 'nobody'.
@Suite struct AudioFileLimitsTests {
    let scratch: Scratch
    let helper: URL

    init() throws {
        scratch = try Scratch()
        helper = scratch.url("audiofile_limits")
        let build = try CProgram.compile("Tests/AudioToolboxTests/CPrograms/audiofile_limits.c", into: helper, flags: ["-Wall", "-Werror"])
        try #require(build.status == 0, "cc failed:\n\(build.diagnostics)")
    }

    /// Runs the helper and returns its key=value results.
    private func helperResults(_ arguments: [String]) throws -> [String: Int64] {
        let result = try run(helper.path, arguments)
        try #require(result.status == 0, "audiofile_limits \(arguments) exited \(result.status): \(result.stderr)")
        let line = String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Dictionary(uniqueKeysWithValues: line.split(separator: " ").compactMap { pair in
            let parts = pair.split(separator: "=")
            return parts.count == 2 ? (String(parts[0]), Int64(parts[1]) ?? Int64.min) : nil
        })
    }

    @Test func aFullDiskReturnsDskFulErrAndTheFileStaysValid() throws {
        let url = scratch.url("full.wav")
        let results = try helperResults(["diskfull", url.path, "100000"])
        #expect(results["write"] == Int64(dskFulErr), "the write that hit the limit: \(results)")
        let written = try #require(results["packets"])
        // 100000 bytes minus the 44-byte header, in 4-byte frames.
        #expect(written == (100_000 - 44) / 4)

        let (status, file) = AF.open(url)
        expectStatus(status, noErr, "open the file the full disk cut short")
        guard let file else { return }
        defer { AudioFileClose(file) }
        #expect(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 == UInt64(written))
        let (read, bytes) = AF.read(file, from: 0, packets: Int(written), bytesPerPacket: 4)
        expectStatus(read, noErr, "read every packet written")
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let expected = (0..<Int(written) * 2).map { Int16(truncatingIfNeeded: $0) }
        #expect(samples == expected, "every frame written before the disk filled is intact")
    }

    @Test func posixPermissionsAreKAudioFilePermissionError() throws {
        let unreadable = scratch.url("unreadable.wav")
        AF.makeFile(unreadable, kAudioFileWAVEType, .s16, channels: 1, bigEndian: false, frames: 10)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: unreadable.path)
        #expect(try helperResults(["open", unreadable.path, "1"])["open"] == Int64(kAudio_FilePermissionError))

        let readOnly = scratch.url("read-only.wav")
        AF.makeFile(readOnly, kAudioFileWAVEType, .s16, channels: 1, bigEndian: false, frames: 10)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: readOnly.path)
        #expect(try helperResults(["open", readOnly.path, "1"])["open"] == Int64(noErr))
        #expect(try helperResults(["open", readOnly.path, "3"])["open"] == Int64(kAudio_FilePermissionError))
        #expect(try helperResults(["create", readOnly.path])["create"] == Int64(kAudio_FilePermissionError))

        let lockedDirectory = scratch.url("locked")
        try FileManager.default.createDirectory(at: lockedDirectory, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: lockedDirectory.path)
        #expect(try helperResults(["create", lockedDirectory.appendingPathComponent("new.wav").path])["create"]
            == Int64(kAudio_FilePermissionError))
        #expect(!FileManager.default.fileExists(atPath: lockedDirectory.appendingPathComponent("new.wav").path))
    }
}
