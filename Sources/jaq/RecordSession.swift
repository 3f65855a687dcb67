import AudioToolbox
import FoundationEssentials
import Glibc
import JackCommon
import JackControl
import Sync

/// The recording queue started or stopped (its server gone, say): the main loop looks now.
private func recordingQueueRunningChanged(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ id: AudioQueuePropertyID) {
    mainLoopWake.post()
}

/// One `jaq record` of any kind of take (one file per track, interleaved, encoded; a single take or a tape
/// machine's rolls), from the open queue to the last report: the queue's set-up and start,
/// then the main loop (triggers, the source watch, the master clock's gaps and jumps, the
/// display, the tape machine's take to take step), then the end of the take.
///
/// `RecordCommand.record()` makes what must be undone if a later step fails (the server, the
/// clock's client, the files, the queue) and disposes of it; this holds what the loop shares.
final class RecordSession {
    let command: RecordCommand
    let takeFormat: AudioTakeFile.Format
    let server: ServerContext
    /// The control client, when the take follows the transport (`--transport`).
    let session: JackSession!
    let interruption: Interruption
    let sources: [String]
    let physical: [String]
    let masterClock: MasterClock?
    /// `--at`, on this server's frames (the master's frame translated, with `--clock`).
    let startAt: Int64?
    let queue: AudioQueueRef
    let recorder: Recorder
    let deviceRate: Double
    /// The server's cycle, in device frames (read at the start).
    let periodFrames: Int64
    let fileRate: Double
    let durationFrames: Int64?
    let prerollFrames: Int64
    let prerollDevice: Int64
    let trackCount: String
    /// `--transport` and `--quiet`, read once: each read of an argument-parser property builds
    /// its metadata again, and the main loop looks several times a second (issue #29).
    let followsTransport: Bool
    let quiet: Bool

    // The current take's files, and the last take number used.
    var files: [TakeFile]
    var takeNumber: Int
    var targets: String

    // Made by prepare().
    var writer: TakeWriter!
    var sourceWatch: SourceWatch?
    var showMeters = false
    /// Latency compensation: each track is read later by its extra capture latency.
    var skip: [Int64] = []

    // Made by start().
    var requestedOrigin: Int64 = 0
    var startWatch = RecordCommand.StartWatch(origin: 0, rate: 48000)
    var takeStartDevice: Int64?
    var trigger: Trigger!
    let enterPressed = SharedFlag()
    var display: RecordDisplay!

    // The main loop's.
    /// The take's decisions: when it stops, how it ended, what is said (TakeMachine.swift).
    var machine: TakeMachine
    var lastStatus = Date()
    var armedAnnounced = false
    var rollFrame = Int64.max
    var discontinuitiesAtTakeStart: UInt32?
    /// The device frame by which the current take's last frame is surely captured (its partly
    /// filled buffer is then delivered: `flushAtCaptureEnd`), and whether that was done.
    var captureEnd: Int64?
    var flushedAtCaptureEnd = false
    /// Where the take belongs on the timeline (its files' Broadcast Wave chunk).
    var place: TakePlace?
    var networkGaps: [(takeFrame: Int64, frames: Int64)] = []
    let clockClient: String
    /// The tracks that come over the network with `--clock`'s clock (the ports of its client).
    let networkTracks: Set<Int>
    /// --on-take-end: the command runs once a take's files are complete and closed.
    let hooks: TakeEndHooks

