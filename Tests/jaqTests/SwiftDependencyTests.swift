import Testing
import Foundation
import JackTestSupport

/// jaq as a Swift package takes it (Docs/install.md, "From Swift"): a package outside the
/// repository that depends on it by version, `.package(url: …, from: "<version>")`, resolves,
/// builds and runs the playing guide's PlayFile. SwiftPM refuses a versioned dependency whose
/// targets carry unsafe flags, so this fails the day one comes back.
@Suite(.serialized) struct SwiftDependencyTests {
    /// This tree (committed or not) as a git repository of its own, tagged with the version
    /// `make version` prints: what a release of it is.
    func releasedCopy(in scratch: String) throws -> (url: String, version: String) {
        let root = ReleaseProducts.packageRoot.path
        let version = try runProcess(["make", "-s", "--no-print-directory", "-C", root, "version"]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(!version.isEmpty)
        let copy = "\(scratch)/jaq"
        // The files git knows and the new ones it does not ignore, as they are now.
        let files = try runProcess(["sh", "-c", "cd '\(root)' && git ls-files -co --exclude-standard -z | xargs -0 tar cf - | (mkdir -p '\(copy)' && cd '\(copy)' && tar xf -)"])
        try #require(files.status == 0, "\(files.error)")
        for step in [["init", "-q"], ["add", "-A"], ["-c", "user.name=jaq", "-c", "user.email=jaq@localhost", "commit", "-q", "-m", "release"],
                     ["tag", version]] {
            let git = try runProcess(["git", "-C", copy] + step)
            try #require(git.status == 0, "git \(step): \(git.error)")
        }
        return ("file://\(copy)", version)
    }

    @Test func aPackageDependingOnJaqByVersionBuildsAndPlaysAFile() throws {
        let scratch = scratchDirectory("swift-dependency")
        defer { removeScratch(scratch) }
        let (url, version) = try releasedCopy(in: scratch)
        let consumer = "\(scratch)/player"
        let examples = ReleaseProducts.packageRoot.appendingPathComponent("Sources/Examples").path
        let fm = FileManager.default
        try fm.createDirectory(atPath: "\(consumer)/Sources", withIntermediateDirectories: true)
        try fm.copyItem(atPath: "\(examples)/PlayFile", toPath: "\(consumer)/Sources/PlayFile")
        try fm.copyItem(atPath: "\(examples)/Support", toPath: "\(consumer)/Sources/ExampleSupport")
        try """
            // swift-tools-version:6.1
            import PackageDescription

            let package = Package(
                name: "player",
                dependencies: [.package(url: "\(url)", from: "\(version)")],
                targets: [
                    .target(name: "ExampleSupport", dependencies: [.product(name: "AudioToolbox", package: "jaq")]),
                    .executableTarget(name: "PlayFile", dependencies: [.product(name: "AudioToolbox", package: "jaq"), "ExampleSupport"]),
                ]
            )
            """.write(toFile: "\(consumer)/Package.swift", atomically: true, encoding: .utf8)
        let swift = ["/opt/swift/usr/bin/swift"].first { fm.isExecutableFile(atPath: $0) } ?? "swift"
        let build = try runProcess([swift, "build", "--package-path", consumer, "--product", "PlayFile"], timeout: 900)
        try #require(build.status == 0, "swift build of a package depending on jaq \(version): \(build.output)\(build.error)")
        let resolved = try String(contentsOfFile: "\(consumer)/Package.resolved", encoding: .utf8)
        #expect(resolved.contains("\"version\" : \"\(version)\""), "resolved by version: \(resolved)")

        // It plays: a second of a 16-bit ramp to a private server's ports, every frame.
        try writeRamp("\(scratch)/ramp.wav", frames: 48000, step: 256)
        let server = try JackServer(sampleRate: 48000, periodFrames: 256)
        defer { server.stop() }
        let play = try runProcess(["\(consumer)/.build/debug/PlayFile", "\(scratch)/ramp.wav"], environment: server.environment, timeout: 60)
        #expect(play.status == 0, "PlayFile: \(play.output)\(play.error)")
        #expect(play.output.contains("played 48000"), "\(play.output)")
    }
}
