import Foundation
import JackTestSupport
import RefereeTesting
import Testing

/// The example tests, one at a time: each starts its own jackd, and several realtime servers
/// side by side on a small machine would measure the machine rather than the examples.
@Suite(.serialized, .refereeCrashesAreKnownIssues) struct ExamplesTests {}

/// The package root, found from this file's path.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A built example (PlayFile, RecordFile, Recorder). The test target depends on the example
/// targets, so `swift test` builds them next to the test binary.
func example(_ name: String) throws -> String {
    let testBinaryDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let candidates = [testBinaryDirectory.appendingPathComponent(name).path,
                      packageRoot.appendingPathComponent(".build/debug/\(name)").path]
    return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) },
                        "\(name) is not built: swift build --product \(name)")
}

/// A program running in the background against a server; its output goes to a log file.
///
/// Started with posix_spawn and an empty signal mask: the test runner's threads block
/// SIGINT and SIGTERM, and a child started with Foundation's Process would inherit that
/// mask and never see the Ctrl-C the tests send.
final class Background {
    let pid: pid_t
    let log: String
    private var status: Int32?

    init(_ executable: String, _ arguments: [String], environment: [String: String], log: String) throws {
        self.log = log
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        let error = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard error == 0 else { throw JackServerError("cannot start \(executable): \(String(cString: strerror(error)))") }
        pid = child
    }

    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    var isRunning: Bool { reap(blocking: false) == nil }

    /// Sends `signal` (SIGINT: what Ctrl-C does).
    func send(_ signal: Int32) { if isRunning { kill(pid, signal) } }

    /// Waits for the exit (SIGKILL after `timeout`) and returns the exit status (128 + n for signal n).
    @discardableResult
    func waitForExit(timeout: Double = 30) -> Int32 {
        if !waitUntil(timeout, { !isRunning }) { kill(pid, SIGKILL) }
        return reap(blocking: true) ?? -1
    }

    private func reap(blocking: Bool) -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, blocking ? 0 : WNOHANG) == pid else { return nil }
        status = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
        return status
    }

    deinit {
        if isRunning { kill(pid, SIGKILL) }
        _ = reap(blocking: true)
    }
}

/// jack_capture recording `channels` ports of its own into `scratch`/capture.wav as float WAV,
/// connecting nothing (-mc): the player under test connects to them. Returns once its ports
/// exist, with their names comma-separated (a CurrentDevice / --device value).
func startJackCapture(_ server: JackServer, scratch: Scratch, channels: Int) throws
    -> (capture: Background, path: String, ports: String) {
    let path = scratch.path("capture.wav")
    let capture = try Background(try tool("jack_capture", package: "jack-capture"),
                                 ["-mc", "-ns", "-dc", "-c", "\(channels)", path],
                                 environment: server.environment, log: scratch.path("jack_capture.log"))
    try #require(waitUntil(10) { (try? server.run(["jack_lsp"]))?.contains("jack_capture:input\(channels)") == true },
                 "jack_capture did not come up: \(capture.output)")
    return (capture, path, (1...channels).map { "jack_capture:input\($0)" }.joined(separator: ","))
}

/// The integer after `label` in `text` ("from device frame 123" → 123).
func number(after label: String, in text: String) -> Int64? {
    guard let range = text.range(of: label) else { return nil }
    return Int64(text[range.upperBound...].prefix { $0.isNumber || $0 == "-" })
}

/// The size of a file in bytes (0 if it does not exist).
func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
}

// MARK: - Signals and files

/// A deterministic test signal: white noise over the whole int16 range (both extremes occur
/// in the first frames), never 0, so that silence around it marks where it starts and ends,
/// and no stretch of it repeats, so that a lost or repeated frame cannot go unnoticed.
func noise(frames: Int, channels: Int, seed: UInt32 = 0x9E37_79B9) -> [Int16] {
    var state = seed
    var samples = [Int16](repeating: 0, count: frames * channels)
    for i in samples.indices {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        let value = Int16(truncatingIfNeeded: state >> 16)
        samples[i] = value == 0 ? 1 : value
    }
    if samples.count >= 2 { samples[0] = .max; samples[1] = .min }
    return samples
}

