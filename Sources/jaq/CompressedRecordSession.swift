import ArgumentParser
import AudioToolbox
import Foundation
import Glibc
import JackControl

/// The guide's HandleInputBuffer for a compressed format: hand the packets with their
/// descriptions to the take, re-enqueue until it is complete.
private func compressedRecorderCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                                        _ startTime: UnsafePointer<AudioTimeStamp>, _ packetCount: UInt32,
                                        _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
    let recorder = Unmanaged<CompressedRecorder>.fromOpaque(userData!).takeUnretainedValue()
    if packetCount > 0 {
        recorder.receive(buffer, startTime: startTime.pointee.mSampleTime, packetCount: Int(packetCount), descriptions: descriptions)
    }
    if recorder.running.load(ordering: .relaxed) { AudioQueueEnqueueBuffer(queue, buffer, 0, nil) }
}

extension RecordCommand {
    /// Records the ports into one compressed file through an encoding input queue, started
    /// by the same Trigger as a PCM take (now, --at, --in, --transport, --on-enter), with
    /// --pre-roll and --duration. This makes what must be undone if a later step fails (the
    /// server context, the queue, the file) and undoes it; a `CompressedRecordSession` records.
    func recordCompressed(_ take: CompressedTake) throws {
        let startup = Watchdog(seconds: Watchdog.startupSeconds,
                               message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s; nothing was recorded")
        let server = try ServerContext(serverOptions, privateServer: privateServerOptions, clientName: "jaq-record-ctl", watchTransport: transport)
        defer { server.stop(closingSession: true) }
        let trigger = try Trigger.forCommand(at: at, in: `in`, transport: transport, onEnter: onEnter)
        let interruption = Interruption()
        let fileRate = rate ?? server.session.sampleRate
        let (sources, physical) = try resolveSources(server)
        guard sources.count <= 8 else { throw CLIError("\(sources.count) ports: AAC and ALAC takes hold at most 8 channels") }

        // The queue first: it completes the format (frames per packet, flags) the file needs.
        var format = AudioStreamBasicDescription(
            mSampleRate: fileRate, mFormatID: take.formatID, mFormatFlags: take.formatFlags, mBytesPerPacket: 0,
            mFramesPerPacket: 0, mBytesPerFrame: 0, mChannelsPerFrame: UInt32(sources.count), mBitsPerChannel: 0, mReserved: 0)
        let recorder = CompressedRecorder()
        let user = Unmanaged.passRetained(recorder).toOpaque()
        defer { Unmanaged<CompressedRecorder>.fromOpaque(user).release() }
        var queue: AudioQueueRef?
        let made = AudioQueueNewInput(&format, compressedRecorderCallback, user, nil, nil, 0, &queue,
                                      device: AudioQueueDevices.jack(clientName: "jaq-record"))
        guard made == noErr, let queue else {
            throw CLIError("cannot create an encoding queue for \(fourCharacterCode(take.formatID)): \(server.queueFailure(made))")
        }
        defer { AudioQueueDispose(queue, true) }
        if var bitRate = take.bitRate {
            let status = AudioQueueSetProperty(queue, kAudioQueueProperty_EncoderBitRate, &bitRate, 4)
            guard status == noErr else {
                throw CLIError("--bitrate \(bitRate / 1000)k for \(sources.count) channel(s): \(describe(status, file: false)) (8-320 kbit/s a channel)", exitCode: CLIError.usage)
            }
        }
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        AudioQueueGetProperty(queue, kAudioQueueProperty_StreamDescription, &format, &size)
        let path = try compressedTakePath(take)
        var fileID: AudioFileID?
        let created = AudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, take.fileType, &format, [], &fileID)
        guard created == noErr, let file = fileID else { throw CLIError("\(path): \(describe(created, file: true))") }

        let session = CompressedRecordSession(command: self, take: take, server: server, interruption: interruption, trigger: trigger,
                                              sources: sources, physical: physical, queue: queue, recorder: recorder,
                                              file: file, path: path, format: format, fileRate: fileRate)
        defer { session.closeFileIfOpen() }
        try session.prepare()
        try session.start()
        startup.disarm()
        let exitStatus = try session.run()
        // The take is on disk; closing the queue's client (and a private server) must not hang.
        _ = Watchdog(seconds: Watchdog.teardownSeconds, status: exitStatus,
                     message: "closing the JACK clients took over \(Int(Watchdog.teardownSeconds)) s; the take is complete")
        if exitStatus != 0 { throw ExitCode(exitStatus) }
    }

