import Testing
import Foundation
import JackTestSupport
import SoundFile

/// The built `jaq` binary (the test target depends on it, so it sits next to the test bundle).
let jaqBinary: String = {
    // `make fuzz-freewheel` runs the long bounce with the release build.
    if let chosen = ProcessInfo.processInfo.environment["JAQ_BINARY"], FileManager.default.isExecutableFile(atPath: chosen) {
        return chosen
    }
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [bundle.appendingPathComponent("jaq"), bundle.deletingLastPathComponent().appendingPathComponent("jaq")] {
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
    }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/jaq").path
}()

/// A scratch directory for one test, removed afterwards by the caller.
func scratchDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "jaq-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Removes a scratch directory, unless `JAQ_KEEP` is set (to look at a failed test's files).
func removeScratch(_ path: String) {
    if ProcessInfo.processInfo.environment["JAQ_KEEP"] == nil { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs jaq (`binary`: the built one unless given) against `server` (stdin closed, not a
/// terminal); returns status and output.
func jaq(_ arguments: [String], server: JackServer?, timeout: Double = 60, directory: String? = nil, binary: String = jaqBinary)
    throws -> (status: Int32, output: String, error: String) {
    var environment = server?.environment ?? ProcessInfo.processInfo.environment
    if server == nil { environment["JACK_DEFAULT_SERVER"] = "jaq-test-none-\(getpid())" }
    return try runProcess([binary] + arguments, environment: environment, timeout: timeout, currentDirectory: directory)
}

/// Starts jaq (`binary`: the built one unless given) in the background against `server`, output to a log file;
/// `prefix` runs it through another command (`ip netns exec NS`: on another "machine").
func jaqInBackground(_ arguments: [String], server: JackServer, log: String, directory: String? = nil,
                     binary: String = jaqBinary, prefix: [String] = []) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: prefix.first ?? binary)
    process.arguments = prefix.isEmpty ? arguments : Array(prefix.dropFirst()) + [binary] + arguments
    process.environment = server.environment
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let handle = FileHandle(forWritingAtPath: log)
    process.standardOutput = handle
    process.standardError = handle
    process.standardInput = FileHandle.nullDevice
    try process.run()
    return process
}

/// Kills `record` (a `jaq record` logging to `log`) with SIGKILL `seconds` after its
/// "recording ..." line appears (or 10 s after the call without one), and reaps it.
func killWithSIGKILL(_ record: Process, secondsAfterRecordingIn log: String, seconds: Double) {
    var waited = 0
    while !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("recording") && waited < 200 {
        usleep(50_000)
        waited += 1
    }
    usleep(UInt32(seconds * 1_000_000))
    kill(record.processIdentifier, SIGKILL)
    record.waitUntilExit()
}

/// The JACK frame time now, from `jaq time`.
func frameNow(_ server: JackServer, binary: String = jaqBinary) throws -> Int64 {
    let result = try jaq(["time"], server: server, binary: binary)
    guard let frame = Int64(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw JackServerError("jaq time printed \(result.output) \(result.error)")
    }
    return frame
}

/// Writes a mono 24-bit WAV whose sample n is `offset + n` (a ramp that names each frame),
/// or a multichannel one where channel c adds c * 1_000_000. With `step` 256 every sample
/// is also exact in 16 bits.
func writeRamp(_ path: String, frames: Int, channels: Int = 1, offset: Int32 = 1, step: Int32 = 1, rate: Int = 48000) throws {
    let info = SoundFile.Info(sampleRate: rate, channelCount: channels, format: SoundFile.Format(.wav, .pcm24))
    let file = try SoundFile(path: path, mode: .write, format: info)
    var samples = [Int32](repeating: 0, count: frames * channels)
    for n in 0..<frames {
        for c in 0..<channels { samples[n * channels + c] = ((offset &+ Int32(n) &* step &+ Int32(c) * 1_000_000) & 0x7FFFFF) << 8 }
    }
    let transfer = samples.withUnsafeBufferPointer { file.writeFrames($0) }
    guard transfer.count == frames else { throw JackServerError("short write of \(path)") }
    try file.close()
}

/// Reads a file as 24-bit integers (any format libsndfile reads), interleaved.
func readSamples24(_ path: String) throws -> (channels: Int, samples: [Int32]) {
    let (channels, samples) = try readInterleaved(path, as: Int32.self)
    return (channels, samples.map { $0 >> 8 })
}

/// sox's view of a file: (channels, samples per channel), or nil if sox can't read it.
func soxInfo(_ path: String) -> (channels: Int, samples: Int)? {
    guard let channels = try? runProcess(["soxi", "-c", path]), channels.status == 0,
          let samples = try? runProcess(["soxi", "-s", path]), samples.status == 0,
          let c = Int(channels.output.trimmingCharacters(in: .whitespacesAndNewlines)),
          let s = Int(samples.output.trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
    // sox must also decode the whole file.
    guard let decode = try? runProcess(["sox", path, "-n", "stat"]), decode.status == 0 else { return nil }
    return (c, s)
}

/// How far ahead of now the tests schedule a start: enough for a player and a recorder to be
/// started and connected on a loaded 2-core machine (2 s was once missed).
let startLead: Int64 = 4 * 48000

/// Starts `jaq play --at` (with `options`) for `files` in `dir`, `startLead` frames ahead, and
/// waits until `count` of its ports containing `ports` exist. Returns the start frame and the player.
func playAhead(_ files: [String], options: [String] = [], server: JackServer, dir: String, ports: String, count: Int = 1,
               sourceLocation: SourceLocation = #_sourceLocation) throws -> (at: Int64, play: Process) {
    let at = try frameNow(server) + startLead
    let play = try jaqInBackground(["play"] + options + ["--at", "\(at)"] + files, server: server, log: "\(dir)/play.log", directory: dir)
    #expect(waitForPorts(server, containing: ports, count: count) != nil, "the player's ports \(ports)", sourceLocation: sourceLocation)
    return (at, play)
}


/// The numbers that follow each `words` in a log ("transport rolling at JACK frame 144896"), in order.
func frames(after words: String, in log: String) -> [Int64] {
    log.components(separatedBy: words).dropFirst().compactMap { Int64($0.drop { !$0.isNumber }.prefix { $0.isNumber }) }
}

/// The number that follows the first `words` in a log, or nil.
func frame(after words: String, in log: String) -> Int64? { frames(after: words, in: log).first }