    init(command: RecordCommand, format: AudioTakeFile.Format, server: ServerContext, interruption: Interruption,
         sources: [String], physical: [String], masterClock: MasterClock?, startAt: Int64?, files: [TakeFile], takeNumber: Int,
         queue: AudioQueueRef, recorder: Recorder, fileRate: Double, durationFrames: Int64?) {
        self.command = command
        self.takeFormat = format
        self.server = server
        // The control client follows the transport (--transport) and watches the sources
        // (SourceWatch) for the whole take: one client for both, and kept open, so libjack's
        // shared memory stays mapped and locked once for the process.
        self.session = command.transport ? server.session : nil
        self.interruption = interruption
        self.sources = sources
        self.physical = physical
        self.masterClock = masterClock
        self.startAt = startAt
        self.files = files
        self.takeNumber = takeNumber
        self.targets = files.map { $0.path }.joined(separator: ", ")
        self.queue = queue
        self.recorder = recorder
        self.deviceRate = server.session.sampleRate
        self.periodFrames = Int64(max(server.session.periodFrames, 1))
        self.fileRate = fileRate
        self.durationFrames = durationFrames
        self.prerollFrames = command.preRoll.frames(at: fileRate)
        self.prerollDevice = Int64((command.preRoll.seconds(at: fileRate) * server.session.sampleRate).rounded())
        self.trackCount = "\(sources.count) track\(sources.count == 1 ? "" : "s")"
        self.followsTransport = command.transport
        self.quiet = command.quiet
        let clockClient = masterClock.map { String($0.reader.source.prefix { $0 != ":" }) } ?? ""
        self.clockClient = clockClient
        self.networkTracks = Set(sources.indices.filter { masterClock != nil && sources[$0].hasPrefix(clockClient + ":") })
        self.hooks = TakeEndHooks(command: command.onTakeEnd)
        self.machine = TakeMachine(multi: command.multi)
    }

    // MARK: Frames

    /// Queue time 0 is the device frame the queue really started on: the one asked for, or
    /// later if the machine was too slow to start it by then.
    func startedOrigin() -> Int64? { RecordCommand.startDeviceFrame(queue) }

    func takeFrame(_ deviceFrame: Int64) -> Int64 {
        let start = writer.state.withLock { $0.takeStart } ?? 0
        return toQueueFrames(deviceFrame - (startedOrigin() ?? requestedOrigin)) - start
    }

    func takeTime(_ deviceFrame: Int64) -> String { TimeSpec.clock(takeFrame(deviceFrame), rate: fileRate) }

    // MARK: Set-up

    /// Connects the queue, sets its meters and capture ring, makes the writer and its buffers.
    func prepare() throws {
        let connected = setStringProperty(queue, kAudioQueueProperty_CurrentDevice, sources.joined(separator: ","))
        guard connected == noErr else {
            command.removeFiles(files)
            throw CLIError("cannot connect to \(sources.joined(separator: ", ")): \(describe(connected, file: false))")
        }
        // Ports whose client leaves (a netjack2 slave, a DAW): a gap in their track, or the end of
        // the take when the server's own device went (a netjack2 master left its slave).
        let queueInputs = stringProperty(queue, kAudioQueueProperty_JACKPortNames)?.split(separator: ",").map(String.init) ?? []
        sourceWatch = SourceWatch(session: server.session, sources: sources, queueInputs: queueInputs, physical: Set(physical))
        sourceWatch?.watchConnections(wake: mainLoopWake.raw, periodFrames: periodFrames)
        // The queue stops when its server goes away: the main loop looks at once.
        AudioQueueAddPropertyListener(queue, kAudioQueueProperty_IsRunning, recordingQueueRunningChanged, nil)
        // Meters only for the live display: they cost the realtime side a pass over the samples.
        showMeters = !command.quiet && stdoutIsTerminal
        var on: UInt32 = showMeters ? 1 : 0
        AudioQueueSetProperty(queue, kAudioQueueProperty_EnableLevelMetering, &on, 4)
        // The capture ring covers the queue thread's hiccups; the buffers (--buffer) the disk's.
        // A PCM take at the server's rate leaves the ring little to hold (float is captured
        // straight into the queue's buffers, the ring holding the cycles between two; integer
        // samples are converted out of it as they come): its hiccups. A queue that encodes (m4a,
        // ALAC) or resamples (--rate) does more work per buffer, and keeps the longer ring.
        var ringSeconds = takeFormat.encoding == nil && fileRate == deviceRate ? RecordCommand.captureRingSeconds : 1.0
        AudioQueueSetProperty(queue, kAudioQueueProperty_CaptureBufferSeconds, &ringSeconds, 8)

        skip = command.noLatencyCompensation ? Array(repeating: Int64(0), count: sources.count)
            : command.captureSkew(queue, tracks: sources.count, rate: fileRate, deviceRate: deviceRate)
        // Every buffer is allocated now (nothing grows while recording): --buffer seconds of
        // them for the disk, and what the writer keeps for the pre-roll, latency and triggers.
        let bufferFrames = RecordCommand.bufferFrames
        let enqueued = RecordCommand.enqueuedBuffers
        let bufferCount = TakeWriter.bufferCount(bufferSeconds: command.buffer.seconds(at: fileRate), rate: fileRate, bufferFrames: bufferFrames,
                                                 preroll: command.preRoll.seconds(at: fileRate), maxSkip: skip.max() ?? 0,
                                                 stopsByTrigger: command.transport || masterClock != nil, enqueued: enqueued)
        let writer = TakeWriter(format: takeFormat, channelCount: sources.count, rate: fileRate, files: files,
                                skip: skip, bufferFrames: bufferFrames, bufferCount: bufferCount,
                                enqueuedCount: enqueued, stopsByTrigger: command.transport,
                                muteSeconds: masterClock != nil ? RecordCommand.networkGapSeconds : 0)
        self.writer = writer
        recorder.writer = writer
        if skip.contains(where: { $0 != 0 }) {
            Log.info("latency compensation (frames): " + zip(sources, skip).map { "\($0.0) +\($0.1)" }.joined(separator: ", "))
        }
        let allocated = writer.allocateBuffers(on: queue)
        guard allocated == noErr else {
            command.removeFiles(files)
            throw CLIError("cannot allocate \(bufferCount) buffers of \(bufferFrames) frames: \(describe(allocated, file: false))")
        }
        let keepsFromQueueStart = startAt != nil || command.in != nil
        writer.state.withLock { [prerollFrames, multi = command.multi] in
            $0.preroll = prerollFrames
            $0.keepsFromQueueStart = keepsFromQueueStart
            $0.takesFollow = multi
        }
        writer.start()
    }