/// Writes interleaved 16-bit samples as a canonical PCM WAV file (written here byte by byte,
/// not with the library under test).
func writeWAV(_ path: String, _ samples: [Int16], channels: Int, rate: Int) throws {
    try writeCanonicalWAV(path, formatTag: 1, sampleBytes: 2, channels: channels, rate: rate, sampleCount: samples.count) { append in
        for sample in samples { append(UInt32(UInt16(bitPattern: sample)), 2) }
    }
}

/// Writes interleaved 32-bit float samples as a WAV file (format 3, IEEE float), byte by byte.
func writeFloatWAV(_ path: String, _ samples: [Float], channels: Int, rate: Int) throws {
    try writeCanonicalWAV(path, formatTag: 3, sampleBytes: 4, channels: channels, rate: rate, sampleCount: samples.count) { append in
        for sample in samples { append(sample.bitPattern, 4) }
    }
}

/// A 44-byte-header WAV file; `body` appends each sample's low `bytes` bytes, little-endian.
private func writeCanonicalWAV(_ path: String, formatTag: UInt16, sampleBytes: Int, channels: Int, rate: Int,
                               sampleCount: Int, _ body: ((UInt32, Int) -> Void) -> Void) throws {
    var data = Data(capacity: 44 + sampleCount * sampleBytes)
    func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
    let dataBytes = sampleCount * sampleBytes
    data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + dataBytes))
    data.append(contentsOf: Array("WAVE".utf8))
    data.append(contentsOf: Array("fmt ".utf8)); append(UInt32(16))
    append(formatTag); append(UInt16(channels)); append(UInt32(rate)); append(UInt32(rate * channels * sampleBytes))
    append(UInt16(channels * sampleBytes)); append(UInt16(sampleBytes * 8))
    data.append(contentsOf: Array("data".utf8)); append(UInt32(dataBytes))
    body { value, bytes in withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0.prefix(bytes)) } }
    try data.write(to: URL(fileURLWithPath: path))
}

/// A file's samples as sox decodes them: 16-bit integers (sox, not the library under test,
/// reads what the examples wrote).
func soxInt16(_ path: String, scratch: Scratch) throws -> [Int16] {
    try soxRaw(path, encoding: ["-e", "signed-integer", "-b", "16"], scratch: scratch, as: Int16.self)
}

/// A float file's samples as sox decodes them: 32-bit floats.
func soxFloat(_ path: String, scratch: Scratch) throws -> [Float] {
    try soxRaw(path, encoding: ["-e", "floating-point", "-b", "32"], scratch: scratch, as: Float.self)
}

private func soxRaw<T>(_ path: String, encoding: [String], scratch: Scratch, as type: T.Type) throws -> [T] {
    let raw = scratch.path("decoded-\(UInt32.random(in: 0...UInt32.max)).raw")
    let result = try runProcess([try tool("sox", package: "sox"), path, "-t", "raw"] + encoding + ["-L", raw])
    try #require(result.status == 0, "sox could not read \(path): \(result.error)")
    let bytes = try Data(contentsOf: URL(fileURLWithPath: raw))
    try? FileManager.default.removeItem(atPath: raw)
    return bytes.withUnsafeBytes { Array($0.bindMemory(to: T.self)) }
}

