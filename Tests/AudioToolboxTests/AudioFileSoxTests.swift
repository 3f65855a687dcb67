import AudioToolbox
import Foundation
import Testing
import RefereeTesting
import JackTestSupport

/// sox is the referee: files written here open in sox with the right rate, channels, bit
/// depth and length and decode to the samples written; files sox writes read back here.
@Suite(.refereeCrashesAreKnownIssues) struct AudioFileSoxTests {
    let scratch: Scratch
    let sox: String
    let soxi: String

    init() throws {
        scratch = try Scratch()
        sox = try #require(tool("sox"), "sox is not installed (apt-get install sox libsox-fmt-all)")
        soxi = try #require(tool("soxi"), "soxi is not installed (apt-get install sox)")
    }

    private func soxi(_ flag: String, _ path: String) throws -> String {
        let result = try runReferee(soxi, [flag, path])
        return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The file's samples as sox decodes them: 32-bit signed, little-endian, interleaved.
    private func soxSamples(_ path: String) throws -> [Int32] {
        let result = try runReferee(sox, ["-D", "-V1", path, "-t", "raw", "-e", "signed-integer", "-b", "32", "-L", "-"])
        try #require(result.status == 0, "sox could not decode \(path): \(result.stderr)")
        return result.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }
    }

    private static func soxType(_ type: AudioFileTypeID) -> String {
        switch type {
        case kAudioFileWAVEType, kAudioFileRF64Type: "wav"
        case kAudioFileWave64Type: "w64"
        case kAudioFileAIFFType: "aiff"
        case kAudioFileAIFCType: "aifc"
        case kAudioFileCAFType: "caf"
        default: "au"
        }
    }

    private static func soxEncoding(_ encoding: Encoding) -> String {
        switch encoding {
        case .s8, .s16, .s24, .s32: "Signed Integer PCM"
        case .u8: "Unsigned Integer PCM"
        case .f32, .f64: "Floating Point PCM"
        case .ulaw: "u-law"
        case .alaw: "A-law"
        }
    }

    /// Every stored format but AIFC's 'in24', 'in32', 'ulaw' and 'alaw' compression types,
    /// which libsndfile writes (and Apple reads) but sox 14.4's AIFC reader does not know; the
    /// round-trip tests cover those.
    static let soxReadable = StoredFormat.all.filter { stored in
        stored.type != kAudioFileAIFCType || [.s16, .f32, .f64].contains(stored.encoding)
    }

    @Test(arguments: soxReadable)
    func filesWrittenHereOpenInSox(_ stored: StoredFormat) throws {
        let url = scratch.url("for-sox.\(stored.extensionName)")
        let channels = 3
        let signal = AF.makeFile(url, stored.type, stored.encoding, channels: channels, bigEndian: stored.bigEndian,
                                 frames: 777, rate: 22050, overRange: false)
        #expect(try soxi("-t", url.path) == Self.soxType(stored.type))
        #expect(try soxi("-r", url.path) == "22050")
        #expect(try soxi("-c", url.path) == "3")
        #expect(try soxi("-s", url.path) == "777")
        #expect(try soxi("-b", url.path) == "\(stored.encoding.bytesPerSample * 8)")
        #expect(try soxi("-e", url.path) == Self.soxEncoding(stored.encoding))

        // sox reads CAF and W64 through libsndfile with float-to-integer rescaling (by the PEAK
        // chunk, or none without one): not a faithful referee for float samples there. The
        // round-trip tests prove those bytes; sox checks the floats of WAVE, RF64, AIFC, NeXT.
        let isFloat = stored.encoding == .f32 || stored.encoding == .f64
        if isFloat, stored.type == kAudioFileCAFType || stored.type == kAudioFileWave64Type { return }
        let expected = int32Samples(signal, stored.encoding.format(channels: channels, bigEndian: stored.bigEndian))
        let decoded = try soxSamples(url.path)
        try #require(decoded.count == expected.count, "sox decoded \(decoded.count) samples, \(expected.count) were written")
        let tolerance: Int64 = isFloat ? 1 : 0
        let mismatches = zip(decoded, expected).enumerated().filter { abs(Int64($0.element.0) - Int64($0.element.1)) > tolerance }
        let first = mismatches.prefix(4).map { "#\($0.offset): sox \($0.element.0), written \($0.element.1)" }
        #expect(mismatches.count == 0, "\(mismatches.count) samples differ: \(first)")
    }

    /// sox command-line encoding options and the data format they should read back as.
    struct SoxWritten: Sendable, CustomTestStringConvertible {
        let name: String
        let options: [String]
        let bits: UInt32
        let formatID: AudioFormatID
        let flags: AudioFormatFlags
        let type: AudioFileTypeID
        var testDescription: String { name }
    }

