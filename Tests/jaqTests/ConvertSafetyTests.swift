import Testing
import Foundation
import JackTestSupport
@testable import jaq

/// `jaq convert` refuses to write over its own input, and its progress counts output frames
/// against IN's length at the output's rate.
@Suite struct ConvertSafetyTests {
    let dir = scratchDirectory("convert-safety")

    /// `jaq convert x.wav x.wav --force` (or through another name for it) once erased IN while
    /// reading it; now: one line, exit 64, IN untouched.
    @Test func refusesToWriteOverItsInput() throws {
        defer { removeScratch(dir) }
        let input = "\(dir)/x.wav"
        let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0) })
        let header = try wavHeader(frames: 1024)
        try (header + bytes).write(to: URL(fileURLWithPath: input))
        let before = try Data(contentsOf: URL(fileURLWithPath: input))
        try FileManager.default.createSymbolicLink(atPath: "\(dir)/link.wav", withDestinationPath: input)
        for output in ["x.wav", "./x.wav", "link.wav"] {
            let result = try jaq(["convert", "x.wav", output, "--force"], server: nil, directory: dir)
            #expect(result.status == 64, "\(output): \(result.status) \(result.error)")
            #expect(result.error == "jaq convert: \(output): is IN itself (write to another file)\n", "\(result.error)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == before)
        }
    }

    /// 44.1 → 48 kHz: all of IN written is 100 %, not 108 %.
    @Test func progressScalesByTheRateRatio() {
        let length: Int64 = 441_000
        let written = Int64((Double(length) * 48000 / 44100).rounded())
        #expect(ConvertCommand.percent(written, of: length, from: 44100, to: 48000) == 100)
        #expect(ConvertCommand.percent(written / 2, of: length, from: 44100, to: 48000) == 50)
        #expect(ConvertCommand.percent(length / 4, of: length, from: 48000, to: 48000) == 25)
        #expect(ConvertCommand.percent(5, of: 0, from: 0, to: 48000) == 100)
    }

    /// A 16-bit stereo 44.1 kHz WAV header for `frames` frames.
    func wavHeader(frames: Int) throws -> Data {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let bytes = frames * 4
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + bytes)); data.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16)); append(UInt16(1)); append(UInt16(2)); append(UInt32(44100)); append(UInt32(44100 * 4)); append(UInt16(4)); append(UInt16(16))
        data.append(contentsOf: Array("data".utf8)); append(UInt32(bytes))
        return data
    }
}
