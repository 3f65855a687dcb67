import ArgumentParser
import AudioToolbox
import Foundation
import JackDriver
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

    @Option(name: .shortAndLong, help: ArgumentHelp("wav (RF64 past 4 GiB), w64, rf64, aiff, caf, flac, ogg, opus, mp3 or m4a (AAC or ALAC, --codec).", valueName: "format"))
    var format = "wav"

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
    /// Buffers the queue keeps enqueued (the rest wait in the writer's free list). The capture
    /// ring (1 s) covers the queue thread's hiccups; these only need to keep it fed.
    static let enqueuedBuffers = 2

    func validate() throws {
        do { _ = try Trigger(at: at, in: `in`, transport: transport, onEnter: onEnter) } catch { throw ValidationError(error.description) }
        if buffer.isZero { throw ValidationError("--buffer must be more than 0") }
        if let rate, rate < 1000 || rate > 768_000 { throw ValidationError("--rate \(rate) Hz is out of range") }
    }

    /// The usage errors found before a server is looked for, in one line each (validate()'s
    /// would print argument-parser's usage under them).
    private func checkUsage() throws {
        if multi && !transport {
            throw CLIError("--multi records one take per transport roll: give --transport too", exitCode: CLIError.usage)
        }
        if multi, let output, !output.contains("{take}") {
            throw CLIError("--output \(output): --multi makes a take per roll, and needs {take} in the name", exitCode: CLIError.usage)
        }
        if let duration, (TimeSpec.frames(duration, rate: 48000) ?? 0) <= 0 {
            throw CLIError("--duration \(duration): \(TimeSpec.problem(duration))", exitCode: CLIError.usage)
        }
        if let output, !interleaved, ports.count > 1, !output.contains("{track}"), !output.contains("{n}") {
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
        // m4a (AAC or ALAC) and compressed CAF: an encoding input queue (CompressedTake.swift).
        if let take = try CompressedTake(format: format, codec: codec, bits: bits, bitRate: bitrate) {
            if multi {
                throw CLIError("--multi: \(format) takes with --codec record one roll each; a tape machine records wav, rf64, w64, aiff, caf, flac, ogg, opus or mp3",
                               exitCode: CLIError.usage)
            }
            return try recordCompressed(take)
        }
        if let bitrate { throw CLIError("--bitrate \(bitrate) is for AAC takes (-f m4a, or -f caf --codec aac)", exitCode: CLIError.usage) }
        let takeFormat: AudioTakeFile.Format
        do { takeFormat = try AudioTakeFile.Format(name: format, bits: bits) } catch { throw CLIError(error.description, exitCode: CLIError.usage) }
        let startup = Watchdog(seconds: Watchdog.startupSeconds,
                               message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s; nothing was recorded")
        let server = try ServerContext(serverOptions, privateServer: privateServerOptions, clientName: "jaq-record-ctl", watchTransport: transport)
        defer { server.stop(closingSession: true) }
        let interruption = Interruption()
        let deviceRate = server.session.sampleRate
        let fileRate = rate ?? deviceRate
        var durationFrames: Int64?
        if let duration {
            guard let frames = TimeSpec.frames(duration, rate: fileRate), frames > 0 else {
                throw CLIError("--duration \(duration): \(TimeSpec.problem(duration))", exitCode: CLIError.usage)
            }
            durationFrames = frames
        }

        let (sources, physical) = try resolveSources(server)
        // --clock: --at names a frame of the netjack2 master; the clock also shows the network's gaps.
        let masterClock = try clockOptions.clock.map { try MasterClock(port: $0, server: server.name) }
        defer { masterClock?.reader.close() }
        let startAt = try at.map { try masterClock?.localFrame(forMaster: $0) ?? $0 }
        if let masterClock, let at, let startAt { Log.info(masterClock.describe(master: at, local: startAt)) }
        // The control client follows the transport (--transport) and watches the sources
        // (SourceWatch) for the whole take: one client for both, and kept open, so libjack's
        // shared memory stays mapped and locked once for the process.
        let session: JackSession! = transport ? server.session : nil

        // Files: create them all before recording (and remove them again if one fails).
        var (files, takeNumber) = try createFiles(format: takeFormat, tracks: sources, rate: fileRate)
        let paths = files.map(\.path)
        startup.onFire { for path in paths { unlink(path) } }

        // The input queue: one channel per port, in the file's sample layout, a plane per track.
        var asbd = takeFormat.queueFormat(channels: sources.count, sampleRate: fileRate)
        let recorder = Recorder()
        let user = Unmanaged.passRetained(recorder).toOpaque()
        defer { Unmanaged<Recorder>.fromOpaque(user).release() }
        var queue: AudioQueueRef?
        let created = AudioQueueNewInput(&asbd, recorderCallback, user, nil, nil, 0, &queue,
                                         device: AudioQueueDevices.jack(clientName: "jaq-record"))
        guard created == noErr, let queue else {
            removeFiles(files)
            throw CLIError("cannot create the recording queue: \(server.queueFailure(created))")
        }
        defer { AudioQueueDispose(queue, true) }
        let connected = setStringProperty(queue, kAudioQueueProperty_CurrentDevice, sources.joined(separator: ","))
        guard connected == noErr else {
            removeFiles(files)
            throw CLIError("cannot connect to \(sources.joined(separator: ", ")): \(describe(connected, file: false))")
        }
        // Ports whose client leaves (a netjack2 slave, a DAW): a gap in their track, or the end of
        // the take when the server's own device went (a netjack2 master left its slave).
        let queueInputs = stringProperty(queue, kAudioQueueProperty_JACKPortNames)?.split(separator: ",").map(String.init) ?? []
        let sourceWatch: SourceWatch? = SourceWatch(session: server.session, sources: sources, queueInputs: queueInputs, physical: Set(physical))
        // Meters only for the live display: they cost the realtime side a pass over the samples.
        let showMeters = !quiet && stdoutIsTerminal
        var on: UInt32 = showMeters ? 1 : 0
        AudioQueueSetProperty(queue, kAudioQueueProperty_EnableLevelMetering, &on, 4)
        // The capture ring covers the queue thread's hiccups; the buffers (--buffer) the disk's.
        var ringSeconds = 1.0
        AudioQueueSetProperty(queue, kAudioQueueProperty_CaptureBufferSeconds, &ringSeconds, 8)

        // Latency compensation: each track is read later by its extra capture latency.
        let skip = noLatencyCompensation ? Array(repeating: Int64(0), count: sources.count)
            : captureSkew(queue, tracks: sources.count, rate: fileRate, deviceRate: deviceRate)
        // Every buffer is allocated now (nothing grows while recording): --buffer seconds of
        // them for the disk, and what the writer keeps for the pre-roll, latency and triggers.
        let bufferFrames = Self.bufferFrames
        let enqueued = Self.enqueuedBuffers
        let bufferCount = TakeWriter.bufferCount(bufferSeconds: buffer.seconds(at: fileRate), rate: fileRate, bufferFrames: bufferFrames,
                                                 preroll: preRoll.seconds(at: fileRate), maxSkip: skip.max() ?? 0, stopsByTrigger: transport || masterClock != nil,
                                                 enqueued: enqueued)
        let activeWriter = TakeWriter(format: takeFormat, channelCount: sources.count, rate: fileRate, files: files,
                                      skip: skip, bufferFrames: bufferFrames, bufferCount: bufferCount,
                                      enqueuedCount: enqueued, stopsByTrigger: transport,
                                      muteSeconds: masterClock != nil ? Self.networkGapSeconds : 0)
        recorder.writer = activeWriter
        if skip.contains(where: { $0 != 0 }) {
            Log.info("latency compensation (frames): " + zip(sources, skip).map { "\($0.0) +\($0.1)" }.joined(separator: ", "))
        }
        let allocated = activeWriter.allocateBuffers(on: queue)
        guard allocated == noErr else {
            removeFiles(files)
            throw CLIError("cannot allocate \(bufferCount) buffers of \(bufferFrames) frames: \(describe(allocated, file: false))")
        }
        activeWriter.state.withLock {
            $0.preroll = preRoll.frames(at: fileRate)
            $0.keepsFromQueueStart = startAt != nil || `in` != nil
            $0.takesFollow = multi
        }
        activeWriter.start()

        // Start the queue on a known frame: queue time 0 is that frame.
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(queue, &now)
        let prerollDevice = Int64((preRoll.seconds(at: fileRate) * deviceRate).rounded())
        var queueStart = AudioTimeStamp()
        queueStart.mSampleTime = now.mSampleTime + (0.05 * deviceRate).rounded()
        queueStart.mFlags = .sampleTimeValid
        var takeStartDevice: Int64?
        if let at = startAt {
            var frame = AudioTimeStamp()
            frame.mSampleTime = Double(at)
            frame.mFlags = .sampleTimeValid
            var translated = AudioTimeStamp()
            AudioQueueDeviceTranslateTime(queue, &frame, &translated)
            let normalized = Int64(translated.mSampleTime)
            takeStartDevice = normalized
            // With --clock the queue runs a little before the start: a jump of the clock before it can still move the start earlier.
            let early = masterClock != nil ? Int64(MasterClock.startMarginSeconds * deviceRate) : 0
            if Double(normalized - prerollDevice - early) > queueStart.mSampleTime {
                queueStart.mSampleTime = Double(normalized - prerollDevice - early)
            }
        } else if let delay = `in` {
            takeStartDevice = Int64(now.mSampleTime) + delay.frames(at: deviceRate)
            if Double(takeStartDevice! - prerollDevice) > queueStart.mSampleTime { queueStart.mSampleTime = Double(takeStartDevice! - prerollDevice) }
        }
        guard AudioQueueStart(queue, &queueStart) == noErr else {
            removeFiles(files)
            throw CLIError("cannot start recording")
        }
        // Queue time 0 is the device frame the queue really started on: the one asked for, or
        // later if the machine was too slow to start it by then.
        let requestedOrigin = Int64(queueStart.mSampleTime)
        var startWatch = StartWatch(origin: requestedOrigin, rate: deviceRate)
        func startedOrigin() -> Int64? { Self.startDeviceFrame(queue) }
        let toQueueFrames = { (deviceFrames: Int64) -> Int64 in Int64((Double(deviceFrames) * fileRate / deviceRate).rounded()) }
        let toDeviceFrames = { (queueFrames: Int64) -> Int64 in Int64((Double(queueFrames) * deviceRate / fileRate).rounded()) }
        let prerollFrames = preRoll.frames(at: fileRate)
        // Where the take belongs on the timeline (its files' Broadcast Wave chunk): on the
        // transport's frames when it follows the transport (`transportRoll`: the roll's device
        // frame and position) or the transport rolls as it starts, else on JACK's.
        var place: TakePlace?
        func beginTake(atDevice frame: Int64, origin: Int64, transportRoll: (deviceFrame: Int64, position: Int64)? = nil) {
            let offset = toQueueFrames(frame - origin)
            let takeStart = max(0, offset - prerollFrames)
            let rolling = transportRoll == nil ? server.session.transportPosition() : nil
            let anchor = transportRoll ?? rolling.flatMap { $0.rolling ? ($0.deviceFrame, Int64($0.frame)) : nil }
            let firstDevice = origin + toDeviceFrames(takeStart + (skip.min() ?? 0))
            // --at F --clock PORT: F is the master's frame, and so is the take's place.
            let masterOffset = masterClock != nil ? at.flatMap { at in takeStartDevice.map { at - $0 } } : nil
            let newPlace = TakePlace.of(firstDeviceFrame: firstDevice, transport: anchor, masterOffset: masterOffset,
                                        deviceRate: deviceRate, fileRate: fileRate)
            let broadcast = newPlace.broadcastWaves(files: files, sources: sources, format: takeFormat, rate: fileRate)
            place = newPlace
            activeWriter.state.withLock {
                $0.takeStart = takeStart
                $0.broadcast = broadcast
                if let durationFrames { $0.end = durationFrames + prerollFrames - max(0, prerollFrames - offset) }
            }
        }
        var targets = files.map { $0.path }.joined(separator: ", ")
        let trackCount = "\(sources.count) track\(sources.count == 1 ? "" : "s")"
        var trigger = try Trigger.forCommand(at: startAt, in: `in`, transport: transport, onEnter: onEnter)
        trigger.arm(now: Int64(now.mSampleTime), deviceRate: deviceRate, origin: requestedOrigin,
                    transportChanges: transport ? session.transportChanges().count : 0)
        switch trigger.start {
        case .transport: break  // said once the queue records (in the main loop): a roll before that is lost
        case .enter: Log.info("press Enter to start recording (\(trackCount) armed)")
        case .frame, .delay: Log.info("recording \(trackCount) from JACK frame \(takeStartDevice!) to \(targets)")
        case .now: break
        }
        startup.disarm()
        let enterPressed = SharedFlag()
        if onEnter {
            Thread.detachNewThread {
                _ = readLine()
                enterPressed.set(1)
            }
        }

        // The main loop: start/stop triggers, display, errors.
        let display = RecordDisplay(enabled: !quiet && stdoutIsTerminal, tracks: sources, rate: fileRate)
        var stopReason: String?
        var exitStatus: Int32 = 0
        var lastStatus = Date()
        var armedAnnounced = false
        // The transport jumped while rolling (a DAW's loop, a locate while playing): the take
        // records on, frame after frame; each jump is reported with its take frame.
        var relocationsSeen = transport ? session.transportRelocations(after: 0).count : 0
        var rollFrame = Int64.max
        func reportRelocations(origin: Int64) {
            let seen = session.transportRelocations(after: relocationsSeen)
            relocationsSeen = seen.count
            for relocation in seen.relocations where relocation.deviceFrame > rollFrame {
                let takeFrame = toQueueFrames(relocation.deviceFrame - origin) - (activeWriter.state.withLock { $0.takeStart } ?? 0)
                Log.info("transport relocated: take frame \(takeFrame) (JACK frame \(relocation.deviceFrame)) plays transport frame \(relocation.transportFrame)")
            }
            if seen.lost > 0 { Log.error("\(seen.lost) transport relocations came too fast to report") }
        }
        var discontinuitiesAtTakeStart: UInt32?
        // The last take ended as asked (its duration, the transport's stop): kept even if empty.
        var reachedEnd = false
        var serverGone = false
        var deviceLost: String?
        func takeFrame(_ deviceFrame: Int64) -> Int64 {
            let start = activeWriter.state.withLock { $0.takeStart } ?? 0
            return toQueueFrames(deviceFrame - (startedOrigin() ?? requestedOrigin)) - start
        }
        func takeTime(_ deviceFrame: Int64) -> String { TimeSpec.clock(takeFrame(deviceFrame), rate: fileRate) }
        var networkGaps: [(takeFrame: Int64, frames: Int64)] = []
        let clockClient = masterClock.map { String($0.reader.source.prefix { $0 != ":" }) } ?? ""
        let networkTracks = Set(sources.indices.filter { masterClock != nil && sources[$0].hasPrefix(clockClient + ":") })
        /// A gap in the master's clock (`--clock`): frames netjack2 did not deliver, reported as capture losses are.
        func clockGap(at frame: UInt32, frames: Int, open: Bool = false) {
            guard let masterClock, activeWriter.state.withLock({ $0.takeStart }) != nil else { return }
            let device = masterClock.reader.deviceFrame(frame)
            let at = takeFrame(device)
            guard at >= 0, activeWriter.state.withLock({ $0.end.map { at < $0 } ?? true }) else { return }
            networkGaps.append((at, toQueueFrames(Int64(frames))))
            // The tracks that came over the network with the clock (the ports of its client) get
            // silence there, as frames the capture lost do; the others keep theirs.
            let first = toQueueFrames(device - (startedOrigin() ?? requestedOrigin))
            activeWriter.mute(queueFrames: first..<(first + toQueueFrames(Int64(frames))), channels: networkTracks)
            Log.error("network gap of \(toQueueFrames(Int64(frames))) frames at \(TimeSpec.clock(at, rate: fileRate)) (take frame \(at), "
                      + "JACK frame \(device)): the clock on \(masterClock.reader.source) "
                      + (open ? "had not come back by the end" : "skipped them")
                      + " (netjack2 lost their packets and filled the frames from other cycles): "
                      + (networkTracks.isEmpty ? "every track keeps its frames" : "silence in the \(networkTracks.count) tracks from \(clockClient):, the others keep their frames"))
        }
        /// What a take lost, said once it is complete: frames the queue or the disk lost, network
        /// gaps, cycles that ran late.
        func reportLosses(_ final: TakeLosses) {
            for event in final.lostEvents {
                Log.error("lost \(event.frames) frames at \(TimeSpec.clock(event.takeFrame, rate: fileRate)) (replaced by silence)")
            }
            if masterClock != nil, !networkGaps.isEmpty {
                Log.error("network gaps: \(networkGaps.count) (\(networkGaps.reduce(0) { $0 + $1.frames }) frames) at take frames "
                          + networkGaps.prefix(20).map { "\($0.takeFrame)+\($0.frames)" }.joined(separator: ", ")
                          + (networkGaps.count > 20 ? ", …" : ""))
            }
            if final.droppedFrames > 0 {
                Log.error("the disk fell behind: \(final.droppedFrames) frames dropped (replaced by silence)")
            }
            let discontinuities = Self.discontinuities(queue) &- (discontinuitiesAtTakeStart ?? Self.discontinuities(queue))
            if discontinuities > 0 {
                // Cycles that ran late. jackd2 keeps a late client's data in order (jaq tells late
                // readings from skipped cycles); PipeWire lets the graph run on, so a late cycle may
                // have read the next cycle's data: say so, as the take may differ there.
                Log.info("\(discontinuities) xruns while recording (JACK cycles ran late"
                         + (JackLibrary.isPipeWire ? "; under PipeWire a late cycle can repeat or skip a period of what it records)" : ")"))
            }
        }
        // --on-take-end: the command runs once a take's files are complete and closed.
        let hooks = TakeEndHooks(command: onTakeEnd)
        func takeEnded(_ paths: [String]) { hooks.run(paths) }

        while true {
            let state = activeWriter.state.withLock { ($0.takeStart, $0.end, $0.error, $0.finished) }
            if state.0 != nil && discontinuitiesAtTakeStart == nil {
                discontinuitiesAtTakeStart = Self.discontinuities(queue)
            }
            if let error = state.2 {
                stopReason = error
                exitStatus = 1
                break
            }
            if !Self.serverIsAlive(queue) {
                // Shut down or gone: nothing more will come; what was captured is written.
                serverGone = true
                exitStatus = 1
                break
            }
            // A take whose every frame is written is done, whatever its sources do next. A tape
            // machine (--multi) reports it and arms the next take.
            if let end = state.1, activeWriter.framesWritten >= end {
                guard multi, interruption.signal == nil else {
                    stopReason = stopReason ?? "duration reached"
                    reachedEnd = true
                    break
                }
                let next: [TakeFile]
                do { (next, takeNumber) = try createFiles(format: takeFormat, tracks: sources, rate: fileRate, firstTake: takeNumber + 1) } catch {
                    stopReason = "\(error)"
                    exitStatus = 1
                    break
                }
                guard activeWriter.nextTake(next) else {
                    removeFiles(next)
                    if activeWriter.state.withLock({ $0.error }) == nil { stopReason = "the writer did not close the take"; exitStatus = 1 }
                    break
                }
                let closed = files.map(\.path)
                files = next
                // A take the writer could not close (the disk refused its last header): said
                // at the loop's top; its command does not run, and the next take's files go.
                guard activeWriter.state.withLock({ $0.error }) == nil else { continue }
                // The closed take's counts, as the writer left them when it closed it.
                let done = activeWriter.state.withLock { $0.closedLosses } ?? TakeLosses()
                reportLosses(done)
                Log.info("\(stopReason ?? "duration reached"): \(TimeSpec.clock(end, rate: fileRate)) (\(end) frames) in "
                         + closed.joined(separator: ", ") + (done.clippedSamples > 0 ? "; \(done.clippedSamples) samples clipped" : ""))
                takeEnded(closed)
                targets = files.map { $0.path }.joined(separator: ", ")
                trigger.rearm(transportChanges: session.transportChanges().count)
                stopReason = nil
                armedAnnounced = false
                discontinuitiesAtTakeStart = nil
                networkGaps = []
                rollFrame = .max
                place = nil
                sourceWatch?.end = nil
                continue
            }
            // The sources are looked at up to the take's last frame (its tracks' last, latency
            // compensation counted): a source leaving after it leaves a complete take.
            if let start = state.0, let end = state.1, let origin = startedOrigin() {
                sourceWatch?.end = origin + toDeviceFrames(start + end + (skip.max() ?? 0))
            }
            if let watched = sourceWatch?.poll(now: Self.deviceNow(queue)), !watched.isEmpty {
                deviceLost = SourceWatch.report(watched, takeTime: takeTime, fileFrames: toQueueFrames)
                if deviceLost != nil {
                    // Every port goes when the whole server does: that is the server gone.
                    if !Self.serverIsAlive(queue) {
                        deviceLost = nil
                        serverGone = true
                    }
                    exitStatus = 1
                    break
                }
            }
            for event in masterClock?.reader.events() ?? [] {
                switch event {
                case .gap(let frame, let frames): clockGap(at: frame, frames: frames)
                case .jump(let frame, let by):
                    let device = masterClock!.reader.deviceFrame(frame)
                    if startAt != nil, let start = takeStartDevice, device < start {
                        // The master's frames moved against ours (a cycle one server skipped): the
                        // start follows the clock while the queue, already running, has not reached it.
                        let moved = start - Int64(by)
                        let origin = startedOrigin() ?? requestedOrigin
                        if moved - prerollDevice >= origin, Self.deviceNow(queue) + Int64(0.1 * deviceRate) < moved - prerollDevice {
                            takeStartDevice = moved
                            if trigger.phase != .armed { beginTake(atDevice: moved, origin: origin) }
                            Log.info("the clock on \(masterClock!.reader.source) jumped by \(by) frames before the start (JACK frame \(device)): "
                                     + "master frame \(at!) is now JACK frame \(moved) here")
                        } else {
                            activeWriter.state.withLock {
                                $0.error = $0.error ?? "the clock on \(masterClock!.reader.source) jumped by \(by) frames before the start "
                                    + "(JACK frame \(device)), further than the take can follow (its queue runs "
                                    + "\(MasterClock.startMarginSeconds) s ahead of the start): master frame \(at!) no longer names a known frame here"
                            }
                        }
                    } else {
                        Log.error("the clock on \(masterClock!.reader.source) jumped by \(by) frames at \(takeTime(device)) (take frame \(takeFrame(device)), JACK frame \(device)): "
                                  + "the master's frames moved against this server's (a cycle one server skipped, or a restart); "
                                  + "the take goes on, on this server's frames")
                    }
                }
            }
            if let signal = interruption.signal {
                stopReason = signal == SIGINT ? "interrupted" : "terminated"
                break
            }
            // A queue the server never runs (seen on a loaded netjack2 master) must not leave jaq
            // waiting for ever: say so and stop, 10 s after the start frame.
            if startWatch.hasTimedOut(deviceNow: Self.deviceNow(queue), started: startedOrigin() != nil) {
                activeWriter.state.withLock { $0.error = $0.error ?? "the JACK server ran no cycles for jaq-record within 10 s of its start" }
                continue
            }
            // Triggers are looked at once the queue runs: queue time 0 is its real start frame.
            if let origin = startedOrigin() {
                var clock = AudioTimeStamp()
                AudioQueueDeviceGetCurrentTime(queue, &clock)
                let seen = Trigger.Observation(now: Int64(clock.mSampleTime), session: session, enterPressed: enterPressed.value != 0)
                switch trigger.step(seen) {
                case .start(let frame)?:
                    switch trigger.start {
                    case .now: Log.info("recording \(trackCount) from JACK frame \(origin) to \(targets)")
                    case .frame, .delay:
                        if frame - prerollDevice < origin {
                            Log.info("frame \(frame - prerollDevice) has passed: the take starts at frame \(origin), when recording began")
                        }
                    case .transport:
                        if frame < origin {
                            Log.info("the transport rolled at JACK frame \(frame), before recording began: the take starts at JACK frame \(origin)")
                        }
                        Log.info("transport rolling at JACK frame \(frame) (transport frame \(session.lastTransportRollPosition())): recording")
                        rollFrame = max(frame, origin)
                    case .enter: Log.info("recording from JACK frame \(frame)")
                    }
                    beginTake(atDevice: trigger.start == .now ? origin : trigger.start == .transport ? max(frame, origin)
                                  : startAt != nil ? takeStartDevice ?? frame : frame,
                              origin: origin,
                              transportRoll: trigger.start == .transport ? (frame, Int64(session.lastTransportRollPosition())) : nil)
                    if let place {
                        Log.info("time reference: \(place.description)" + (files.contains { $0.take.carriesBroadcastWave } ? ""
                            : " (not stored: \(takeFormat.name) files carry no Broadcast Wave chunk; wav and rf64 takes do)"))
                    }
                case .stop(let frame)?:
                    reportRelocations(origin: origin)
                    // The take ends on the frame the transport stopped.
                    Log.info("transport stopped at JACK frame \(frame)")
                    stopReason = "transport stopped"
                    activeWriter.state.withLock { state in
                        if let start = state.takeStart { state.end = max(0, toQueueFrames(frame - origin) - start) }
                    }
                case nil:
                    if trigger.start == .transport, trigger.phase == .running { reportRelocations(origin: origin) }
                    if trigger.start == .transport, trigger.phase == .armed, !armedAnnounced {
                        armedAnnounced = true
                        Log.info("waiting for JACK transport to roll (\(trackCount) armed)")
                    }
                }
            }
            var xruns: UInt32 = 0
            var size = UInt32(4)
            AudioQueueGetProperty(queue, kAudioQueueProperty_DiscontinuityCount, &xruns, &size)
            var meters = [AudioQueueLevelMeterState](repeating: .init(mAveragePower: -120, mPeakPower: -120), count: sources.count)
            if showMeters {
                var meterSize = UInt32(sources.count * MemoryLayout<AudioQueueLevelMeterState>.size)
                AudioQueueGetProperty(queue, kAudioQueueProperty_CurrentLevelMeterDB, &meters, &meterSize)
            }
            let dropped = activeWriter.state.withLock { $0.losses.droppedFrames + $0.losses.lostEvents.reduce(0) { $0 + $1.frames } }
            display.update(written: activeWriter.framesWritten, meters: meters, bufferFill: activeWriter.bufferFill,
                           xruns: Int(xruns), dropped: dropped, armed: state.0 == nil)
            if !stdoutIsTerminal && !quiet && Date().timeIntervalSince(lastStatus) >= 5 && state.0 != nil {
                lastStatus = Date()
                print("recording \(TimeSpec.clock(activeWriter.framesWritten, rate: fileRate)), buffer \(Int(activeWriter.bufferFill * 100))%, xruns \(xruns), dropped \(dropped)")
                fflush(nil)  // a log line for a pipe, a file or journald: now, not at exit
            }
            // A live display redraws 12 times a second; otherwise a slower pace costs less. The
            // sources are looked at right at the take's end.
            let pace = min(showMeters ? 0.02 : 0.1, sourceWatch?.secondsToEnd(now: Self.deviceNow(queue), rate: deviceRate).map { $0 + 0.001 } ?? 1)
            usleep(UInt32(pace * 1_000_000))
        }

        // Stop: everything captured up to now reaches the files.
        recorder.running.store(false, ordering: .relaxed)
        activeWriter.stopEnqueueing()
        AudioQueueStop(queue, true)
        if let masterClock {
            // Gaps found by now are silenced before the last frames are written.
            for event in masterClock.reader.events() { if case .gap(let frame, let frames) = event { clockGap(at: frame, frames: frames) } }
            if let open = masterClock.reader.openGap { clockGap(at: open.frame, frames: open.frames, open: true) }
        }
        activeWriter.finishInput()
        activeWriter.waitUntilFinished()
        let final = activeWriter.state.withLock { $0 }
        let frames = activeWriter.framesWritten
        reportLosses(final.losses)
        if let error = final.error {
            Log.error("\(error); the take is complete up to \(TimeSpec.clock(frames, rate: fileRate)) (\(frames) frames in every file)")
            exitStatus = 1
        } else if let deviceLost {
            Log.error("\(deviceLost) went away: the JACK server lost its audio device (on a netjack2 slave: the master left); "
                      + "the take is complete up to \(TimeSpec.clock(frames, rate: fileRate)) (\(frames) frames in every file): "
                      + files.map(\.path).joined(separator: ", "))
        } else if serverGone {
            Log.error("the JACK server went away; the take is complete up to \(TimeSpec.clock(frames, rate: fileRate)) "
                      + "(\(frames) frames in every file): \(files.map(\.path).joined(separator: ", "))")
        } else if !(multi && frames == 0 && !reachedEnd) {  // a tape machine's next take that never rolled: said below
            Log.info("\(stopReason ?? "stopped"): \(TimeSpec.clock(frames, rate: fileRate)) (\(frames) frames) in \(files.map(\.path).joined(separator: ", "))"
                     + (final.losses.clippedSamples > 0 ? "; \(final.losses.clippedSamples) samples clipped" : ""))
        }
        let takesBefore = final.takesClosed
        // Files of a take that never began (the tape machine's next, or a server gone while armed) go.
        let neverBegan = frames == 0 && final.takeStart == nil
        if neverBegan || (frames == 0 && final.error == nil && !serverGone && deviceLost == nil && !reachedEnd) {
            removeFiles(files)
            Log.info(takesBefore > 0 ? "\(takesBefore) take\(takesBefore == 1 ? "" : "s") recorded; the next had not started: its files are removed"
                                     : "nothing was recorded; no files kept")
        } else {
            takeEnded(files.map(\.path))
        }
        hooks.waitForAll()
        // The take is on disk; closing the queue's client (and a private server) must not hang.
        _ = Watchdog(seconds: Watchdog.teardownSeconds, status: exitStatus,
                     message: "closing the JACK clients took over \(Int(Watchdog.teardownSeconds)) s; the take is complete")
        if exitStatus != 0 { throw ExitCode(exitStatus) }
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

    /// The queue's timeline discontinuities so far (xruns, lost data, rate changes).
    /// Whether the queue's JACK server is still there (DeviceGetCurrentTime gives a sample
    /// time only while it is): a server that shut down or died ends the take.
    static func serverIsAlive(_ queue: AudioQueueRef) -> Bool {
        var now = AudioTimeStamp()
        return AudioQueueDeviceGetCurrentTime(queue, &now) == noErr && now.mFlags.contains(.sampleTimeValid)
    }

    /// The JACK frame now (0 when the server does not answer).
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

    static func deviceNow(_ queue: AudioQueueRef) -> Int64 {
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(queue, &now)
        return Int64(now.mSampleTime)
    }

    private static func discontinuities(_ queue: AudioQueueRef) -> UInt32 {
        var count: UInt32 = 0
        var size = UInt32(4)
        AudioQueueGetProperty(queue, kAudioQueueProperty_DiscontinuityCount, &count, &size)
        return count
    }

    /// Frames (at the file rate) each track is read later than the earliest, from the ports' capture latency.
    private func captureSkew(_ queue: AudioQueueRef, tracks: Int, rate: Double, deviceRate: Double) -> [Int64] {
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
        let all = server.session.ports().filter { !$0.isInput && $0.type.contains("audio") }
        let candidates = all.map(\.name)
        let physical = all.filter(\.isPhysical).map(\.name)
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
    private func createFiles(format: AudioTakeFile.Format, tracks: [String], rate: Double, firstTake: Int = 1) throws -> (files: [TakeFile], take: Int) {
        let pattern = output ?? (interleaved ? "take-{take}.{ext}" : "take-{take}-{track}.{ext}")
        if !interleaved && tracks.count > 1 && !pattern.contains("{track}") && !pattern.contains("{n}") {
            throw CLIError("--output \(pattern): several tracks need {track} or {n} in the name (or --interleaved)", exitCode: CLIError.usage)
        }
        let date = ISO8601DateFormatter.string(from: Date(), timeZone: .current, formatOptions: [.withFullDate])
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
        let layout: [[Int]] = interleaved ? [Array(0..<tracks.count)] : tracks.indices.map { [$0] }
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

    private func removeFiles(_ files: [TakeFile]) {
        for file in files {
            try? file.take.close()
            unlink(file.path)
        }
    }
}

/// The live display: a meter per track with peak hold and clip marks, time, buffer, xruns,
/// laid out to fit the terminal (MeterLayout).
final class RecordDisplay {
    let enabled: Bool
    let tracks: [String]
    let rate: Double
    private var holds: [(level: Float, until: Date)]
    private var clips: [Date]
    private var drawn = 0
    private var last = Date.distantPast

    init(enabled: Bool, tracks: [String], rate: Double) {
        self.enabled = enabled
        self.tracks = tracks
        self.rate = rate
        holds = Array(repeating: (-120, .distantPast), count: tracks.count)
        clips = Array(repeating: .distantPast, count: tracks.count)
    }

    func update(written: Int64, meters: [AudioQueueLevelMeterState], bufferFill: Double, xruns: Int, dropped: Int64, armed: Bool) {
        guard enabled, Date().timeIntervalSince(last) >= 0.08 else { return }
        let now = Date()
        last = now
        let status = armed ? "ARMED" : "● REC"
        var layout = MeterLayout(status: "\(status) \(TimeSpec.clock(written, rate: rate))  buffer \(String(format: "%3d", Int(bufferFill * 100)))%  xruns \(xruns)  dropped \(dropped)")
        for (i, track) in tracks.enumerated() {
            let level = i < meters.count ? meters[i].mPeakPower : -120
            if level >= holds[i].level || now > holds[i].until { holds[i] = (level, now.addingTimeInterval(2)) }
            if level >= -0.01 { clips[i] = now.addingTimeInterval(3) }
            layout.meters.append(MeterLayout.Meter(name: track, level: level, hold: holds[i].level, clipping: now < clips[i]))
        }
        let size = terminalSize()
        let lines = layout.lines(rows: size.rows, columns: size.columns)
        var text = drawn > 0 ? "\u{1B}[\(drawn)A" : ""
        text += lines.map { "\r\u{1B}[K" + $0 }.joined(separator: "\n") + "\n"
        if lines.count < drawn {
            // The layout shrank (the terminal did): clear what is left below.
            text += "\u{1B}[J"
        }
        drawn = lines.count
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// The terminal's rows and columns (24 × 80 when it does not say).
    private func terminalSize() -> (rows: Int, columns: Int) {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else { return (24, 80) }
        return (Int(size.ws_row), Int(size.ws_col))
    }
}

