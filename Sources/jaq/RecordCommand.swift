import ArgumentParser
import AudioToolbox
import FoundationEssentials
import Glibc
import JackControl
import Synchronization

/// What the input callback needs: the writer (set before the queue starts), and whether to re-enqueue.
final class Recorder: @unchecked Sendable {
    var writer: TakeWriter!
    let running = Atomic<Bool>(true)
}

/// The recording callback (the guides' HandleInputBuffer): the buffer itself goes to the
/// writer, and a free one is enqueued in its place.
private func recorderCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                              _ startTime: UnsafePointer<AudioTimeStamp>, _ packets: UInt32,
                              _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
    let recorder = Unmanaged<Recorder>.fromOpaque(userData!).takeUnretainedValue()
    let next = recorder.writer.deliver(buffer, queueFrame: Int64(startTime.pointee.mSampleTime.rounded()))
    if let next, recorder.running.load(ordering: .relaxed) { AudioQueueEnqueueBuffer(queue, next, 0, nil) }
}

struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        _superCommandName: "jaq",
        abstract: "Record JACK ports to files: one per track, aligned to the sample.",
        discussion: """
        PORT is a port name, a regular expression, or "system" (every physical capture port, \
        the default); N ports make N tracks. Files are named from --output: {take} is the take \
        number (the first one free), {track} the port's name, {n} the track number, {date} the \
        date. jaq never reads standard input unless --on-enter is given, so it runs from \
        scripts, cron and systemd.

        The take starts now, at a JACK frame (--at), after a delay (--in), when JACK transport \
        rolls (--transport, which also stops it), or when Enter is pressed (--on-enter); \
        --pre-roll S adds the S seconds before the start. It stops after --duration (exact to \
        the frame), on Ctrl-C/SIGTERM, or when the transport stops; with --multi jaq stays \
        armed and records a take per roll ({take} numbers them). WAV and RF64 takes carry \
        their place (Broadcast Wave time reference): the transport frame of their first \
        sample, or its JACK frame. Compressed takes (-f m4a) \
        start and stop on the same frames. Headers are brought up to \
        date as the take is written and flushed every second, so a take survives SIGKILL and \
        power loss; an .m4a take is fragmented MPEG-4 until it ends, so a killed one opens too \
        (its priming untrimmed). Frames the disk could not keep up with are replaced by silence (the tracks \
        stay aligned) and reported. Tracks from ports with different capture latency are \
        aligned using it (--no-latency-compensation to keep them raw).

        Examples:
          jaq record system                  # every physical input, until Ctrl-C
          jaq record -d 30 system:capture_1 system:capture_2
          jaq record -f flac -o 'song-{take}-{track}.{ext}' 'system:capture_[1-4]$'
          jaq record --interleaved -d 1:00 'jaq-.*:out_'
          jaq record --transport --pre-roll 2 system
          jaq record --transport --multi -o 'song-{take}-{n}.wav' system
          jaq record -f m4a --codec alac --at 960000 -d 30 system
        """)

    @Argument(help: "Ports to record (name, regular expression, or system).")
    var ports: [String] = ["system"]

    @Option(name: .shortAndLong, help: ArgumentHelp("File name pattern.", valueName: "pattern"))
    var output: String?

    @Flag(name: .long, help: "One multichannel file instead of one file per track.")
    var interleaved = false

    @Option(name: .shortAndLong, help: ArgumentHelp("wav (RF64 past 4 GiB), w64, rf64, aiff, caf, flac, ogg, opus, mp3 or m4a (AAC or ALAC, --codec). "
                                                    + "(default: the one --output's extension names, else wav)", valueName: "format"))
    var format: String?

    @Option(name: .long, help: ArgumentHelp("For m4a and caf: aac (AAC-LC, 64 kbit/s a channel) or alac (lossless). PCM caf without it.", valueName: "codec"))
    var codec: String?

    @Option(name: .long, help: ArgumentHelp("For AAC takes: the take's bit rate in kbit/s (128, 128k) or bit/s (128000); default 64 kbit/s a channel, 8-320 a channel.", valueName: "rate"))
    var bitrate: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("16, 24, 32 or float.", valueName: "bits"))
    var bits = "24"

    @Option(name: .shortAndLong, help: ArgumentHelp("Sample rate of the files (default: the server's; others are resampled).", valueName: "hz"))
    var rate: Double?

    @Option(name: .shortAndLong, help: ArgumentHelp("Stop after this long: seconds, m:ss, h:mm:ss, or Nf for frames.", valueName: "time"))
    var duration: String?

    @Option(name: .long, help: ArgumentHelp("Start on this JACK frame (see `jaq time`).", valueName: "frame"))
    var at: Int64?

    @Option(name: .long, help: ArgumentHelp("Start after this long (a time, as --duration).", valueName: "time"),
            transform: TimeValue.parse)
    var `in`: TimeValue?

    @Flag(name: .long, help: "Start when JACK transport rolls and stop when it stops (a jump while it rolls, a DAW's loop, stays in the take and is reported with its take frame).")
    var transport = false

    @Flag(name: .long, help: "Start when Enter is pressed (reads standard input).")
    var onEnter = false

    @Flag(name: .long, help: "With --transport: a tape machine, one take per roll ({take} numbers them) until Ctrl-C.")
    var multi = false

    @Option(name: .long, help: ArgumentHelp("Run this shell command with the take's file names as arguments once they are complete.", valueName: "command"))
    var onTakeEnd: String?

    @Option(name: .long, help: ArgumentHelp("Include this long before the start (a time, as --duration).", valueName: "time"),
            transform: TimeValue.parse)
    var preRoll: TimeValue = TimeValue(seconds: 0)

    @Option(name: .long, help: ArgumentHelp("How far (a time, as --duration) the writer may fall behind the disk before frames are dropped (buffers allocated up front).", valueName: "time"),
            transform: TimeValue.parse)
    var buffer: TimeValue = TimeValue(seconds: 10)

    @Flag(name: .long, help: "Do not align tracks by their ports' capture latency.")
    var noLatencyCompensation = false

    @Flag(name: .shortAndLong, help: "No live display or status lines (errors are still reported).")
    var quiet = false

    @OptionGroup var clockOptions: ClockOptions

    @OptionGroup var serverOptions: ServerOptions

    @OptionGroup var privateServerOptions: PrivateServerOptions

    /// How late a network gap (`--clock`) may be found and its frames still be silenced: the
    /// files are written this far behind the capture while the take runs.
    static let networkGapSeconds = 1.0

    /// Frames of one queue buffer (341 ms at 48 kHz): the queue thread wakes, and each track's
    /// file takes one write, once per buffer. Writes of 16 KiB (4096 frames) cost 64 tracks
    /// about 13 % more CPU than these 64 KiB ones: the kernel's cost is mostly per write call
    /// (Docs/benchmarks.md, "Where the time goes").
    static let bufferFrames = 16384
    /// Buffers the queue keeps enqueued (the rest wait in the writer's free list): one. The
    /// realtime side fills it directly (the queue lends it); when it is full, the input callback
    /// enqueues a free buffer in its place on the queue thread, which lends that one in the same
    /// pass, and the capture ring holds the cycles in between. A second enqueued buffer is never
    /// filled sooner: it only added one more buffer's memory to every take (4 MiB at 64 tracks,
    /// faulted in by the kernel: issue #29).
    static let enqueuedBuffers = 1
    /// Seconds of the queue's capture ring for a plain take at the server's rate (an encoding or
    /// resampling queue keeps 1 s): the queue thread's hiccups (a buffer's hand-over, a stalled
    /// callback), not the disk's, which the buffers (`--buffer`) cover. Every page of it is
    /// touched before the start (the realtime side must not fault): at 64 tracks 0.5 s is
    /// 8 MiB (32768 frames at 48 kHz, 0.68 s), where 1 s was 16 MiB (issue #29).
    static let captureRingSeconds = 0.5

    func validate() throws {
        do { _ = try Trigger(at: at, in: `in`, transport: transport, onEnter: onEnter) } catch { throw ValidationError(error.description) }
        if buffer.isZero { throw ValidationError("--buffer must be more than 0") }
        if let rate, rate < 1000 || rate > 768_000 { throw ValidationError("--rate \(rate) Hz is out of range") }
    }

    /// The usage errors found before a server is looked for, in one line each (validate()'s
    /// would print argument-parser's usage under them).
    private func checkUsage() throws {
        try checkOutputExtension()
        if multi && !transport {
            throw CLIError("--multi records one take per transport roll: give --transport too", exitCode: CLIError.usage)
        }
        if multi, let output, !output.contains("{take}") {
            throw CLIError("--output \(output): --multi makes a take per roll, and needs {take} in the name", exitCode: CLIError.usage)
        }
        if let duration, (TimeSpec.frames(duration, rate: 48000) ?? 0) <= 0 {
            throw CLIError("--duration \(duration): \(TimeSpec.problem(duration))", exitCode: CLIError.usage)
        }
        if let output, !oneFile, ports.count > 1, !output.contains("{track}"), !output.contains("{n}") {
            throw CLIError("--output \(output): several tracks need {track} or {n} in the name (or --interleaved)",
                           exitCode: CLIError.usage)
        }
    }

    func run() throws {
        try runReportingFailure("jaq record", quiet: quiet) {
            try checkUsage()
            try record()
        }
    }

    func record() throws {
        let takeFormat = try takeFileFormat()
        let startup = Watchdog(seconds: Watchdog.startupSeconds,
                               message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s; nothing was recorded")
        let server = try ServerContext(serverOptions, privateServer: privateServerOptions, clientName: "jaq-record-ctl", watchTransport: transport)
        defer { server.stop(closingSession: true) }
        let interruption = Interruption()
        let fileRate = rate ?? server.session.sampleRate
        var durationFrames: Int64?
        if let duration {
            guard let frames = TimeSpec.frames(duration, rate: fileRate), frames > 0 else {
                throw CLIError("--duration \(duration): \(TimeSpec.problem(duration))", exitCode: CLIError.usage)
            }
            durationFrames = frames
        }

        let (sources, physical) = try resolveSources(server)
        try checkEncoding(takeFormat, channels: sources.count)
        // --clock: --at names a frame of the netjack2 master; the clock also shows the network's gaps.
        let masterClock = try clockOptions.clock.map { try MasterClock(port: $0, server: server.name) }
        defer { masterClock?.reader.close() }
        let startAt = try at.map { try masterClock?.localFrame(forMaster: $0) ?? $0 }
        if let masterClock, let at, let startAt { Log.info(masterClock.describe(master: at, local: startAt)) }

        // Files: create them all before recording (and remove them again if one fails).
        let (files, takeNumber) = try createFiles(format: takeFormat, tracks: sources, rate: fileRate)
        let paths = files.map(\.path)
        startup.onFire { for path in paths { unlink(path) } }

        // The input queue: one channel per port, in the file's sample layout, a plane per track.
        var asbd = takeFormat.queueFormat(channels: sources.count, sampleRate: fileRate)
        let recorder = Recorder()
        let user = Unmanaged.passRetained(recorder).toOpaque()
        defer { Unmanaged<Recorder>.fromOpaque(user).release() }
        var queue: AudioQueueRef?
        // Connected to nothing until RecordSession.prepare connects it to the sources (not first
        // to the system's capture ports, to be disconnected from them there).
        let created = AudioQueueNewInput(&asbd, recorderCallback, user, nil, nil, 0, &queue,
                                         device: AudioQueueDevices.jack(clientName: "jaq-record", connectingTo: ""))
        guard created == noErr, let queue else {
            removeFiles(files)
            throw CLIError("cannot create the recording queue: \(server.queueFailure(created, rate: fileRate))")
        }
        defer { AudioQueueDispose(queue, true) }

        let take = RecordSession(command: self, format: takeFormat, server: server, interruption: interruption,
                                 sources: sources, physical: physical, masterClock: masterClock, startAt: startAt,
                                 files: files, takeNumber: takeNumber, queue: queue, recorder: recorder,
                                 fileRate: fileRate, durationFrames: durationFrames)
        try take.prepare()
        try take.start()
        startup.disarm()
        let exitStatus = take.run()
        // The take is on disk; closing the queue's client (and a private server) must not hang.
        Watchdog.guardTeardown(status: exitStatus, outcome: "; the take is complete")
        if exitStatus != 0 { throw ExitCode(exitStatus) }
    }

    /// Every track in one file: --interleaved, and encoded takes (-f m4a, -f caf --codec), which
    /// hold up to 8 channels.
    var oneFile: Bool { interleaved || formatName.lowercased() == "m4a" || codec != nil }

    /// The take's format: -f, else the one --output's extension names (take.aiff: AIFF, as
    /// jaq render and jaq convert read it), else WAV.
    var formatName: String {
        if let format { return format }
        guard let output, let named = OutputFileType(path: output) else { return "wav" }
        return Self.formatName(writing: named.id) ?? "wav"
    }

    /// The -f name a file of `type` is written with, nil if jaq record writes none.
    static func formatName(writing type: AudioFileTypeID) -> String? { formatNames.first { $0.types.contains(type) }?.name }

    /// -f's names and the file types whose extensions they may have: an RF64 or Opus take may
    /// also be named .wav or .ogg. A name alone gives the first entry that has its type (.wav:
    /// wav, .ogg: ogg).
    static let formatNames: [(name: String, types: [AudioFileTypeID])] = [
        ("wav", [kAudioFileWAVEType]), ("w64", [kAudioFileWave64Type]), ("rf64", [kAudioFileRF64Type, kAudioFileWAVEType]),
        ("aiff", [kAudioFileAIFFType, kAudioFileAIFCType]), ("caf", [kAudioFileCAFType]), ("flac", [kAudioFileFLACType]),
        ("ogg", [kAudioFileOggVorbisType]), ("opus", [kAudioFileOggOpusType, kAudioFileOggVorbisType]),
        ("mp3", [kAudioFileMP3Type]), ("m4a", [kAudioFileM4AType, kAudioFileMPEG4Type]),
    ]

    /// An --output whose extension names a type jaq record does not make, or another than -f's:
    /// a usage error, not a file whose name says one format and whose bytes are another.
    private func checkOutputExtension() throws {
        guard let output, let named = OutputFileType(path: output) else { return }
        guard let format else {
            if Self.formatName(writing: named.id) == nil {
                throw CLIError("--output \(output): jaq record writes .wav, .w64, .rf64, .aiff, .caf, .flac, .ogg, .opus, .mp3 or .m4a",
                               exitCode: CLIError.usage)
            }
            return
        }
        guard let types = Self.formatNames.first(where: { $0.name == format.lowercased() })?.types, !types.contains(named.id) else { return }
        throw CLIError("--output \(output) names \(named.name), and -f \(format) writes another format: drop -f, or end the name in .{ext}",
                       exitCode: CLIError.usage)
    }

    /// The take files' format (-f, -b, --codec, --bitrate).
    private func takeFileFormat() throws -> AudioTakeFile.Format {
        if let take = try CompressedTake(format: formatName, codec: codec, bits: bits, bitRate: bitrate) {
            // The range for one channel to eight; the ports' count is checked once they are known.
            if let bitRate = take.bitRate, !(8_000...2_560_000).contains(Int(bitRate)) {
                throw CLIError("--bitrate \(bitRate / 1000)k: AAC takes 8-320 kbit/s a channel", exitCode: CLIError.usage)
            }
            return take.format
        }
        if let bitrate { throw CLIError("--bitrate \(bitrate) is for AAC takes (-f m4a, or -f caf --codec aac)", exitCode: CLIError.usage) }
        do { return try AudioTakeFile.Format(name: formatName, bits: bits) } catch { throw CLIError(error.description, exitCode: CLIError.usage) }
    }

    /// An encoded take's file holds every track: at most 8, at a bit rate AAC takes for them.
    private func checkEncoding(_ takeFormat: AudioTakeFile.Format, channels: Int) throws {
        guard let encoding = takeFormat.encoding else { return }
        guard channels <= 8 else { throw CLIError("\(channels) ports: AAC and ALAC takes hold at most 8 channels") }
        if let bitRate = encoding.bitRate, !(8_000 * channels...320_000 * channels).contains(Int(bitRate)) {
            throw CLIError("--bitrate \(bitRate / 1000)k for \(channels) channel(s): AAC takes 8-320 kbit/s a channel", exitCode: CLIError.usage)
        }
    }

    /// The device frame an input queue started on (its queue time 0), once it runs.
    static func startDeviceFrame(_ queue: AudioQueueRef) -> Int64? {
        var running: UInt32 = 0
        var runningSize = UInt32(4)
        guard AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &runningSize) == noErr, running != 0 else { return nil }
        var value: Float64 = 0
        var size = UInt32(8)
        guard AudioQueueGetProperty(queue, kAudioQueueProperty_StartDeviceFrame, &value, &size) == noErr, value > 0 else { return nil }
        return Int64(value)
    }

    /// The check that the server runs the queue at all: the queue not started 10 s after its
    /// start frame, counted both on the device clock and on the wall clock. Device frames alone
    /// pass in a moment in freewheel, before the queue thread has published its start; wall time
    /// alone passes while jackd stalls (waiting for a client), when no frame passes either.
    struct StartWatch {
        let origin: Int64
        let rate: Double
        private var passedAt: Date?
        init(origin: Int64, rate: Double) {
            self.origin = origin
            self.rate = rate
        }

        mutating func hasTimedOut(deviceNow: Int64, started: Bool) -> Bool {
            guard !started, deviceNow > origin else {
                passedAt = nil
                return false
            }
            let since = passedAt ?? Date()
            passedAt = since
            return Date().timeIntervalSince(since) > 10 && deviceNow > origin + Int64(10 * rate)
        }
    }


    /// The queue's timeline discontinuities so far (xruns, lost data, rate changes).
    static func discontinuities(_ queue: AudioQueueRef) -> UInt32 {
        var count: UInt32 = 0
        var size = UInt32(4)
        AudioQueueGetProperty(queue, kAudioQueueProperty_DiscontinuityCount, &count, &size)
        return count
    }

    /// Frames (at the file rate) each track is read later than the earliest, from the ports' capture latency.
    func captureSkew(_ queue: AudioQueueRef, tracks: Int, rate: Double, deviceRate: Double) -> [Int64] {
        usleep(50_000)  // the server recomputes latencies after the connections
        var ranges = [AudioValueRange](repeating: .init(), count: tracks)
        var size = UInt32(tracks * MemoryLayout<AudioValueRange>.size)
        guard AudioQueueGetProperty(queue, kAudioQueueProperty_JACKPortLatency, &ranges, &size) == noErr else {
            return Array(repeating: 0, count: tracks)
        }
        let latencies = ranges.map { $0.mMaximum }
        let least = latencies.min() ?? 0
        return latencies.map { Int64((($0 - least) * rate / deviceRate).rounded()) }
    }

    /// The ports to record, in order, and the server's physical capture ports.
    func resolveSources(_ server: ServerContext) throws -> (sources: [String], physical: [String]) {
        let candidates = server.session.audioPortNames(inputs: false)
        let physical = server.session.audioPortNames(inputs: false, physicalOnly: true)
        var sources: [String] = []
        for port in ports {
            do {
                for name in try JackSession.resolvePorts(port, candidates: candidates, physical: physical) where !sources.contains(name) {
                    sources.append(name)
                }
            } catch {
                throw CLIError("port '\(port)': \(error.reason)" + (physical.isEmpty && port == "system" ? ServerContext.noPhysicalPortsHint : ""))
            }
        }
        guard !sources.isEmpty else { throw CLIError("no ports to record") }
        guard sources.count <= 64 else { throw CLIError("\(sources.count) ports: a take holds at most 64 tracks") }
        return (sources, physical)
    }

    /// Creates the take's files (take number: the first that names no existing file).
    /// Creates the files of the first take number, from `firstTake` on, for which none exists
    /// (a tape machine passes the last one's number + 1: a take moved away by --on-take-end
    /// does not free its number for a later take).
    func createFiles(format: AudioTakeFile.Format, tracks: [String], rate: Double, firstTake: Int = 1) throws -> (files: [TakeFile], take: Int) {
        let pattern = output ?? (oneFile ? "take-{take}.{ext}" : "take-{take}-{track}.{ext}")
        if !oneFile && tracks.count > 1 && !pattern.contains("{track}") && !pattern.contains("{n}") {
            throw CLIError("--output \(pattern): several tracks need {track} or {n} in the name (or --interleaved)", exitCode: CLIError.usage)
        }
        let date = LocalTime().date
        // Track names: the port's name, with its client's unless that is "system"; unique.
        var trackNames: [String] = []
        for port in tracks {
            let parts = port.split(separator: ":", maxSplits: 1).map(String.init)
            var base = parts.count == 2 && parts[0] != "system" ? "\(parts[0])_\(parts[1])" : (parts.last ?? "track")
            base = sanitized(base, limit: 48)
            var candidate = base
            var suffix = 2
            while trackNames.contains(candidate) { candidate = "\(base)-\(suffix)"; suffix += 1 }
            trackNames.append(candidate)
        }
        func path(take: Int, track: Int) -> String {
            let trackName = trackNames[track]
            return expandTakeName(pattern, [("take", zeroPadded(take, width: 3)), ("track", trackName),
                                            ("n", zeroPadded(track + 1, width: 2)), ("date", date), ("ext", format.fileExtension)])
        }
        let layout: [[Int]] = oneFile ? [Array(0..<tracks.count)] : tracks.indices.map { [$0] }
        var take = firstTake
        while layout.indices.contains(where: { FileManager.default.fileExists(atPath: path(take: take, track: $0)) }) {
            take += 1
            if !pattern.contains("{take}") { throw CLIError("\(path(take: take, track: 0)): exists (put {take} in --output)") }
        }
        var files: [TakeFile] = []
        for (i, channels) in layout.enumerated() {
            do {
                let take = try AudioTakeFile(path: path(take: take, track: i), format: format, sampleRate: Int(rate),
                                             channelCount: channels.count)
                files.append(TakeFile(take: take, channels: channels))
            } catch {
                removeFiles(files)
                throw CLIError(error.description)
            }
        }
        return (files, take)
    }

    func removeFiles(_ files: [TakeFile]) {
        for file in files {
            try? file.take.close()
            unlink(file.path)
        }
    }
}
