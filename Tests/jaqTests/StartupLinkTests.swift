import Foundation
import JackTestSupport
import Testing

/// The jaq tool and libAudioToolbox start without Foundation (issue #29): they link
/// FoundationEssentials alone, not libFoundation.so with FoundationInternationalization and ICU,
/// whose relocations cost every start a few milliseconds. CoreFoundation (inside libFoundation.so)
/// is opened only by the first call that needs it (Docs/engine.md). An `import Foundation` in
/// a source of either fails here.
@Suite struct StartupLinkTests {
    /// What full Foundation brings; FoundationEssentials (libFoundationEssentials.so) is not among them.
    static let foundation: Set<String> = ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"]

    /// The names of the shared libraries `ldd` lists for `binary` (its own and theirs).
    static func linkedLibraries(_ binary: String) throws -> [String] {
        let ldd = try runProcess(["ldd", binary])
        try #require(ldd.status == 0, "ldd \(binary): \(ldd.error)")
        return ldd.output.split(separator: "\n").compactMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
    }

    /// The libraries whose initializers the dynamic loader calls while `jaq ARGUMENTS` runs
    /// (LD_DEBUG=files), by file name; the run must succeed.
    static func librariesOpened(by arguments: [String], environment: [String: String], directory: String? = nil) throws -> [String] {
        var environment = environment
        environment["LD_DEBUG"] = "files"
        let run = try runProcess([jaqBinary] + arguments, environment: environment, timeout: 60, currentDirectory: directory)
        #expect(run.status == 0, "jaq \(arguments): \(run.error.suffix(400))")
        return run.error.split(separator: "\n").compactMap { line -> String? in
            guard let start = line.range(of: "calling init: ") else { return nil }
            return line[start.upperBound...].split(separator: "/").last.map(String.init)
        }
    }

    @Test(arguments: ["jaq", "libAudioToolbox.so"])
    func linksNoFoundationButItsEssentials(_ product: String) throws {
        let binary = URL(fileURLWithPath: jaqBinary).deletingLastPathComponent().appendingPathComponent(product).path
        try #require(FileManager.default.fileExists(atPath: binary), "\(binary) is built with the tests")
        let libraries = try Self.linkedLibraries(binary)
        #expect(libraries.contains("libswiftCore.so"), "ldd read \(binary): \(libraries)")
        let linked = libraries.filter(Self.foundation.contains)
        #expect(linked.isEmpty, "\(product) links \(linked.joined(separator: ", ")): a source imports Foundation, or a target links it")
    }

    /// Nor does anything open it as the tool starts and reads a file (the dynamic loader's own
    /// account, LD_DEBUG=files, names every library whose initializers it calls; a mere look
    /// for one already open, dlopen's RTLD_NOLOAD, calls none).
    @Test func theToolOpensNoFoundationToPrintItsVersionOrReadAFile() throws {
        let scratch = scratchDirectory("startup-link")
        defer { removeScratch(scratch) }
        let file = "\(scratch)/tone.wav"
        try writeRamp(file, frames: 4800, step: 256)
        for arguments in [["--version"], ["info", file]] {
            let opened = try Self.librariesOpened(by: arguments, environment: ProcessInfo.processInfo.environment)
            #expect(opened.contains("libFoundationEssentials.so"), "LD_DEBUG=files names what is opened: \(opened)")
            let foundation = opened.filter(Self.foundation.contains)
            #expect(foundation.isEmpty, "jaq \(arguments.joined(separator: " ")) opens \(foundation.joined(separator: ", "))")
            let resampler = opened.filter(Self.resampler.contains)
            #expect(resampler.isEmpty, "jaq \(arguments.joined(separator: " ")) opens \(resampler.joined(separator: ", "))")
        }
    }

    /// A take and a playback neither: jaq names its device and reads its ports through the Swift
    /// extension (AudioQueueSetStringProperty), not CFStrings, so CoreFoundation stays closed.
    @Test func aTakeAndAPlaybackOpenNoFoundation() throws {
        let server = try JackServer()
        defer { server.stop() }
        let scratch = scratchDirectory("startup-take")
        defer { removeScratch(scratch) }
        try writeRamp("\(scratch)/tone.wav", frames: 4800, step: 256)
        for arguments in [["play", "--quiet", "tone.wav"], ["record", "--quiet", "-d", "4800f", "-o", "take-{n}.wav", "system:capture_1"]] {
            let opened = try Self.librariesOpened(by: arguments, environment: server.environment, directory: scratch)
            #expect(opened.contains("libjack.so.0"), "LD_DEBUG=files names what is opened: \(opened)")
            let foundation = opened.filter(Self.foundation.contains)
            #expect(foundation.isEmpty, "jaq \(arguments[0]) opens \(foundation.joined(separator: ", "))")
            // At the server's rate nothing resamples: libsoxr (and its OpenMP runtime) stay closed.
            let resampler = opened.filter(Self.resampler.contains)
            #expect(resampler.isEmpty, "jaq \(arguments[0]) at the server's rate opens \(resampler.joined(separator: ", "))")
        }
    }

