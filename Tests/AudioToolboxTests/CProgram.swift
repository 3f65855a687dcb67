import Foundation
import Testing
import JackTestSupport

/// Builds C programs with `cc` against the headers in Sources/CAudioToolbox/include and the
/// libAudioToolbox.so that `swift build`/`swift test` made, as a C user of jaq would.
enum CProgram {
    /// The package root, found from this file's path.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Where the Swift runtime libraries are (next to the `swift` on PATH, else /opt/swift).
    static var swiftRuntimeDirectory: String {
        if let swift = tool("swift") {
            let resolved = URL(fileURLWithPath: swift).resolvingSymlinksInPath()
            let candidate = resolved.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("lib/swift/linux").path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
        }
        return "/opt/swift/usr/lib/swift/linux"
    }

    /// The directory holding libAudioToolbox.so: the one this test binary was built into.
    /// When it is missing there (the test binary was copied or run by hand), it is built into
    /// .build/c-programs, a scratch path of its own: SwiftPM holds the lock of the main build
    /// directory while `swift test` runs.
    static func libraryDirectory() throws -> String {
        let testBinaryDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().path
        let candidates = [testBinaryDirectory, packageRoot.appendingPathComponent(".build/debug").path]
        if let found = candidates.first(where: { FileManager.default.fileExists(atPath: "\($0)/libAudioToolbox.so") }) {
            return found
        }
        let scratch = packageRoot.appendingPathComponent(".build/c-programs").path
        let swift = try #require(tool("swift"), "libAudioToolbox.so is missing and there is no swift on PATH to build it")
        let build = try run(swift, ["build", "--package-path", packageRoot.path, "--scratch-path", scratch, "--product", "AudioToolbox"])
        try #require(build.status == 0, "swift build --product AudioToolbox failed:\n\(build.stderr)")
        return "\(scratch)/debug"
    }

    /// Compiles `source` (a path relative to the package root) into `output`, against the
    /// libAudioToolbox.so in `libraries` (default: the one this test binary was built with).
    /// - Returns: cc's exit status and diagnostics.
    /// `linking` are linked after libAudioToolbox (e.g. "-ljack" for a program that also calls libjack).
    static func compile(_ source: String, into output: URL, flags: [String] = [], libraries: String? = nil,
                        linking extra: [String] = []) throws
        -> (status: Int32, diagnostics: String) {
        let cc = try #require(tool("cc"), "cc is not installed (apt-get install gcc)")
        let libraries = try libraries ?? libraryDirectory()
        let result = try run(cc, flags + [
            packageRoot.appendingPathComponent(source).path,
            "-I", packageRoot.appendingPathComponent("Sources/CAudioToolbox/include").path,
            "-L", libraries, "-lAudioToolbox",
        ] + extra + [
            "-Wl,-rpath,\(libraries):\(swiftRuntimeDirectory)",
            "-o", output.path,
        ])
        return (result.status, result.stderr)
    }
}
