import Foundation
import JackTestSupport
import Testing

extension ExamplesTests {
    /// Recorder (recorder.c, Example 6-10, in Swift) and the C original, on private servers at
    /// the book's 44100 Hz. The book's recorder records for whole seconds and prints nothing,
    /// so the tests watch its file: it grows past the header once the queue runs.
    @Suite struct RecorderTests {
        static let rate = 44100
        /// An AIFF header as libsndfile writes it is well under this size.
        static let headerBytes = 4096

        func startRecorder(_ take: String, seconds: Int, device: String, server: JackServer, scratch: Scratch) throws -> Background {
            let recorder = try Background(try example("Recorder"), [take, "\(seconds)", "--device", device],
                                          environment: childEnvironment(server), log: scratch.path("Recorder.log"))
            // Its first 183-frame buffer is written 4 ms after the queue starts.
            try #require(waitUntil(10) { fileSize(take) > 54 || !recorder.isRunning }, "Recorder did not start: \(recorder.output)")
            return recorder
        }

        @Test func sixtySecondsFromOurOutputQueueInFreewheelAreRecordedBitExact() throws {
            let scratch = try Scratch()
            let source = noise(frames: 60 * Self.rate, channels: 2)
            let server = try JackServer(sampleRate: Self.rate, periodFrames: 256)
            defer { server.stop() }
            try withQueues(on: server) {
                let player = try QueuePlayer(server: server, source: source, channels: 2, rate: Double(Self.rate), name: "examples-player")
                defer { player.dispose() }
                let launched = player.deviceFrameNow
                let take = scratch.path("take.aif")
                let recorder = try startRecorder(take, seconds: 4, device: player.ports, server: server, scratch: scratch)

                try server.run(["jack_freewheel", "y"])
                try player.start()
                try #require(player.waitUntilPlayed(timeout: 60), "the output queue did not play out")
                let end = player.startDeviceFrame + Int64(source.count / 2)
                #expect(waitUntil(30) { fileSize(take) >= Int(end - launched) * 4 + Self.headerBytes }, "Recorder fell behind")
                // Freewheeling on, Recorder would fill the disk with silence until its 4 s are up: stop
                // the server now (which also ends the freewheel: `jack_freewheel n` hangs jackd 1.9.21).
                // Recorder finds its queue gone when its select() returns, and closes the file as usual.
                player.dispose()
                server.stop()
                #expect(recorder.waitForExit(timeout: 30) == 0, "\(recorder.output)")

                let info = try soxi(take)
                #expect(info.type == "aiff" && info.rate == "\(Self.rate)" && info.channels == "2" && info.bits == "16", "\(info)")
                let recording = try soxInt16(take, scratch: scratch)
                guard let offset = locate(source, in: recording, channels: 2) else { return }
                print("measured: output queue -> Recorder: first frame at file frame \(offset) (Recorder does not say where it started)")
            }
        }

        @Test func ecasoundIsRecordedFrameForFrame() throws {
            let scratch = try Scratch()
            let source = noise(frames: 4 * Self.rate, channels: 3)
            let file = scratch.path("three.wav")
            try writeWAV(file, source, channels: 3, rate: Self.rate)
            let server = try JackServer(sampleRate: Self.rate, periodFrames: 1024)  // room on a loaded machine
            defer { server.stop() }
            let take = scratch.path("take.aif")
            let recorder = try startRecorder(take, seconds: 7, device: "", server: server, scratch: scratch)

            // ecasound connects before it plays and plays every frame; its first two channels go
            // to Recorder, the third to the server's playback port.
            let ecasound = try Background(
                try tool("ecasound", package: "ecasound"),
                ["-q", "-f:s16_le,3,\(Self.rate)", "-i", file, "-o", "jack_multi,Recorder-in:in_1,Recorder-in:in_2,system:playback_1"],
                environment: childEnvironment(server), log: scratch.path("ecasound.log"))
            #expect(ecasound.waitForExit(timeout: 30) == 0, "\(ecasound.output)")
            #expect(recorder.waitForExit(timeout: 30) == 0, "\(recorder.output)")

            let recording = try soxInt16(take, scratch: scratch)
            checkFrames(server) {
                let firstTwo = (0..<source.count / 3).flatMap { [source[3 * $0], source[3 * $0 + 1]] }
                guard let offset = locate(firstTwo, in: recording, channels: 2) else { return }
                print("measured: ecasound -> Recorder: first frame at file frame \(offset) (ecasound's start is its own)")
            }
        }

        @Test func theCOriginalBuildsAndRecordsAnAIFFThatSoxReads() throws {
            let scratch = try Scratch()
            let program = scratch.path("recorder")
            let build = try CRecorder.compile(into: program)
            #expect(build.status == 0, "cc failed:\n\(build.diagnostics)")
            // The only warning is the book's own: argv[1] (char *) passed as const UInt8 *; clang on
            // macOS gives it too.
            let warnings = build.diagnostics.split(separator: "\n").filter { $0.contains("warning:") }
            #expect(warnings.count == 1 && warnings.allSatisfy { $0.contains("-Wpointer-sign") }, "\(build.diagnostics)")
            guard build.status == 0 else { return }

            let server = try JackServer(sampleRate: Self.rate, periodFrames: 256)
            defer { server.stop() }
            let take = scratch.path("take.aif")
            let run = try runProcess([program, take, "1"], environment: childEnvironment(server), timeout: 30)
            #expect(run.status == 0, "\(run.output)\(run.error)")
            let info = try soxi(take)
            #expect(info.type == "aiff" && info.rate == "\(Self.rate)" && info.channels == "2" && info.bits == "16"
                    && info.encoding == "Signed Integer PCM", "\(info)")
            // One second of the dummy server's (silent) capture ports, give or take its periods.
            let frames = try #require(Int(try runProcess(["soxi", "-s", take]).output.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(abs(frames - Self.rate) < 8 * 256, "\(frames) frames")
            #expect(try soxInt16(take, scratch: scratch).count == 2 * frames, "sox decodes every frame")
        }
    }
}

/// Builds Sources/Examples/recorder-c/recorder.c with `cc -Wall` against the headers and
/// libAudioToolbox.so, as a C user of jaq would.
enum CRecorder {
    static func compile(into output: String) throws -> (status: Int32, diagnostics: String) {
        let libraries = try libraryDirectory()
        let result = try runProcess([
            try tool("cc", package: "gcc"), "-Wall",
            packageRoot.appendingPathComponent("Sources/Examples/recorder-c/recorder.c").path,
            "-I", packageRoot.appendingPathComponent("Sources/CAudioToolbox/include").path,
            "-L", libraries, "-lAudioToolbox", "-Wl,-rpath,\(libraries):/opt/swift/usr/lib/swift/linux",
            "-o", output,
        ])
        return (result.status, result.error)
    }

    /// The directory of libAudioToolbox.so: next to the test binary, else built now (into a
    /// scratch path of its own: `swift test` holds the lock of the package's .build).
    static func libraryDirectory() throws -> String {
        let testBinaryDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().path
        for candidate in [testBinaryDirectory, packageRoot.appendingPathComponent(".build/debug").path]
        where FileManager.default.fileExists(atPath: candidate + "/libAudioToolbox.so") {
            return candidate
        }
        let scratch = packageRoot.appendingPathComponent(".build/examples-c").path
        let build = try runProcess([try tool("swift", package: "swift"), "build", "--package-path", packageRoot.path,
                                    "--scratch-path", scratch, "--product", "AudioToolbox"], timeout: 900)
        try #require(build.status == 0, "swift build --product AudioToolbox failed: \(build.error)")
        return scratch + "/debug"
    }
}