    /// libsoxr and the OpenMP runtime it links: opened by the first sample-rate conversion.
    static let resampler: Set<String> = ["libsoxr.so.0", "libgomp.so.1"]

    /// A file at another rate than the server's is resampled: libsoxr is opened then, and the
    /// file plays; the tool links neither it nor libgomp.
    @Test func aPlaybackAtAnotherRateOpensTheResampler() throws {
        let binary = URL(fileURLWithPath: jaqBinary).deletingLastPathComponent()
        for product in ["jaq", "libAudioToolbox.so"] {
            let libraries = try Self.linkedLibraries(binary.appendingPathComponent(product).path)
            let resampler = libraries.filter(Self.resampler.contains)
            #expect(resampler.isEmpty, "\(product) links \(resampler.joined(separator: ", "))")
        }
        let server = try JackServer()
        defer { server.stop() }
        let scratch = scratchDirectory("startup-resample")
        defer { removeScratch(scratch) }
        try writeRamp("\(scratch)/tone.wav", frames: 4410, step: 256, rate: 44100)
        let opened = try Self.librariesOpened(by: ["play", "--quiet", "tone.wav"], environment: server.environment, directory: scratch)
        #expect(opened.contains("libsoxr.so.0"), "a 44.1 kHz file on a 48 kHz server is resampled: \(opened)")
    }

    /// Without libsoxr (JAQ_SOXR_LIBRARY names a library that does not exist), whatever converts
    /// a rate fails with one line saying so, and leaves no file behind; a take at the server's
    /// rate still records.
    @Test func withoutLibsoxrAConversionBetweenRatesSaysSoAndTheServersRateStillWorks() throws {
        let server = try JackServer()
        defer { server.stop() }
        let scratch = scratchDirectory("no-soxr")
        defer { removeScratch(scratch) }
        try writeRamp("\(scratch)/tone.wav", frames: 4410, step: 256, rate: 44100)
        try writeRamp("\(scratch)/tone48.wav", frames: 4800, step: 256)
        var environment = server.environment
        environment["JAQ_SOXR_LIBRARY"] = "libjaq-no-such-soxr.so.0"
        let runs: [(arguments: [String], made: String)] = [
            (["play", "--quiet", "tone.wav"], ""),
            // At the server's rate, but Varispeed resamples (libsoxr) to change the speed.
            (["play", "--quiet", "--speed", "1.5", "--varispeed", "tone48.wav"], ""),
            (["convert", "--data", "LEI16@48000", "tone.wav", "out.wav"], "out.wav"),
            (["record", "--quiet", "--rate", "44100", "-d", "4410f", "-o", "take-{n}.wav", "system:capture_1"], "take-01.wav"),
        ]
        for run in runs {
            let result = try runProcess([jaqBinary] + run.arguments, environment: environment, timeout: 60, currentDirectory: scratch)
            let lines = result.error.split(separator: "\n")
            #expect(result.status == 1, "jaq \(run.arguments[0]): \(result.status) \(result.error)")
            #expect(lines.count == 1 && result.error.contains("libsoxr is not installed")
                    && result.error.contains("libjaq-no-such-soxr.so.0"), "jaq \(run.arguments[0]): \(result.error)")
            if !run.made.isEmpty {
                #expect(!FileManager.default.fileExists(atPath: "\(scratch)/\(run.made)"), "jaq \(run.arguments[0]) left \(run.made)")
            }
        }
        let take = try runProcess([jaqBinary, "record", "--quiet", "-d", "4800f", "-o", "at-rate-{n}.wav", "system:capture_1"],
                                  environment: environment, timeout: 60, currentDirectory: scratch)
        #expect(take.status == 0, "a take at the server's rate needs no libsoxr: \(take.error)")
        #expect(FileManager.default.fileExists(atPath: "\(scratch)/at-rate-01.wav"))
    }
}