    static let soxWritten: [SoxWritten] = {
        let signedLE = kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked
        let signedBE = signedLE | kAudioFormatFlagIsBigEndian
        let floatLE = kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked
        return [
            SoxWritten(name: "u8.wav", options: ["-b", "8"], bits: 8, formatID: kAudioFormatLinearPCM, flags: kAudioFormatFlagIsPacked, type: kAudioFileWAVEType),
            SoxWritten(name: "s16.wav", options: ["-b", "16"], bits: 16, formatID: kAudioFormatLinearPCM, flags: signedLE, type: kAudioFileWAVEType),
            SoxWritten(name: "s24.wav", options: ["-b", "24"], bits: 24, formatID: kAudioFormatLinearPCM, flags: signedLE, type: kAudioFileWAVEType),
            SoxWritten(name: "s32.wav", options: ["-b", "32"], bits: 32, formatID: kAudioFormatLinearPCM, flags: signedLE, type: kAudioFileWAVEType),
            SoxWritten(name: "f32.wav", options: ["-e", "floating-point", "-b", "32"], bits: 32, formatID: kAudioFormatLinearPCM, flags: floatLE, type: kAudioFileWAVEType),
            SoxWritten(name: "ulaw.wav", options: ["-e", "u-law"], bits: 8, formatID: kAudioFormatULaw, flags: 0, type: kAudioFileWAVEType),
            SoxWritten(name: "alaw.wav", options: ["-e", "a-law"], bits: 8, formatID: kAudioFormatALaw, flags: 0, type: kAudioFileWAVEType),
            SoxWritten(name: "s8.aiff", options: ["-b", "8"], bits: 8, formatID: kAudioFormatLinearPCM, flags: signedBE, type: kAudioFileAIFFType),
            SoxWritten(name: "s16.aiff", options: ["-b", "16"], bits: 16, formatID: kAudioFormatLinearPCM, flags: signedBE, type: kAudioFileAIFFType),
            SoxWritten(name: "s24.aiff", options: ["-b", "24"], bits: 24, formatID: kAudioFormatLinearPCM, flags: signedBE, type: kAudioFileAIFFType),
            SoxWritten(name: "s32.aiff", options: ["-b", "32"], bits: 32, formatID: kAudioFormatLinearPCM, flags: signedBE, type: kAudioFileAIFFType),
            SoxWritten(name: "f32.aifc", options: ["-e", "floating-point", "-b", "32"], bits: 32, formatID: kAudioFormatLinearPCM,
                       flags: floatLE | kAudioFormatFlagIsBigEndian, type: kAudioFileAIFCType),
            SoxWritten(name: "s16.caf", options: ["-b", "16"], bits: 16, formatID: kAudioFormatLinearPCM, flags: signedBE, type: kAudioFileCAFType),
            SoxWritten(name: "s24.caf", options: ["-b", "24"], bits: 24, formatID: kAudioFormatLinearPCM, flags: signedBE, type: kAudioFileCAFType),
            SoxWritten(name: "s16.au", options: ["-b", "16"], bits: 16, formatID: kAudioFormatLinearPCM, flags: signedBE, type: kAudioFileNextType),
            SoxWritten(name: "s16.w64", options: ["-b", "16"], bits: 16, formatID: kAudioFormatLinearPCM, flags: signedLE, type: kAudioFileWave64Type),
            // FLAC is presented as its decoded integers: native-endian, the file's bit depth.
            SoxWritten(name: "s16.flac", options: ["-b", "16"], bits: 16, formatID: kAudioFormatLinearPCM, flags: signedLE, type: kAudioFileFLACType),
            SoxWritten(name: "s24.flac", options: ["-b", "24"], bits: 24, formatID: kAudioFormatLinearPCM, flags: signedLE, type: kAudioFileFLACType),
        ]
    }()

    @Test(arguments: soxWritten)
    func filesSoxWritesReadBackHere(_ written: SoxWritten) throws {
        let path = scratch.path(written.name)
        let make = try runReferee(sox, ["-D", "-V1", "-n", "-r", "44100", "-c", "2"] + written.options
            + [path, "synth", "0.25", "sine", "440", "sine", "1234", "gain", "-0.5"])
        try #require(make.status == 0, "sox could not write \(written.name): \(make.stderr)")

        let (status, file) = AF.open(URL(fileURLWithPath: path))
        expectStatus(status, noErr, "open \(written.name)")
        guard let file else { return }
        defer { AudioFileClose(file) }
        let format = try #require(AF.dataFormat(file))
        #expect(format.mSampleRate == 44100 && format.mChannelsPerFrame == 2)
        #expect(format.mFormatID == written.formatID && format.mFormatFlags == written.flags && format.mBitsPerChannel == written.bits,
                "data format \(format)")
        #expect(AF.property(file, kAudioFilePropertyFileFormat, UInt32.self).1 == written.type)
        let packets = Int(AF.property(file, kAudioFilePropertyAudioDataPacketCount, UInt64.self).1 ?? 0)
        #expect(packets == 11025)
        let (read, bytes) = AF.read(file, from: 0, packets: packets, bytesPerPacket: Int(format.mBytesPerPacket))
        expectStatus(read, noErr, "read \(written.name)")
        let here = int32Samples(bytes, format)
        let there = try soxSamples(path)
        #expect(here.count == there.count)
        #expect(here == there, "samples differ from sox's decoding")
    }
}
