import ArgumentParser
import AudioToolbox
import Foundation
import JackDriver
import QueueCore
import SoundFile
import Synchronization

/// What the input callback needs: the writer (set before the queue starts), and whether to re-enqueue.
final class Recorder: @unchecked Sendable {
    var writer: TakeWriter!
    let running = Atomic<Bool>(true)
}

/// The recording callback (the guides' HandleInputBuffer): hand the data to the writer, re-enqueue.
private func recorderCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                              _ startTime: UnsafePointer<AudioTimeStamp>, _ packets: UInt32,
                              _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
    let recorder = Unmanaged<Recorder>.fromOpaque(userData!).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: buffer.pointee.mAudioData, count: Int(buffer.pointee.mAudioDataByteSize))
    recorder.writer.deliver(queueFrame: Int64(startTime.pointee.mSampleTime.rounded()), bytes: bytes)
    if recorder.running.load(ordering: .relaxed) { AudioQueueEnqueueBuffer(queue, buffer, 0, nil) }
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
        the frame), on Ctrl-C/SIGTERM, or when the transport stops. Headers are brought up to \
        date as the take is written and flushed every second, so a take survives SIGKILL and \
        power loss. Frames the disk could not keep up with are replaced by silence (the tracks \
        stay aligned) and reported. Tracks from ports with different capture latency are \
        aligned using it (--no-latency-compensation to keep them raw).

        Examples:
          jaq record system                          # every physical input, until Ctrl-C
          jaq record -d 30 system:capture_1 system:capture_2
          jaq record -f flac -b 24 -o 'song-{take}-{track}.{ext}' 'system:capture_[1-4]$'
          jaq record --interleaved -d 1:00 'jaq-.*:out_'
          jaq record --transport --pre-roll 2 system
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

    @Option(name: .shortAndLong, help: ArgumentHelp("16, 24, 32 or float.", valueName: "bits"))
    var bits = "24"

    @Option(name: .shortAndLong, help: ArgumentHelp("Sample rate of the files (default: the server's; others are resampled).", valueName: "hz"))
    var rate: Double?

    @Option(name: .shortAndLong, help: ArgumentHelp("Stop after this long: seconds, m:ss, or N f for frames.", valueName: "time"))
    var duration: String?

    @Option(name: .long, help: ArgumentHelp("Start on this JACK frame (see `jaq time`).", valueName: "frame"))
    var at: Int64?

    @Option(name: .long, help: ArgumentHelp("Start in this many seconds.", valueName: "seconds"))
    var `in`: Double?

    @Flag(name: .long, help: "Start when JACK transport rolls and stop when it stops.")
    var transport = false

    @Flag(name: .long, help: "Start when Enter is pressed (reads standard input).")
    var onEnter = false

    @Option(name: .long, help: ArgumentHelp("Include this many seconds before the start.", valueName: "seconds"))
    var preRoll: Double = 0

    @Option(name: .long, help: ArgumentHelp("Seconds of audio the writer may fall behind the disk before frames are dropped.", valueName: "seconds"))
    var buffer: Double = 10

    @Flag(name: .long, help: "Do not align tracks by their ports' capture latency.")
    var noLatencyCompensation = false

    @Flag(name: .shortAndLong, help: "No live display or status lines (errors are still reported).")
    var quiet = false

    @OptionGroup var serverOptions: ServerOptions

    func validate() throws {
        if [at != nil, `in` != nil, transport, onEnter].filter({ $0 }).count > 1 {
            throw ValidationError("use only one of --at, --in, --transport and --on-enter")
        }
        if preRoll < 0 || buffer <= 0 { throw ValidationError("--pre-roll and --buffer must be positive") }
        if let rate, rate < 1000 || rate > 768_000 { throw ValidationError("--rate \(rate) Hz is out of range") }
    }

    func run() throws {
        Log.command = "jaq record"
        Log.quiet = quiet
        do {
            try record()
        } catch let error as CLIError {
            Log.error(error.description)
            ServerContext.running?.stop()
            throw ExitCode(error.exitCode)
        }
    }

    func record() throws {
        // m4a (AAC or ALAC) and compressed CAF: an encoding input queue (CompressedTake.swift).
        if let take = try CompressedTake(format: format, codec: codec, bits: bits) { return try recordCompressed(take) }
        let takeFormat = try TakeFormat.make(format: format, bits: bits)
        let startup = Watchdog(seconds: Watchdog.startupSeconds,
                               message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s; nothing was recorded")
        let server = try ServerContext(serverOptions, clientName: "jaq-record-ctl", watchTransport: transport)
        defer { server.stop() }
        let interruption = Interruption()
        let deviceRate = server.session.sampleRate
        let fileRate = rate ?? deviceRate
        var durationFrames: Int64?
        if let duration {
            guard let frames = TimeSpec.frames(duration, rate: fileRate), frames > 0 else {
                throw CLIError("--duration \(duration): not a time", exitCode: 2)
            }
            durationFrames = frames
        }

        let sources = try resolveSources(server)
        // The control client only follows the transport; otherwise it goes now, so the server
        // has one client fewer to tell about every connection the queue makes.
        let session: JackSession! = transport ? server.session : nil
        if !transport { server.closeSession() }

        // Files: create them all before recording (and remove them again if one fails).
        let files = try createFiles(format: takeFormat, tracks: sources, rate: fileRate)
        let paths = files.map(\.path)
        startup.onFire { for path in paths { unlink(path) } }

        // The input queue: one channel per port, in the file's sample layout.
        var asbd = queueFormat(takeFormat, channels: sources.count, rate: fileRate)
        let recorder = Recorder()
        let user = Unmanaged.passRetained(recorder).toOpaque()
        defer { Unmanaged<Recorder>.fromOpaque(user).release() }
        var queue: AudioQueueRef?
        let created = AudioQueueNewInput(&asbd, recorderCallback, user, nil, nil, 0, &queue)
        guard created == noErr, let queue else {
            removeFiles(files)
            throw CLIError("cannot create the recording queue: \(describe(created, file: false))")
        }
        defer { AudioQueueDispose(queue, true) }
        let renamed = setStringProperty(queue, kAudioQueueProperty_JACKClientName, "jaq-record")
        guard renamed == noErr else {
            removeFiles(files)
            throw CLIError("cannot open JACK client jaq-record: \(describe(renamed, file: false))")
        }
        let connected = setStringProperty(queue, kAudioQueueProperty_CurrentDevice, sources.joined(separator: ","))
        guard connected == noErr else {
            removeFiles(files)
            throw CLIError("cannot connect to \(sources.joined(separator: ", ")): \(describe(connected, file: false))")
        }
        // Meters only for the live display: they cost the realtime side a pass over the samples.
        let showMeters = !quiet && stdoutIsTerminal
        var on: UInt32 = showMeters ? 1 : 0
        AudioQueueSetProperty(queue, kAudioQueueProperty_EnableLevelMetering, &on, 4)
        // The capture ring covers the queue thread's hiccups; the writer's buffer (--buffer) the disk's.
        var ringSeconds = max(2, preRoll + 2)
        AudioQueueSetProperty(queue, kAudioQueueProperty_CaptureBufferSeconds, &ringSeconds, 8)

        // Latency compensation: each track is read later by its extra capture latency.
        let skip = noLatencyCompensation ? Array(repeating: Int64(0), count: sources.count)
            : captureSkew(queue, tracks: sources.count, rate: fileRate, deviceRate: deviceRate)
        let activeWriter = TakeWriter(format: takeFormat, channelCount: sources.count, rate: fileRate, files: files,
                                      skip: skip, bufferSeconds: buffer, stopsByTrigger: transport)
        recorder.writer = activeWriter
        if skip.contains(where: { $0 != 0 }) {
            Log.info("latency compensation (frames): " + zip(sources, skip).map { "\($0.0) +\($0.1)" }.joined(separator: ", "))
        }
        let bufferFrames = max(1024, Int(fileRate / 10))
        for _ in 0..<4 {
            var b: AudioQueueBufferRef?
            guard AudioQueueAllocateBuffer(queue, UInt32(bufferFrames * Int(asbd.mBytesPerFrame)), &b) == noErr, let b else {
                removeFiles(files)
                throw CLIError("out of memory for buffers")
            }
            AudioQueueEnqueueBuffer(queue, b, 0, nil)
        }
        activeWriter.state.withLock { $0.preroll = Int64((preRoll * fileRate).rounded()) }
        activeWriter.start()

        // Start the queue on a known frame: queue time 0 is that frame.
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(queue, &now)
        let prerollDevice = Int64((preRoll * deviceRate).rounded())
        var queueStart = AudioTimeStamp()
        queueStart.mSampleTime = now.mSampleTime + (0.05 * deviceRate).rounded()
        queueStart.mFlags = .sampleTimeValid
        var takeStartDevice: Int64?
        if let at {
            var frame = AudioTimeStamp()
            frame.mSampleTime = Double(at)
            frame.mFlags = .sampleTimeValid
            var translated = AudioTimeStamp()
            AudioQueueDeviceTranslateTime(queue, &frame, &translated)
            let normalized = Int64(translated.mSampleTime)
            takeStartDevice = normalized
            if Double(normalized - prerollDevice) > queueStart.mSampleTime { queueStart.mSampleTime = Double(normalized - prerollDevice) }
        } else if let seconds = `in` {
            takeStartDevice = Int64(now.mSampleTime + (seconds * deviceRate).rounded())
            if Double(takeStartDevice! - prerollDevice) > queueStart.mSampleTime { queueStart.mSampleTime = Double(takeStartDevice! - prerollDevice) }
        }
        guard AudioQueueStart(queue, &queueStart) == noErr else {
            removeFiles(files)
            throw CLIError("cannot start recording")
        }
        // Queue time 0 is the device frame the queue really started on: the one asked for, or
        // later if the machine was too slow to start it by then.
        let requestedOrigin = Int64(queueStart.mSampleTime)
        func startedOrigin() -> Int64? {
            var running: UInt32 = 0
            var runningSize = UInt32(4)
            guard AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &runningSize) == noErr, running != 0 else { return nil }
            var value: Float64 = 0
            var size = UInt32(8)
            guard AudioQueueGetProperty(queue, kAudioQueueProperty_StartDeviceFrame, &value, &size) == noErr, value > 0 else { return nil }
            return Int64(value)
        }
        let toQueueFrames = { (deviceFrames: Int64) -> Int64 in Int64((Double(deviceFrames) * fileRate / deviceRate).rounded()) }
        let prerollFrames = Int64((preRoll * fileRate).rounded())
        func beginTake(atDevice frame: Int64, origin: Int64) {
            let offset = toQueueFrames(frame - origin)
            activeWriter.state.withLock {
                $0.takeStart = max(0, offset - prerollFrames)
                if let durationFrames { $0.end = durationFrames + prerollFrames - max(0, prerollFrames - offset) }
            }
        }
        let targets = files.map { $0.path }.joined(separator: ", ")
        let trackCount = "\(sources.count) track\(sources.count == 1 ? "" : "s")"
        // A take that starts on a frame (or when the queue starts) begins once the queue has
        // started and its origin is known.
        var pendingTake: Int64? = takeStartDevice
        var takeAtQueueStart = false
        if takeStartDevice != nil {
            Log.info("recording \(trackCount) from JACK frame \(takeStartDevice!) to \(targets)")
        } else if transport {
            Log.info("waiting for JACK transport to roll (\(sources.count) tracks armed)")
        } else if onEnter {
            Log.info("press Enter to start recording (\(sources.count) tracks armed)")
        } else {
            takeAtQueueStart = true
            pendingTake = requestedOrigin
        }
        startup.disarm()
        let transportChangesAtStart = transport ? session.transportChanges().count : 0
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
        var transportStopped = false
        var discontinuitiesAtTakeStart: UInt32?
        var serverGone = false
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
            if let end = state.1, activeWriter.framesWritten >= end { stopReason = "duration reached"; break }
            if let signal = interruption.signal {
                stopReason = signal == SIGINT ? "interrupted" : "terminated"
                break
            }
            if state.0 == nil, let take = pendingTake, let origin = startedOrigin() {
                pendingTake = nil
                if takeAtQueueStart {
                    beginTake(atDevice: origin, origin: origin)
                    Log.info("recording \(trackCount) from JACK frame \(origin) to \(targets)")
                } else {
                    if take - prerollDevice < origin {
                        Log.info("frame \(take - prerollDevice) has passed: the take starts at frame \(origin), when recording began")
                    }
                    beginTake(atDevice: take, origin: origin)
                }
            } else if state.0 == nil && pendingTake == nil {
                if transport, session.transportChanges().count > transportChangesAtStart, session.transportChanges().rolling {
                    let frame = deviceFrame(session.transportChanges().lastChangeFrame, queue: queue)
                    beginTake(atDevice: frame, origin: startedOrigin() ?? requestedOrigin)
                    Log.info("transport rolling at JACK frame \(frame): recording")
                } else if onEnter && enterPressed.value != 0 {
                    var at = AudioTimeStamp()
                    AudioQueueDeviceGetCurrentTime(queue, &at)
                    beginTake(atDevice: Int64(at.mSampleTime), origin: startedOrigin() ?? requestedOrigin)
                    Log.info("recording from JACK frame \(Int64(at.mSampleTime))")
                }
            } else if state.0 != nil, transport, !transportStopped, !session.transportChanges().rolling, session.transportChanges().count > transportChangesAtStart {
                // The take ends on the frame the transport stopped.
                transportStopped = true
                let stopFrame = deviceFrame(session.transportChanges().lastChangeFrame, queue: queue)
                Log.info("transport stopped at JACK frame \(stopFrame)")
                activeWriter.state.withLock { state in
                    if let start = state.takeStart { state.end = max(0, toQueueFrames(stopFrame - (startedOrigin() ?? requestedOrigin)) - start) }
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
            let dropped = activeWriter.state.withLock { $0.droppedFrames + $0.lostEvents.reduce(0) { $0 + $1.frames } }
            display.update(written: activeWriter.framesWritten, meters: meters, bufferFill: activeWriter.bufferFill,
                           xruns: Int(xruns), dropped: dropped, armed: state.0 == nil)
            if !stdoutIsTerminal && !quiet && Date().timeIntervalSince(lastStatus) >= 5 && state.0 != nil {
                lastStatus = Date()
                print("recording \(TimeSpec.clock(activeWriter.framesWritten, rate: fileRate)), buffer \(Int(activeWriter.bufferFill * 100))%, xruns \(xruns), dropped \(dropped)")
                fflush(nil)  // a log line for a pipe, a file or journald: now, not at exit
            }
            // A live display redraws 12 times a second; otherwise a slower pace costs less.
            usleep(showMeters ? 20_000 : 100_000)
        }

        // Stop: everything captured up to now reaches the files.
        recorder.running.store(false, ordering: .relaxed)
        AudioQueueStop(queue, true)
        activeWriter.finishInput()
        activeWriter.waitUntilFinished()
        display.finish()
        let final = activeWriter.state.withLock { $0 }
        let frames = activeWriter.framesWritten
        for event in final.lostEvents {
            Log.error("lost \(event.frames) frames at \(TimeSpec.clock(event.takeFrame, rate: fileRate)) (replaced by silence)")
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
        if let error = final.error {
            Log.error("\(error); the take is complete up to \(TimeSpec.clock(frames, rate: fileRate)) (\(frames) frames in every file)")
            exitStatus = 1
        } else if serverGone {
            Log.error("the JACK server went away; the take is complete up to \(TimeSpec.clock(frames, rate: fileRate)) "
                      + "(\(frames) frames in every file): \(files.map(\.path).joined(separator: ", "))")
        } else {
            Log.info("\(stopReason ?? "stopped"): \(TimeSpec.clock(frames, rate: fileRate)) (\(frames) frames) in \(files.map(\.path).joined(separator: ", "))"
                     + (final.clippedSamples > 0 ? "; \(final.clippedSamples) samples clipped" : ""))
        }
        if frames == 0 && final.error == nil && !serverGone && stopReason != "duration reached" {
            removeFiles(files)
            Log.info("nothing was recorded; no files kept")
        }
        // The take is on disk; closing the queue's client (and a private server) must not hang.
        _ = Watchdog(seconds: Watchdog.teardownSeconds, status: exitStatus,
                     message: "closing the JACK clients took over \(Int(Watchdog.teardownSeconds)) s; the take is complete")
        if exitStatus != 0 { throw ExitCode(exitStatus) }
    }

    /// The queue's timeline discontinuities so far (xruns, lost data, rate changes).
    /// Whether the queue's JACK server is still there (DeviceGetCurrentTime gives a sample
    /// time only while it is): a server that shut down or died ends the take.
    static func serverIsAlive(_ queue: AudioQueueRef) -> Bool {
        var now = AudioTimeStamp()
        return AudioQueueDeviceGetCurrentTime(queue, &now) == noErr && now.mFlags.contains(.sampleTimeValid)
    }

    private static func discontinuities(_ queue: AudioQueueRef) -> UInt32 {
        var count: UInt32 = 0
        var size = UInt32(4)
        AudioQueueGetProperty(queue, kAudioQueueProperty_DiscontinuityCount, &count, &size)
        return count
    }

    /// A 32-bit JACK frame time (from the transport watcher) as a 64-bit device frame.
    private func deviceFrame(_ frame32: UInt32, queue: AudioQueueRef) -> Int64 {
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(queue, &now)
        let reference = Int64(now.mSampleTime)
        return reference + Int64(Int32(bitPattern: frame32 &- UInt32(truncatingIfNeeded: reference)))
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

    /// The ports to record, in order.
    func resolveSources(_ server: ServerContext) throws -> [String] {
        let all = server.session.ports().filter { !$0.isInput && $0.type.contains("audio") }
        let candidates = all.map(\.name)
        let physical = all.filter(\.isPhysical).map(\.name)
        var sources: [String] = []
        for port in ports {
            do {
                for name in try PortMatcher.resolve(port, candidates: candidates, physical: physical) where !sources.contains(name) {
                    sources.append(name)
                }
            } catch QueueError.invalidDevice(let reason) {
                throw CLIError("port '\(port)': \(reason)" + (physical.isEmpty && port == "system" ? ServerContext.noPhysicalPortsHint : ""))
            } catch {
                throw CLIError("port '\(port)': \(error)")
            }
        }
        guard !sources.isEmpty else { throw CLIError("no ports to record") }
        guard sources.count <= 64 else { throw CLIError("\(sources.count) ports: a take holds at most 64 tracks") }
        return sources
    }

    /// The queue's format: the files' sample layout, all tracks interleaved.
    private func queueFormat(_ format: TakeFormat, channels: Int, rate: Double) -> AudioStreamBasicDescription {
        let bytes = UInt32(format.bytesPerSample * channels)
        var flags: AudioFormatFlags = kAudioFormatFlagIsPacked
        switch format.samples {
        case .float32: flags |= kAudioFormatFlagIsFloat
        default: flags |= kAudioFormatFlagIsSignedInteger
        }
        if format.bigEndian { flags |= kAudioFormatFlagIsBigEndian }
        return AudioStreamBasicDescription(
            mSampleRate: rate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags, mBytesPerPacket: bytes,
            mFramesPerPacket: 1, mBytesPerFrame: bytes, mChannelsPerFrame: UInt32(channels),
            mBitsPerChannel: UInt32(format.bytesPerSample * 8), mReserved: 0)
    }

    /// Creates the take's files (take number: the first that names no existing file).
    private func createFiles(format: TakeFormat, tracks: [String], rate: Double) throws -> [TakeFile] {
        let pattern = output ?? (interleaved ? "take-{take}.{ext}" : "take-{take}-{track}.{ext}")
        if !interleaved && tracks.count > 1 && !pattern.contains("{track}") && !pattern.contains("{n}") {
            throw CLIError("--output \(pattern): several tracks need {track} or {n} in the name (or --interleaved)", exitCode: 2)
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
            return pattern.replacingOccurrences(of: "{take}", with: String(format: "%03d", take))
                .replacingOccurrences(of: "{track}", with: trackName)
                .replacingOccurrences(of: "{n}", with: String(format: "%02d", track + 1))
                .replacingOccurrences(of: "{date}", with: date)
                .replacingOccurrences(of: "{ext}", with: format.fileExtension)
        }
        let layout: [[Int]] = interleaved ? [Array(0..<tracks.count)] : tracks.indices.map { [$0] }
        var take = 1
        while layout.indices.contains(where: { FileManager.default.fileExists(atPath: path(take: take, track: $0)) }) {
            take += 1
            if !pattern.contains("{take}") { throw CLIError("\(path(take: take, track: 0)): exists (put {take} in --output)") }
        }
        var files: [TakeFile] = []
        for (i, channels) in layout.enumerated() {
            let name = path(take: take, track: i)
            let info = SoundFile.Info(sampleRate: Int(rate), channelCount: channels.count,
                                      format: SoundFile.Format(format.major, format.subtype, format.fileEndianness))
            do {
                let directory = URL(fileURLWithPath: name).deletingLastPathComponent().path
                if !FileManager.default.fileExists(atPath: directory) {
                    throw CLIError("\(name): the directory \(directory) does not exist")
                }
                let file = try SoundFile(path: name, mode: .write, format: info, replacing: false)
                if format.major == .rf64 && format.name == "wav" { file.setRF64AutoDowngrade(true) }
                files.append(TakeFile(path: name, file: file, channels: channels))
            } catch let error as CLIError {
                removeFiles(files)
                throw error
            } catch let error as SoundFileError {
                removeFiles(files)
                let reason = error.errno.map { String(cString: strerror($0)) } ?? error.reason
                throw CLIError("\(name): cannot create it: \(reason)")
            } catch {
                removeFiles(files)
                throw CLIError("\(name): cannot create it: \(error)")
            }
        }
        return files
    }

    private func removeFiles(_ files: [TakeFile]) {
        for file in files {
            try? file.file.close()
            unlink(file.path)
        }
    }
}

/// The live display: a meter per track with peak hold and clip marks, time, buffer, xruns.
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
        last = Date()
        var lines: [String] = []
        let status = armed ? "ARMED" : "● REC"
        lines.append("\(status) \(TimeSpec.clock(written, rate: rate))  buffer \(String(format: "%3d", Int(bufferFill * 100)))%  xruns \(xruns)  dropped \(dropped)")
        let width = 40
        let nameWidth = min(24, tracks.map(\.count).max() ?? 8)
        for (i, track) in tracks.enumerated() {
            let level = i < meters.count ? meters[i].mPeakPower : -120
            if level >= holds[i].level || Date() > holds[i].until { holds[i] = (level, Date().addingTimeInterval(2)) }
            if level >= -0.01 { clips[i] = Date().addingTimeInterval(3) }
            let filled = Int((Double(max(level, -60)) + 60) / 60 * Double(width))
            let hold = Int((Double(max(holds[i].level, -60)) + 60) / 60 * Double(width))
            var bar = Array(repeating: Character(" "), count: width)
            for j in 0..<min(filled, width) { bar[j] = j < width * 5 / 6 ? "=" : "#" }
            if hold > 0 && hold <= width { bar[hold - 1] = "|" }
            let name = String(track.suffix(nameWidth)).padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            let clip = Date() < clips[i] ? " CLIP" : "     "
            lines.append("\(name) [\(String(bar))] \(String(format: "%6.1f", max(level, -99.9))) dB\(clip)")
        }
        var text = drawn > 0 ? "\u{1B}[\(drawn)A" : ""
        text += lines.map { "\r\u{1B}[K" + $0 }.joined(separator: "\n") + "\n"
        drawn = lines.count
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    func finish() {}
}
