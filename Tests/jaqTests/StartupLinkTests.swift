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
        }
    }
}