    /// Starts the queue on a known frame (queue time 0 is that frame) and arms the trigger.
    func start() throws {
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(queue, &now)
        var queueStart = AudioTimeStamp()
        queueStart.mSampleTime = now.mSampleTime + (0.05 * deviceRate).rounded()
        queueStart.mFlags = .sampleTimeValid
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
        } else if let delay = command.in {
            let start = Int64(now.mSampleTime) + delay.frames(at: deviceRate)
            takeStartDevice = start
            if Double(start - prerollDevice) > queueStart.mSampleTime { queueStart.mSampleTime = Double(start - prerollDevice) }
        }
        guard AudioQueueStart(queue, &queueStart) == noErr else {
            command.removeFiles(files)
            throw CLIError("cannot start recording")
        }
        requestedOrigin = Int64(queueStart.mSampleTime)
        startWatch = RecordCommand.StartWatch(origin: requestedOrigin, rate: deviceRate)
        trigger = try Trigger.forCommand(at: startAt, in: command.in, transport: command.transport, onEnter: command.onEnter)
        trigger.arm(now: Int64(now.mSampleTime), deviceRate: deviceRate, origin: requestedOrigin,
                    transportChanges: command.transport ? session.transportChanges().count : 0)
        switch trigger.start {
        case .transport: break  // said once the queue records (in the main loop): a roll before that is lost
        case .enter: Log.info("press Enter to start recording (\(trackCount) armed)")
        case .frame, .delay: Log.info("recording \(trackCount) from JACK frame \(takeStartDevice!) to \(targets)")
        case .now: break
        }
        if command.onEnter {
            QueueThread(name: "jaq-enter") { [enterPressed] in
                _ = readLine()
                enterPressed.set(1)
            }.detach()
        }
        display = RecordDisplay(enabled: !command.quiet && stdoutIsTerminal, tracks: sources, rate: fileRate)
        if command.transport { _ = session.transportRelocations() }  // those before the take are not its own
    }

    // MARK: The take's place, its losses

    /// The take begins at device `frame` (queue time 0 at `origin`): its first frame, end and
    /// place on the timeline — on the transport's frames when it follows the transport
    /// (`transportRoll`: the roll's device frame and position) or the transport rolls as it
    /// starts, else on JACK's.
    func beginTake(atDevice frame: Int64, origin: Int64, transportRoll: (deviceFrame: Int64, position: Int64)? = nil) {
        let offset = toQueueFrames(frame - origin)
        let takeStart = max(0, offset - prerollFrames)
        let rolling = transportRoll == nil ? server.session.transportPosition() : nil
        let anchor = transportRoll ?? rolling.flatMap { $0.rolling ? ($0.deviceFrame, Int64($0.frame)) : nil }
        let firstDevice = origin + toDeviceFrames(takeStart + (skip.min() ?? 0))
        // --at F --clock PORT: F is the master's frame, and so is the take's place.
        let masterOffset = masterClock != nil ? command.at.flatMap { at in takeStartDevice.map { at - $0 } } : nil
        let newPlace = TakePlace.of(firstDeviceFrame: firstDevice, transport: anchor, masterOffset: masterOffset,
                                    deviceRate: deviceRate, fileRate: fileRate)
        let broadcast = newPlace.broadcastWaves(files: files, sources: sources, format: takeFormat, rate: fileRate)
        place = newPlace
        writer.state.withLock { [durationFrames, prerollFrames] in
            $0.takeStart = takeStart
            $0.broadcast = broadcast
            if let durationFrames { $0.end = durationFrames + prerollFrames - max(0, prerollFrames - offset) }
        }
        writer.poke()
    }

    /// The transport jumped while rolling (a DAW's loop, a locate while playing): the take
    /// records on, frame after frame; each jump is reported with its take frame.
    func reportRelocations(origin: Int64) {
        let seen = session.transportRelocations()
        for relocation in seen.relocations where relocation.deviceFrame > rollFrame {
            let takeFrame = toQueueFrames(relocation.deviceFrame - origin) - (writer.state.withLock { $0.takeStart } ?? 0)
            Log.info("transport relocated: take frame \(takeFrame) (JACK frame \(relocation.deviceFrame)) plays transport frame \(relocation.transportFrame)")
        }
        if seen.lost > 0 { Log.error("\(seen.lost) transport relocations came too fast to report") }
    }

    /// A gap in the master's clock (`--clock`): frames netjack2 did not deliver, reported as capture losses are.
    func clockGap(at frame: UInt32, frames: Int, open: Bool = false) {
        guard let masterClock, writer.state.withLock({ $0.takeStart }) != nil else { return }
        let device = masterClock.reader.deviceFrame(frame)
        let at = takeFrame(device)
        guard at >= 0, writer.state.withLock({ $0.end.map { at < $0 } ?? true }) else { return }
        networkGaps.append((at, toQueueFrames(Int64(frames))))
        // The tracks that came over the network with the clock (the ports of its client) get
        // silence there, as frames the capture lost do; the others keep theirs.
        let first = toQueueFrames(device - (startedOrigin() ?? requestedOrigin))
        writer.mute(queueFrames: first..<(first + toQueueFrames(Int64(frames))), channels: networkTracks)
        Log.error("network gap of \(toQueueFrames(Int64(frames))) frames at \(TimeSpec.clock(at, rate: fileRate)) (take frame \(at), "
                  + "JACK frame \(device)): the clock on \(masterClock.reader.source) "
                  + (open ? "had not come back by the end" : "skipped them")
                  + " (netjack2 lost their packets and filled the frames from other cycles): "
                  + (networkTracks.isEmpty ? "every track keeps its frames" : "silence in the \(networkTracks.count) tracks from \(clockClient):, the others keep their frames"))
    }

    /// What a take lost, said once it is complete: frames the queue lost, network gaps, cycles
    /// that ran late.
    func reportLosses(_ final: TakeLosses) {
        for event in final.lostEvents {
            Log.error("lost \(event.frames) frames at \(TimeSpec.clock(event.takeFrame, rate: fileRate)) (replaced by silence)")
        }
        if masterClock != nil, !networkGaps.isEmpty {
            Log.error("network gaps: \(networkGaps.count) (\(networkGaps.reduce(0) { $0 + $1.frames }) frames) at take frames "
                      + networkGaps.prefix(20).map { "\($0.takeFrame)+\($0.frames)" }.joined(separator: ", ")
                      + (networkGaps.count > 20 ? ", …" : ""))
        }
        let discontinuities = RecordCommand.discontinuities(queue) &- (discontinuitiesAtTakeStart ?? RecordCommand.discontinuities(queue))
        if discontinuities > 0 {
            // Cycles that ran late. jackd2 keeps a late client's data in order (jaq tells late
            // readings from skipped cycles); PipeWire lets the graph run on, so a late cycle may
            // have read the next cycle's data: say so, as the take may differ there.
            Log.info("\(discontinuities) xruns while recording (JACK cycles ran late"
                     + (JackLibrary.isPipeWire ? "; under PipeWire a late cycle can repeat or skip a period of what it records)" : ")"))
        }
    }
}