/// soxi's one-line answers about a file: type, rate, channels, bits, encoding.
func soxi(_ path: String) throws -> (type: String, rate: String, channels: String, bits: String, encoding: String) {
    let soxi = try tool("soxi", package: "sox")
    func ask(_ flag: String) throws -> String {
        try runProcess([soxi, flag, path]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    return (try ask("-t"), try ask("-r"), try ask("-c"), try ask("-b"), try ask("-e"))
}

// MARK: - Where a signal is in a recording

/// Where `signal` lies in `recording` (both interleaved with `channels` channels), checked frame
/// by frame: the recording is silent before it, holds every frame of it exactly and in order,
/// and (unless `trailingMayDiffer`) is silent after it — nothing missing, repeated or added.
/// - Returns: the frame of the recording where the signal starts, or nil (with the failure recorded).
func locate<T: Numeric & Equatable>(_ signal: [T], in recording: [T], channels: Int,
                                    trailingMayDiffer: Bool = false,
                                    sourceLocation: SourceLocation = #_sourceLocation) -> Int? {
    let frames = signal.count / channels
    let recordedFrames = recording.count / channels
    func fail(_ message: String) { Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation) }
    func frameIsSilent(_ f: Int) -> Bool { (0..<channels).allSatisfy { recording[f * channels + $0] == 0 } }
    guard let offset = (0..<recordedFrames).first(where: { !frameIsSilent($0) }) else {
        fail("the recording (\(recordedFrames) frames) is silent")
        return nil
    }
    guard offset + frames <= recordedFrames else {
        fail("the recording ends \(offset + frames - recordedFrames) frames before the signal does "
             + "(signal at frame \(offset), \(frames) frames; recording \(recordedFrames))")
        return nil
    }
    for i in 0..<signal.count where recording[offset * channels + i] != signal[i] {
        fail("signal frame \(i / channels) channel \(i % channels) (recording frame \(offset + i / channels)): "
             + "\(recording[offset * channels + i]) != \(signal[i])")
        return nil
    }
    if !trailingMayDiffer, let extra = (offset + frames..<recordedFrames).first(where: { !frameIsSilent($0) }) {
        fail("recording frame \(extra), \(extra - offset - frames) frames after the signal's end, is not silent")
        return nil
    }
    return offset
}

/// What a child process needs to use `server` (and never to start a server of its own).
func childEnvironment(_ server: JackServer) -> [String: String] {
    var environment = server.environment
    environment["JACK_NO_START_SERVER"] = "1"
    return environment
}

/// Where each channel of a player that loses frames at its start and end (jack-play) lies in a
/// recording: each channel holds one contiguous run of the source's channel, exactly, with
/// silence before and after it, and every channel at the same shift (the player's channels
/// stay in step).
/// - Returns: the recording frame of source frame 0, and the source frames each channel holds.
func locateRuns(_ source: [Int16], sourceChannels: Int, in recording: [Int16], channels: Int,
                sourceLocation: SourceLocation = #_sourceLocation) -> (shift: Int, runs: [Range<Int>])? {
    func fail(_ message: String) { Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation) }
    let sourceFrames = source.count / sourceChannels
    let recordedFrames = recording.count / channels
    var shift: Int?
    var runs: [Range<Int>] = []
    for c in 0..<channels {
        let recorded = { (f: Int) in recording[f * channels + c] }
        let original = { (f: Int) in source[f * sourceChannels + c] }
        guard let first = (0..<recordedFrames).first(where: { recorded($0) != 0 }),
              let last = (0..<recordedFrames).last(where: { recorded($0) != 0 }) else {
            fail("channel \(c) of the recording is silent")
            return nil
        }
        // The source frame the first sound is: the source has no stretch of 16 equal samples twice.
        let probe = min(16, last - first + 1)
        guard let start = (0...(sourceFrames - probe)).first(where: { s in
            (0..<probe).allSatisfy { original(s + $0) == recorded(first + $0) }
        }) else {
            fail("channel \(c): the recording's first sound (frame \(first)) is nowhere in the source")
            return nil
        }
        let channelShift = first - start
        if let shift, shift != channelShift {
            fail("channel \(c) is shifted by \(channelShift) frames, channel 0 by \(shift)")
            return nil
        }
        shift = channelShift
        guard last - channelShift < sourceFrames else {
            fail("channel \(c) goes on \(last - channelShift - sourceFrames + 1) frames after the source's end")
            return nil
        }
        if let wrong = (first...last).first(where: { recorded($0) != original($0 - channelShift) }) {
            fail("channel \(c), recording frame \(wrong) (source frame \(wrong - channelShift)): "
                 + "\(recorded(wrong)) != \(original(wrong - channelShift))")
            return nil
        }
        runs.append(start..<(last - channelShift + 1))
    }
    return shift.map { ($0, runs) }
}

/// The xruns `server` has logged: cycles it could not run in time, whose frames JACK lost.
func xruns(_ server: JackServer) -> Int { server.xrunCount }

/// Runs the frame-by-frame checks of a realtime test. When the server logged xruns — the
/// machine was too loaded to run its cycles in time (other test targets running alongside,
/// say), and JACK itself lost frames — a failure is recorded as a known issue naming them,
/// not as the example's failure; without xruns every frame must be right.
func checkFrames(_ server: JackServer, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) rethrows {
    let count = xruns(server)
    try withKnownIssue(Comment(rawValue: "the server logged \(count) xruns: realtime cycles were lost"),
                       isIntermittent: true, sourceLocation: sourceLocation, body, when: { count > 0 })
}