    /// The take's file name: --output with {take} (the first number free), {date}, {ext}.
    private func compressedTakePath(_ take: CompressedTake) throws -> String {
        let pattern = output ?? "take-{take}.{ext}"
        let date = ISO8601DateFormatter.string(from: Date(), timeZone: .current, formatOptions: [.withFullDate])
        func path(_ number: Int) -> String {
            expandTakeName(pattern, [("take", zeroPadded(number, width: 3)), ("date", date), ("ext", take.fileExtension),
                                     ("track", "mix"), ("n", "01")])
        }
        var number = 1
        while FileManager.default.fileExists(atPath: path(number)) {
            guard pattern.contains("{take}") else { throw CLIError("\(path(number)): exists (put {take} in --output)") }
            number += 1
        }
        return path(number)
    }
}

/// One encoded take (`-f m4a`, `--codec`): the queue's set-up and start, the main loop (the
/// trigger, the source watch), and the end (the cookie again, the exact length, the report).
final class CompressedRecordSession: TakeTiming {
    let command: RecordCommand
    let take: CompressedTake
    let server: ServerContext
    /// The control client, when the take follows the transport (`--transport`).
    let session: JackSession!
    let interruption: Interruption
    var trigger: Trigger
    let sources: [String]
    let physical: [String]
    let queue: AudioQueueRef
    let recorder: CompressedRecorder
    let file: AudioFileID
    let path: String
    let format: AudioStreamBasicDescription
    let deviceRate: Double
    let fileRate: Double
    let prerollFrames: Int64
    let codecName: String
    private(set) var fileClosed = false

    var durationFrames: Int64?
    var sourceWatch: SourceWatch!
    var requestedOrigin: Int64 = 0
    var startWatch = RecordCommand.StartWatch(origin: 0, rate: 48000)
    let enterPressed = SharedFlag()
    var armedAnnounced = false
    var exitStatus: Int32 = 0
    var deviceLost: String?

    init(command: RecordCommand, take: CompressedTake, server: ServerContext, interruption: Interruption, trigger: Trigger,
         sources: [String], physical: [String], queue: AudioQueueRef, recorder: CompressedRecorder,
         file: AudioFileID, path: String, format: AudioStreamBasicDescription, fileRate: Double) {
        self.command = command
        self.take = take
        self.server = server
        // The control client follows the transport (--transport) and watches the sources for the
        // whole take, as for a PCM take.
        self.session = command.transport ? server.session : nil
        self.interruption = interruption
        self.trigger = trigger
        self.sources = sources
        self.physical = physical
        self.queue = queue
        self.recorder = recorder
        self.file = file
        self.path = path
        self.format = format
        self.deviceRate = server.session.sampleRate
        self.fileRate = fileRate
        self.prerollFrames = command.preRoll.frames(at: fileRate)
        self.codecName = take.formatID == kAudioFormatMPEG4AAC ? "AAC" : "ALAC"
    }

    /// Closes the file if finish() did not (a step before it failed).
    func closeFileIfOpen() {
        if !fileClosed { AudioFileClose(file) }
        fileClosed = true
    }

    var channelsArmed: String { "\(sources.count) channel\(sources.count == 1 ? "" : "s") armed" }


