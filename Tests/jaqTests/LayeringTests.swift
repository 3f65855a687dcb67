import Foundation
import Testing

/// `jaq` is a client of the public API: it imports AudioToolbox (and Sync, the one lock and wait of every thread, and JackControl with JackCommon,
/// for the JACK server's ports, transport, time and clock), never the engine (QueueCore), the
/// engine's device (JackDriver), libsndfile's wrapper (SoundFile) or the codecs (AudioCodec)
/// underneath. SwiftPM lets a target import any module its dependencies build, so the sources
/// are read here.
@Suite struct LayeringTests {
    /// FoundationEssentials, not Foundation: the tool starts without ICU (StartupLinkTests).
    static let allowed: Set<String> = ["ArgumentParser", "AudioToolbox", "JackControl", "JackCommon", "Sync", "FoundationEssentials", "Glibc",
                                       "Dispatch", "Synchronization"]

    /// The modules a Swift source imports: `import M`, `@testable import M`, `import struct M.T`.
    static func importedModules(_ source: String) -> [String] {
        source.split(separator: "\n").compactMap { line -> String? in
            var words = line.split(separator: " ").map(String.init).drop { $0.hasPrefix("@") }
            guard words.first == "import" else { return nil }
            words = words.dropFirst()
            let kinds: Set<String> = ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"]
            if let kind = words.first, kinds.contains(kind) { words = words.dropFirst() }
            return words.first.map { String($0.split(separator: ".")[0]) }
        }
    }

    @Test func importedModulesAreReadFromEveryFormOfImport() {
        #expect(Self.importedModules("import A\n@testable import B\n@_exported import func C.f\n  // import D\nimport struct E.T") == ["A", "B", "C", "E"])
    }

    @Test func theCommandLineToolImportsOnlyThePublicAPIAndTheServer() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folder = root.appendingPathComponent("Sources/jaq")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }.sorted()
        #expect(files.count > 10, "the tool's sources are at \(folder.path)")
        for file in files {
            let source = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let modules = Self.importedModules(source)
            let below = modules.filter { !Self.allowed.contains($0) }
            #expect(below.isEmpty, "Sources/jaq/\(file) imports \(below.joined(separator: ", ")): use AudioToolbox's public API")
        }
    }

    /// The Apple API names codecs by Apple's format IDs and AudioCodec's `Codec`: FFmpeg's C
    /// types stay inside AudioCodec (issue #28).
    @Test func theAppleAPIDoesNotImportFFmpeg() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folder = root.appendingPathComponent("Sources/AudioToolbox")
        let enumerator = try #require(FileManager.default.enumerator(atPath: folder.path))
        let files = enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted()
        #expect(files.count > 20, "the API's sources are at \(folder.path)")
        for file in files {
            let source = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let ffmpeg = Self.importedModules(source).filter { $0.hasPrefix("CFFmpeg") }
            #expect(ffmpeg.isEmpty, "Sources/AudioToolbox/\(file) imports \(ffmpeg.joined(separator: ", ")): use AudioCodec's types")
        }
    }
}
