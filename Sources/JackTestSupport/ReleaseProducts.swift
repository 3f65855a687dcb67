import Foundation

/// The release build's products — `libAudioToolbox.so` and `jaq` as `swift build -c release`
/// makes them, what `make install` and `make deb` ship — for the tests of the release library
/// and of the installed package.
///
/// `make test` builds release before `swift test`, so they are normally in .build/release. When
/// they are missing there, or older than a file of the targets they are built from (a
/// `swift test` run by hand after an edit), they are built into .build/tests-release: a
/// scratch path of its own, since `swift test` holds the lock of .build.
public enum ReleaseProducts {
    /// The package root, found from this file's path.
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The products a test of the release build needs, with the source folders they are built from.
    static let library = ["AudioToolbox", "CAudioToolbox", "QueueCore", "JackDriver", "SoundFile", "CJack", "CSndFile", "CSoxr"]
    static let products: [(file: String, product: String, sources: [String])] = [
        ("libAudioToolbox.so", "AudioToolbox", library),
        ("jaq", "jaq", library + ["jaq"]),
    ]

    /// The directory holding the current release products (built once per test process if need be).
    public static func directory() throws -> String { try located.get() }

    private static let located: Result<String, Error> = Result {
        let release = packageRoot.appendingPathComponent(".build/release").path
        if isCurrent(release) { return release }
        let scratch = packageRoot.appendingPathComponent(".build/tests-release").path
        let swift = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swift" }
            + ["/opt/swift/usr/bin/swift"]
        guard let swiftPath = swift.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw JackServerError("\(release) has no current release build and there is no swift to make one (make release)")
        }
        // The flags make release links with (the library's version script), from the same script.
        let flags = try runProcess([packageRoot.appendingPathComponent("Configs/release-flags.sh").path, swiftPath],
                                   currentDirectory: packageRoot.path)
        guard flags.status == 0 else { throw JackServerError("Configs/release-flags.sh failed: \(flags.error)") }
        let linkFlags = flags.output.split(separator: "\n").map(String.init)
        for (_, product, _) in products {
            let build = try runProcess([swiftPath, "build", "-c", "release", "--package-path", packageRoot.path,
                                        "--scratch-path", scratch, "--product", product] + linkFlags, timeout: 1800)
            guard build.status == 0 else {
                throw JackServerError("swift build -c release --product \(product) failed: \(build.output)\(build.error)")
            }
        }
        return scratch + "/release"
    }

    /// swift-argument-parser's generate-manual tool, which `make install-built` runs for the
    /// manual pages: the one `make release` (and `make test`) built, or, when `swift test` runs
    /// alone, one built now in a scratch path of its own (the test run holds `.build`).
    public static func generateManualTool() throws -> String { try manualTool.get() }

    private static let manualTool: Result<String, Error> = Result {
        let built = packageRoot.appendingPathComponent(".build/debug/generate-manual").path
        if FileManager.default.isExecutableFile(atPath: built) { return built }
        let scratch = packageRoot.appendingPathComponent(".build/tests-release").path
        let swift = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swift" }
            + ["/opt/swift/usr/bin/swift"]
        guard let swiftPath = swift.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw JackServerError("\(built) is missing and there is no swift to build it (make manual-tool)")
        }
        let build = try runProcess([swiftPath, "build", "--package-path", packageRoot.path, "--scratch-path", scratch,
                                    "--product", "generate-manual"], timeout: 900)
        guard build.status == 0 else { throw JackServerError("swift build --product generate-manual failed: \(build.output)\(build.error)") }
        return scratch + "/debug/generate-manual"
    }

    /// Whether `directory` holds every product, each newer than the sources it is built from,
    /// and a library linked as make release links it (a plain `swift build -c release` exports
    /// its Swift symbols too).
    static func isCurrent(_ directory: String) -> Bool {
        guard let symbols = try? runProcess(["nm", "-D", "--defined-only", "\(directory)/libAudioToolbox.so"]),
              symbols.status == 0, !symbols.output.contains(" $s") else { return false }
        return products.allSatisfy { file, _, sources in
            guard let built = modificationDate("\(directory)/\(file)") else { return false }
            return sources.allSatisfy { (newestFile(under: packageRoot.appendingPathComponent("Sources/\($0)")) ?? .distantPast) <= built }
        }
    }

    static func newestFile(under folder: URL) -> Date? {
        guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.contentModificationDateKey]) else { return nil }
        return files.compactMap { ($0 as? URL).flatMap { try? $0.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate } }.max()
    }

    static func modificationDate(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }
}