    func takeTime(_ deviceFrame: Int64) -> String {
        let start = recorder.take.withLock { $0.start } ?? 0
        return TimeSpec.clock(toQueueFrames(deviceFrame - (RecordCommand.startDeviceFrame(queue) ?? requestedOrigin)) - start, rate: fileRate)
    }

    /// The file written crash-safe, the recorder told the packets' shape, the queue connected,
    /// the sources watched, the cookie copied, three buffers enqueued.
    func prepare() throws {
        // An .m4a take is fragmented while it records, so that a killed take opens; its close
        // rewrites it as a regular MPEG-4 file with its exact length.
        if take.fileType == kAudioFileM4AType {
            var crashSafe: UInt32 = 1
            let status = AudioFileSetProperty(file, kAudioFilePropertyJaqCrashSafeWrites, 4, &crashSafe)
            guard status == noErr else { throw CLIError("\(path): cannot write it crash-safe: \(describe(status, file: true))") }
        }
        // The encoder's priming: what a file written from it starts with (1024 for AAC).
        var table = AudioFilePacketTableInfo()
        var size = UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
        AudioFileGetProperty(file, kAudioFilePropertyPacketTableInfo, &size, &table)
        if let duration = command.duration {
            guard let frames = TimeSpec.frames(duration, rate: fileRate), frames > 0 else {
                throw CLIError("--duration \(duration): \(TimeSpec.problem(duration))", exitCode: CLIError.usage)
            }
            durationFrames = frames
        }
        recorder.file = file
        recorder.framesPerPacket = Int64(max(format.mFramesPerPacket, 1))
        recorder.encoderPriming = Int64(table.mPrimingFrames)
        recorder.leadPackets = take.formatID == kAudioFormatMPEG4AAC ? 1 : 0
        recorder.horizonFrames = prerollFrames + Int64(fileRate)
        let connected = setStringProperty(queue, kAudioQueueProperty_CurrentDevice, sources.joined(separator: ","))
        guard connected == noErr else {
            throw CLIError("cannot connect to \(sources.joined(separator: ", ")): \(describe(connected, file: false))")
        }
        // Ports whose client leaves: silence in their channels until they are back, reported as
        // a PCM take reports them; the take ends when the server's own device went.
        let queueInputs = stringProperty(queue, kAudioQueueProperty_JACKPortNames)?.split(separator: ",").map(String.init) ?? []
        sourceWatch = SourceWatch(session: server.session, sources: sources, queueInputs: queueInputs, physical: Set(physical))
        copyCookie()
        // Half a second of packets a buffer, sized by the largest packet the encoder makes.
        var largest: UInt32 = 0
        size = 4
        AudioQueueGetProperty(queue, kAudioQueueProperty_MaximumOutputPacketSize, &largest, &size)
        let packetsPerBuffer = max(4, UInt32((fileRate / 2 / Double(max(format.mFramesPerPacket, 1))).rounded(.up)))
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            let allocated = AudioQueueAllocateBufferWithPacketDescriptions(queue, max(largest, 1) * packetsPerBuffer, packetsPerBuffer, &buffer)
            guard allocated == noErr, let buffer else { throw CLIError("cannot allocate buffers: \(describe(allocated, file: false))") }
            AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        }
    }

    /// Starts the queue on a known frame, early enough for the pre-roll and the lead packet of a
    /// start planned on a frame: queue time 0 is that frame. Arms the trigger.
    func start() throws {
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(queue, &now)
        var queueStart = AudioTimeStamp()
        queueStart.mSampleTime = now.mSampleTime + (0.05 * deviceRate).rounded()
        queueStart.mFlags = .sampleTimeValid
        let transportChanges = { [session, transport = command.transport] in transport ? session!.transportChanges().count : 0 }
        trigger.arm(now: Int64(now.mSampleTime), deviceRate: deviceRate, origin: Int64(queueStart.mSampleTime),
                    transportChanges: transportChanges())
        if trigger.start != .now, let planned = trigger.plannedFrame {
            let lead = Double(prerollFrames + 2 * recorder.framesPerPacket + recorder.encoderPriming) * deviceRate / fileRate + 0.5 * deviceRate
            queueStart.mSampleTime = max(queueStart.mSampleTime, (Double(planned) - lead).rounded())
            trigger.arm(now: Int64(now.mSampleTime), deviceRate: deviceRate, origin: Int64(queueStart.mSampleTime),
                        transportChanges: transportChanges())
        }
        requestedOrigin = Int64(queueStart.mSampleTime)
        startWatch = RecordCommand.StartWatch(origin: requestedOrigin, rate: deviceRate)
        let started = AudioQueueStart(queue, &queueStart)
        guard started == noErr else { throw CLIError("cannot start recording: \(describe(started, file: false))") }
        switch trigger.start {
        case .now, .transport: break
        case .enter: Log.info("press Enter to start recording (\(channelsArmed))")
        case .frame, .delay: Log.info("recording \(sources.joined(separator: ", ")) from JACK frame \(trigger.plannedFrame ?? 0) to \(path) (\(codecName))")
        }
        if command.onEnter {
            Thread.detachNewThread { [enterPressed] in
                _ = readLine()
                enterPressed.set(1)
            }
        }
    }

    /// Records until the take is complete, a signal, or a failure; then finishes the file.
    /// Returns the exit status; throws when the file could not be written or closed.
    func run() throws -> Int32 {
        while recorder.running.load(ordering: .relaxed), interruption.signal == nil, pass() {
            usleep(20_000)
        }
        return try finish()
    }

    /// One look at the take: the server, the trigger, the sources. False if the take must end.
    func pass() -> Bool {
        if !RecordCommand.serverIsAlive(queue) {
            Log.error("the JACK server went away; the take is complete up to what was written")
            exitStatus = 1
            return false
        }
        if let origin = RecordCommand.startDeviceFrame(queue) {
            stepTrigger(origin: origin)
            sayPassed(origin)
            // The sources are looked at up to the take's last frame: one leaving after it
            // leaves a complete take.
            if let end = recorder.take.withLock({ $0.end }) { sourceWatch.end = origin + toDeviceFrames(end) }
        } else if startWatch.hasTimedOut(deviceNow: RecordCommand.deviceNow(queue), started: false) {
            Log.error("the JACK server ran no cycles for jaq-record within 10 s of its start")
            exitStatus = 1
            return false
        }
        let watched = sourceWatch.poll(now: RecordCommand.deviceNow(queue))
        if !watched.isEmpty, let lost = SourceWatch.report(watched, takeTime: takeTime, fileFrames: toQueueFrames) {
            // Every port goes when the whole server does: that is the server gone.
            if RecordCommand.serverIsAlive(queue) { deviceLost = lost } else { Log.error("the JACK server went away; the take is complete up to what was written") }
            exitStatus = 1
            return false
        }
        return true
    }

    /// The trigger's step (queue time 0 at device frame `origin`): the take's start or its stop.
    func stepTrigger(origin: Int64) {
        switch trigger.step(observation(session: session, enterPressed: enterPressed)) {
        case .start(let frame)?:
            let takeFrame = trigger.start == .now ? origin : frame
            switch trigger.start {
            case .now: Log.info("recording \(sources.joined(separator: ", ")) from JACK frame \(origin) to \(path) (\(codecName))")
            case .transport: Log.info("transport rolling at JACK frame \(frame): recording")
            case .enter: Log.info("recording from JACK frame \(frame)")
            case .frame, .delay: break
            }
            let offset = toQueueFrames(takeFrame - origin)
            recorder.take.withLock { [recorder, prerollFrames, durationFrames] state in
                state.start = offset - prerollFrames
                if let durationFrames { state.end = offset + durationFrames }
                recorder.write(&state)
            }
        case .stop(let frame)?:
            Log.info("transport stopped at JACK frame \(frame)")
            let end = toQueueFrames(frame - origin)
            recorder.take.withLock { [recorder] state in
                state.end = max(state.start ?? 0, end)
                recorder.write(&state)
            }
        case nil:
            if trigger.start == .transport, trigger.phase == .armed, !armedAnnounced {
                armedAnnounced = true
                Log.info("waiting for JACK transport to roll (\(channelsArmed))")
            }
        }
    }

    /// Says once that a start planned on a frame that had passed starts on the first frame kept.
    func sayPassed(_ origin: Int64) {
        guard let passed = recorder.take.withLock({ state in defer { state.passed = nil }; return state.passed }) else { return }
        let toDevice = { (frames: Int64) -> Int64 in origin + self.toDeviceFrames(frames) }
        Log.info("frame \(toDevice(passed.asked)) has passed: the take starts at frame \(toDevice(passed.got)), the first one kept")
    }

    /// Stops the queue and, as the guide does, copies the cookie again (encoders may update it)
    /// and sets the exact length; closes the file, says how the take ended, runs --on-take-end.
    func finish() throws -> Int32 {
        if let origin = RecordCommand.startDeviceFrame(queue) { sayPassed(origin) }
        AudioQueueStop(queue, true)
        reportLoss()
        copyCookie()
        let written = recorder.take.withLock { ($0.packets, $0.writeError) }
        let packetTable = recorder.packetTable()
        if var packetTable {
            AudioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &packetTable)
        }
        fileClosed = true
        let closing = AudioFileClose(file)
        if written.1 != noErr {
            throw CLIError("\(path): writing stopped after \(written.0) packets: \(describe(written.1, file: true))")
        }
        guard closing == noErr else { throw CLIError("\(path): \(describe(closing, file: true))") }
        let valid = packetTable?.mNumberValidFrames ?? 0
        if packetTable == nil {
            unlink(path)
            Log.info("nothing was recorded; no file kept")
        } else if let deviceLost {
            Log.error("\(deviceLost) went away: the JACK server lost its audio device (on a netjack2 slave: the master left); "
                      + "the take is complete up to \(TimeSpec.clock(valid, rate: fileRate)) (\(valid) frames): \(path)")
        } else {
            Log.info("\(path): \(valid) frames (\(String(format: "%.3f", Double(valid) / fileRate)) s) in \(written.0) packets")
        }
        if packetTable != nil {
            let hooks = TakeEndHooks(command: command.onTakeEnd)
            hooks.run([path])
            hooks.waitForAll()
        }
        return exitStatus
    }

    /// Frames the capture lost (RecordUnderrun): the queue encoded silence in their place, so
    /// the take stays on its frames; one line says how many and where in the take.
    private func reportLoss() {
        var info = AudioQueueRecordUnderrunInfo()
        var size = UInt32(MemoryLayout<AudioQueueRecordUnderrunInfo>.size)
        guard AudioQueueGetProperty(queue, kAudioQueueProperty_RecordUnderrun, &info, &size) == noErr, info.mFramesLost > 0 else { return }
        let takeStart = recorder.take.withLock { $0.start } ?? 0
        let at = TimeSpec.clock(max(0, Int64(info.mLastLossSampleTime.rounded()) - takeStart), rate: fileRate)
        let places = info.mEventCount == 1 ? "at \(at)" : "in \(info.mEventCount) places, the last at \(at)"
        Log.error("lost \(info.mFramesLost) frames \(places) (replaced by silence)")
    }

    /// Copies the queue's magic cookie into the file (the guide's recorder does it at the start
    /// and at the end).
    private func copyCookie() {
        var size: UInt32 = 0
        guard AudioQueueGetPropertySize(queue, kAudioQueueProperty_MagicCookie, &size) == noErr, size > 0 else { return }
        var cookie = [UInt8](repeating: 0, count: Int(size))
        guard AudioQueueGetProperty(queue, kAudioQueueProperty_MagicCookie, &cookie, &size) == noErr else { return }
        AudioFileSetProperty(file, kAudioFilePropertyMagicCookieData, size, cookie)
    }
}
