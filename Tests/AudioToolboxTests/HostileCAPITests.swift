import AudioToolbox
import Foundation
import Testing
import JackTestSupport

/// The fuzz report's crashers through the C API (CPrograms/hostile_calls.c, run as a child
/// process so that a regression fails this test and not the runner): result codes, true sizes.
@Suite struct HostileCAPITests {
    let scratch: Scratch
    let helper: URL
    static let fixtures = CProgram.packageRoot.appendingPathComponent("Tests/HostileInputTests/Fixtures")

    init() throws {
        scratch = try Scratch()
        helper = scratch.url("hostile_calls")
        let build = try CProgram.compile("Tests/AudioToolboxTests/CPrograms/hostile_calls.c", into: helper, flags: ["-Wall", "-Wextra", "-Werror", "-Wno-deprecated-declarations"])
        try #require(build.status == 0, "cc failed:\n\(build.diagnostics)")
    }

    private func results(_ arguments: [String]) throws -> [String: Int64] {
        var environment = ProcessInfo.processInfo.environment
        environment["JACK_NO_START_SERVER"] = "1"
        let process = Process()
        process.executableURL = helper
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "hostile_calls \(arguments) ended by \(process.terminationReason == .uncaughtSignal ? "signal" : "exit") \(process.terminationStatus)")
        let line = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Dictionary(line.split(separator: " ").compactMap { pair in
            let parts = pair.split(separator: "=")
            return parts.count == 2 ? (String(parts[0]), Int64(parts[1]) ?? Int64.min) : nil
        }, uniquingKeysWith: { first, _ in first })
    }

    private func copy(_ fixture: String) throws -> String {
        let path = scratch.path(fixture)
        try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent(fixture).path, toPath: path)
        return path
    }

    @Test(arguments: ["crash-002725.ogg", "crash-005483.ogg", "crash-021463.ogg"])
    func damagedOggFiles(_ fixture: String) throws {
        let values = try results(["file", try copy(fixture)])
        #expect(values["open"] == 0)
        #expect(values["bcnt"] == 0 && values["brat"] == 0 && values["cmap_info"] == 0, "\(values)")
        let packets = try #require(values["pcnt_value"])
        #expect(packets >= 0 && packets < 1 << 32, "AudioDataPacketCount \(packets)")
        #expect(values["bcnt_value"] == packets * 8, "stereo Float32 packets")
        // Past the decodable data (dta?) or past the end (pck?), never a signal.
        #expect([Int64(kAudioFileInvalidFileError), Int64(kAudioFileInvalidPacketOffsetError)].contains(values["read610"] ?? 0), "\(values)")
        #expect(values["open_rw"] == Int64(kAudioFileOperationNotSupportedError))
    }

    @Test(arguments: ["sanitizer-005552.aiff", "sanitizer-009129.aiff", "sanitizer-014541.aiff"])
    func damagedAIFFFiles(_ fixture: String) throws {
        let values = try results(["file", try copy(fixture)])
        #expect(values["open"] == Int64(kAudioFileInvalidFileError))
        #expect(values["open_rw"] == Int64(kAudioFileInvalidFileError))
    }

    @Test func nonFiniteSamplesToMP3() throws {
        let path = scratch.path("nan.mp3")
        let values = try results(["mp3", path])
        #expect(values == ["create": 0, "write": 0, "close": 0])
        let (status, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, noErr, "the MP3 written from NaN and infinity opens")
        if let file { AudioFileClose(file) }
    }

    @Test func queueFormatsWithHugeFrameSizes() throws {
        let values = try results(["asbd"])
        let unsupported = Int64(kAudioFormatUnsupportedDataFormatError)
        #expect(values == ["output_1073741824": unsupported, "input_1073741824": unsupported,
                           "output_4294967295": unsupported, "input_4294967295": unsupported])
    }
}
