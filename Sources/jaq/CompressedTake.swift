import ArgumentParser
import AudioToolbox
import Foundation
import JackDriver
import Synchronization

/// `jaq record -f m4a` (AAC, or ALAC with --codec alac) and `-f caf --codec aac|alac`: the
/// recorder of Apple's guide with a compressed format. One encoding input queue takes every
/// port (one channel each) and hands whole packets with their descriptions to the callback,
/// which writes them with AudioFileWritePackets; the queue's magic cookie is copied into the
/// file before the first packet and again at the end, and the packet table info is set at the
/// end so the file's length is exact after the encoder's priming. An .m4a take is written
/// crash-safe (kAudioFilePropertyJaqCrashSafeWrites): fragmented until its clean end.
struct CompressedTake {
    let formatID: AudioFormatID
    let fileType: AudioFileTypeID
    let fileExtension: String
    /// ALAC's source depth flag (16 or 24 bits), 0 for AAC.
    let formatFlags: AudioFormatFlags
    /// AAC's bit rate in bits per second (--bitrate), nil for the queue's default.
    let bitRate: UInt32?

    /// The compressed take `format` and `codec` ask for; nil for the PCM and libsndfile formats.
    /// - Throws: CLIError (exit 2) for a codec jaq does not record or one the format cannot hold.
    init?(format: String, codec: String?, bits: String, bitRate: String? = nil) throws {
        let lowered = format.lowercased()
        guard lowered == "m4a" || (lowered == "caf" && codec != nil) else {
            if let codec { throw CLIError("--codec \(codec) is for -f m4a or -f caf", exitCode: CLIError.usage) }
            return nil
        }
        switch (codec ?? "aac").lowercased() {
        case "aac":
            formatID = kAudioFormatMPEG4AAC
            formatFlags = 0
        case "alac":
            formatID = kAudioFormatAppleLossless
            switch bits {
            case "16": formatFlags = 1  // kAppleLosslessFormatFlag_16BitSourceData
            case "24": formatFlags = 3  // kAppleLosslessFormatFlag_24BitSourceData
            default: throw CLIError("-b \(bits): ALAC records 16 or 24-bit sources", exitCode: CLIError.usage)
            }
        default:
            throw CLIError("--codec \(codec ?? ""): jaq records aac or alac", exitCode: CLIError.usage)
        }
        if let bitRate {
            guard formatID == kAudioFormatMPEG4AAC else { throw CLIError("--bitrate \(bitRate) is for AAC takes; ALAC is lossless", exitCode: CLIError.usage) }
            self.bitRate = try Self.bitsPerSecond(bitRate)
        } else {
            self.bitRate = nil
        }
        fileType = lowered == "m4a" ? kAudioFileM4AType : kAudioFileCAFType
        fileExtension = lowered
    }
}

extension CompressedTake {
    /// --bitrate's value in bits per second: "128" and "128k" are kbit/s, "128000" bit/s.
    static func bitsPerSecond(_ text: String) throws -> UInt32 {
        let lowered = text.lowercased()
        let digits = lowered.hasSuffix("k") ? String(lowered.dropLast()) : lowered
        guard let value = Double(digits), value.isFinite, value > 0, value < 100_000_000 else {
            throw CLIError("--bitrate \(text): a bit rate in kbit/s (128, 128k) or bit/s (128000)", exitCode: CLIError.usage)
        }
        let kilo = lowered.hasSuffix("k") || value < 1000
        return UInt32((kilo ? value * 1000 : value).rounded())
    }
}

/// What the recording callback needs, and the packets it holds until the take starts.
///
/// The encoding queue runs from before the take's first frame: a trigger (--at, --in,
/// --transport, --on-enter) and a pre-roll name a frame the encoder has already passed or
/// will reach. Packets are kept until that frame is known; the take's file then starts with
/// the packet holding it (AAC: and the one before, whose overlap the decoder needs to rebuild
/// it exactly), and its packet table's priming frames say where in that packet the take
/// begins. So a compressed take starts on its frame as a PCM take does, and ALAC is bit-exact.
///
/// Thread safety: the configuration is set before the queue starts and only read after;
/// `take` is shared by the queue thread (the callback) and the main loop.
final class CompressedRecorder: @unchecked Sendable {
    var file: AudioFileID?
    var framesPerPacket: Int64 = 1
    /// Frames the encoder's stream starts with before the first frame captured (FFmpeg's AAC: 1024).
    var encoderPriming: Int64 = 0
    /// Packets written before the one holding the take's first frame (AAC 1: its overlap).
    var leadPackets = 0
    /// Frames (queue time) kept while the start is not known: pre-roll, and a second for the
    /// main loop to see a trigger the encoder has already passed.
    var horizonFrames: Int64 = 0
    let running = Atomic<Bool>(true)
    let take = Mutex(TakeState())

    struct Packet {
        var bytes: [UInt8]
        var frames: Int64
        /// Queue time of the packet's first frame (priming packets before 0).
        var start: Int64
        var end: Int64 { start + frames }
    }

    struct TakeState {
        /// Packets received and not written (nor dropped).
        var pending: [Packet] = []
        /// Queue time of the next packet's first frame.
        var nextStart: Int64?
        /// Queue time of the take's first frame (pre-roll included) once known, and of the
        /// frame after its last (--duration, the transport stopping).
        var start: Int64?
        var end: Int64?
        /// Queue time of the first written packet's first frame; nil before the first write.
        var firstWritten: Int64?
        /// Queue time after the last written packet, and the packets written.
        var writtenEnd: Int64 = 0
        var packets: Int64 = 0
        var writeError: OSStatus = noErr
        /// Every frame the take needs is written.
        var complete = false
        /// A start (queue time) that had passed, and the one the take got: said once.
        var passed: (asked: Int64, got: Int64)?
    }

    /// Takes a buffer's packets (`inStartTime` is the queue time of the first one's first
    /// frame, priming counted) and writes what the take needs.
    func receive(_ buffer: AudioQueueBufferRef, startTime: Double, packetCount: Int, descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
        guard let descriptions else { return }
        let data = UnsafeRawPointer(buffer.pointee.mAudioData)
        take.withLock { state in
            // inStartTime of the first buffer is 0 for the priming packet; later buffers' are
            // their first frame's queue time: the stream's frames count on from the first.
            var position = state.nextStart ?? (Int64(startTime.rounded()) - encoderPriming)
            for index in 0..<packetCount {
                let description = descriptions[index]
                let frames = description.mVariableFramesInPacket > 0 ? Int64(description.mVariableFramesInPacket) : framesPerPacket
                let bytes = Array(UnsafeRawBufferPointer(start: data + Int(description.mStartOffset), count: Int(description.mDataByteSize)))
                state.pending.append(Packet(bytes: bytes, frames: frames, start: position))
                position += frames
            }
            state.nextStart = position
            write(&state)
        }
    }

    /// Drops what the take cannot need and writes what it does (lock held).
    func write(_ state: inout TakeState) {
        guard let file, !state.complete, state.writeError == noErr else { return }
        if state.firstWritten == nil {
            // Before the first write: keep the lead packets before the earliest frame the take
            // may start on (its start once known; else what the horizon still reaches back to).
            guard let latest = state.pending.last?.end else { return }
            let earliest = state.start ?? (latest - horizonFrames)
            var drop = 0
            while state.pending.count - drop > leadPackets + 1, state.pending[drop + leadPackets].end <= earliest { drop += 1 }
            state.pending.removeFirst(drop)
            guard let start = state.start, state.pending.count > leadPackets, state.pending[leadPackets].end > start else { return }
            // A start before the first packet kept (it has passed): the take starts there.
            let first = max(start, state.pending[leadPackets].start)
            if first > start { state.passed = (start, first) }
            state.start = first
            var table = AudioFilePacketTableInfo(mNumberValidFrames: 0, mPrimingFrames: Int32(clamping: first - state.pending[0].start),
                                                 mRemainderFrames: 0)
            AudioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &table)
            state.firstWritten = state.pending[0].start
            state.writtenEnd = state.pending[0].start
        }
        var count = 0
        while count < state.pending.count, state.end.map({ state.pending[count].start < $0 }) ?? true { count += 1 }
        for packet in state.pending.prefix(count) {
            var description = AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: UInt32(packet.frames == framesPerPacket ? 0 : packet.frames),
                                                           mDataByteSize: UInt32(packet.bytes.count))
            var one: UInt32 = 1
            let status = AudioFileWritePackets(file, false, UInt32(packet.bytes.count), &description, state.packets, &one, packet.bytes)
            guard status == noErr else {
                state.writeError = status
                running.store(false, ordering: .relaxed)
                return
            }
            state.packets += 1
            state.writtenEnd = packet.end
        }
        state.pending.removeFirst(count)
        // Complete once the end is written, or the next packet starts at or after it.
        if let end = state.end, state.writtenEnd >= end || !state.pending.isEmpty {
            state.complete = true
            running.store(false, ordering: .relaxed)
        }
    }

    /// The packet table of what was written: priming up to the take's first frame, its valid
    /// frames, and the rest of the last packet.
    func packetTable() -> AudioFilePacketTableInfo? {
        take.withLock { state in
            guard let first = state.firstWritten, let start = state.start else { return nil }
            let valid = max(0, min(state.end ?? .max, state.writtenEnd) - start)
            return AudioFilePacketTableInfo(mNumberValidFrames: valid, mPrimingFrames: Int32(clamping: start - first),
                                            mRemainderFrames: Int32(clamping: state.writtenEnd - first - (start - first) - valid))
        }
    }
}

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
    /// --pre-roll and --duration.
    func recordCompressed(_ take: CompressedTake) throws {
        let startup = Watchdog(seconds: Watchdog.startupSeconds,
                               message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s; nothing was recorded")
        let server = try ServerContext(serverOptions, privateServer: privateServerOptions, clientName: "jaq-record-ctl", watchTransport: transport)
        defer { server.stop(closingSession: true) }
        var trigger = try Trigger.forCommand(at: at, in: `in`, transport: transport, onEnter: onEnter)
        let interruption = Interruption()
        let deviceRate = server.session.sampleRate
        let fileRate = rate ?? deviceRate
        let (sources, physical) = try resolveSources(server)
        guard sources.count <= 8 else { throw CLIError("\(sources.count) ports: AAC and ALAC takes hold at most 8 channels") }
        // The control client follows the transport (--transport) and watches the sources for the
        // whole take, as for a PCM take.
        let session: JackSession! = transport ? server.session : nil

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
        var closed = false
        defer { if !closed { AudioFileClose(file) } }
        // An .m4a take is fragmented while it records, so that a killed take opens; its close
        // rewrites it as a regular MPEG-4 file with its exact length.
        if take.fileType == kAudioFileM4AType {
            var crashSafe: UInt32 = 1
            let status = AudioFileSetProperty(file, kAudioFilePropertyJaqCrashSafeWrites, 4, &crashSafe)
            guard status == noErr else { throw CLIError("\(path): cannot write it crash-safe: \(describe(status, file: true))") }
        }
        // The encoder's priming: what a file written from it starts with (1024 for AAC).
        var table = AudioFilePacketTableInfo()
        size = UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
        AudioFileGetProperty(file, kAudioFilePropertyPacketTableInfo, &size, &table)
        var durationFrames: Int64?
        if let duration {
            guard let frames = TimeSpec.frames(duration, rate: fileRate), frames > 0 else {
                throw CLIError("--duration \(duration): \(TimeSpec.problem(duration))", exitCode: CLIError.usage)
            }
            durationFrames = frames
        }
        let prerollFrames = preRoll.frames(at: fileRate)
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
        let sourceWatch = SourceWatch(session: server.session, sources: sources, queueInputs: queueInputs, physical: Set(physical))
        copyCookie(from: queue, to: file)
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

        // Start the queue on a known frame, early enough for the pre-roll and the lead packet
        // of a start planned on a frame: queue time 0 is that frame.
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(queue, &now)
        var queueStart = AudioTimeStamp()
        queueStart.mSampleTime = now.mSampleTime + (0.05 * deviceRate).rounded()
        queueStart.mFlags = .sampleTimeValid
        trigger.arm(now: Int64(now.mSampleTime), deviceRate: deviceRate, origin: Int64(queueStart.mSampleTime),
                    transportChanges: transport ? session.transportChanges().count : 0)
        if trigger.start != .now, let planned = trigger.plannedFrame {
            let lead = Double(prerollFrames + 2 * recorder.framesPerPacket + recorder.encoderPriming) * deviceRate / fileRate + 0.5 * deviceRate
            queueStart.mSampleTime = max(queueStart.mSampleTime, (Double(planned) - lead).rounded())
            trigger.arm(now: Int64(now.mSampleTime), deviceRate: deviceRate, origin: Int64(queueStart.mSampleTime),
                        transportChanges: transport ? session.transportChanges().count : 0)
        }
        let requestedOrigin = Int64(queueStart.mSampleTime)
        var startWatch = RecordCommand.StartWatch(origin: requestedOrigin, rate: deviceRate)
        let started = AudioQueueStart(queue, &queueStart)
        guard started == noErr else { throw CLIError("cannot start recording: \(describe(started, file: false))") }
        startup.disarm()
        let codecName = take.formatID == kAudioFormatMPEG4AAC ? "AAC" : "ALAC"
        switch trigger.start {
        case .now, .transport: break
        case .enter: Log.info("press Enter to start recording (\(sources.count) channel\(sources.count == 1 ? "" : "s") armed)")
        case .frame, .delay: Log.info("recording \(sources.joined(separator: ", ")) from JACK frame \(trigger.plannedFrame ?? 0) to \(path) (\(codecName))")
        }
        let enterPressed = SharedFlag()
        if onEnter {
            Thread.detachNewThread {
                _ = readLine()
                enterPressed.set(1)
            }
        }
        let toQueueFrames = { (deviceFrames: Int64) -> Int64 in Int64((Double(deviceFrames) * fileRate / deviceRate).rounded()) }
        let toDeviceFrames = { (queueFrames: Int64) -> Int64 in Int64((Double(queueFrames) * deviceRate / fileRate).rounded()) }
        func takeTime(_ deviceFrame: Int64) -> String {
            let start = recorder.take.withLock { $0.start } ?? 0
            return TimeSpec.clock(toQueueFrames(deviceFrame - (Self.startDeviceFrame(queue) ?? requestedOrigin)) - start, rate: fileRate)
        }
        var armedAnnounced = false
        var exitStatus: Int32 = 0
        var deviceLost: String?
        func sayPassed(_ origin: Int64) {
            guard let passed = recorder.take.withLock({ state in defer { state.passed = nil }; return state.passed }) else { return }
            let toDevice = { (frames: Int64) -> Int64 in origin + Int64((Double(frames) * deviceRate / fileRate).rounded()) }
            Log.info("frame \(toDevice(passed.asked)) has passed: the take starts at frame \(toDevice(passed.got)), the first one kept")
        }
        while recorder.running.load(ordering: .relaxed), interruption.signal == nil {
            if !Self.serverIsAlive(queue) {
                Log.error("the JACK server went away; the take is complete up to what was written")
                exitStatus = 1
                break
            }
            if let origin = Self.startDeviceFrame(queue) {
                var clock = AudioTimeStamp()
                AudioQueueDeviceGetCurrentTime(queue, &clock)
                let seen = Trigger.Observation(now: Int64(clock.mSampleTime), session: session, enterPressed: enterPressed.value != 0)
                switch trigger.step(seen) {
                case .start(let frame)?:
                    let takeFrame = trigger.start == .now ? origin : frame
                    switch trigger.start {
                    case .now: Log.info("recording \(sources.joined(separator: ", ")) from JACK frame \(origin) to \(path) (\(codecName))")
                    case .transport: Log.info("transport rolling at JACK frame \(frame): recording")
                    case .enter: Log.info("recording from JACK frame \(frame)")
                    case .frame, .delay: break
                    }
                    let offset = toQueueFrames(takeFrame - origin)
                    recorder.take.withLock { state in
                        state.start = offset - prerollFrames
                        if let durationFrames { state.end = offset + durationFrames }
                        recorder.write(&state)
                    }
                case .stop(let frame)?:
                    Log.info("transport stopped at JACK frame \(frame)")
                    recorder.take.withLock { state in
                        state.end = max(state.start ?? 0, toQueueFrames(frame - origin))
                        recorder.write(&state)
                    }
                case nil:
                    if trigger.start == .transport, trigger.phase == .armed, !armedAnnounced {
                        armedAnnounced = true
                        Log.info("waiting for JACK transport to roll (\(sources.count) channel\(sources.count == 1 ? "" : "s") armed)")
                    }
                }
                sayPassed(origin)
                // The sources are looked at up to the take's last frame: one leaving after it
                // leaves a complete take.
                if let end = recorder.take.withLock({ $0.end }) { sourceWatch.end = origin + toDeviceFrames(end) }
            } else if startWatch.hasTimedOut(deviceNow: Self.deviceNow(queue), started: false) {
                Log.error("the JACK server ran no cycles for jaq-record within 10 s of its start")
                exitStatus = 1
                break
            }
            let watched = sourceWatch.poll(now: Self.deviceNow(queue))
            if !watched.isEmpty, let lost = SourceWatch.report(watched, takeTime: takeTime, fileFrames: toQueueFrames) {
                // Every port goes when the whole server does: that is the server gone.
                if Self.serverIsAlive(queue) { deviceLost = lost } else { Log.error("the JACK server went away; the take is complete up to what was written") }
                exitStatus = 1
                break
            }
            usleep(20_000)
        }
        if let origin = Self.startDeviceFrame(queue) { sayPassed(origin) }
        AudioQueueStop(queue, true)
        reportLoss(queue, recorder: recorder, fileRate: fileRate)

        // As the guide: the cookie again (encoders may update it), then the exact length.
        copyCookie(from: queue, to: file)
        let written = recorder.take.withLock { ($0.packets, $0.writeError) }
        let packetTable = recorder.packetTable()
        if var packetTable {
            AudioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &packetTable)
        }
        closed = true
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
            let hooks = TakeEndHooks(command: onTakeEnd)
            hooks.run([path])
            hooks.waitForAll()
        }
        // The take is on disk; closing the queue's client (and a private server) must not hang.
        _ = Watchdog(seconds: Watchdog.teardownSeconds, status: exitStatus,
                     message: "closing the JACK clients took over \(Int(Watchdog.teardownSeconds)) s; the take is complete")
        if exitStatus != 0 { throw ExitCode(exitStatus) }
    }

    /// Frames the capture lost (RecordUnderrun): the queue encoded silence in their place, so
    /// the take stays on its frames; one line says how many and where in the take.
    private func reportLoss(_ queue: AudioQueueRef, recorder: CompressedRecorder, fileRate: Double) {
        var info = AudioQueueRecordUnderrunInfo()
        var size = UInt32(MemoryLayout<AudioQueueRecordUnderrunInfo>.size)
        guard AudioQueueGetProperty(queue, kAudioQueueProperty_RecordUnderrun, &info, &size) == noErr, info.mFramesLost > 0 else { return }
        let takeStart = recorder.take.withLock { $0.start } ?? 0
        let at = TimeSpec.clock(max(0, Int64(info.mLastLossSampleTime.rounded()) - takeStart), rate: fileRate)
        let places = info.mEventCount == 1 ? "at \(at)" : "in \(info.mEventCount) places, the last at \(at)"
        Log.error("lost \(info.mFramesLost) frames \(places) (replaced by silence)")
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

    /// Copies the queue's magic cookie into the file (the guide's recorder does it at the start
    /// and at the end).
    private func copyCookie(from queue: AudioQueueRef, to file: AudioFileID) {
        var size: UInt32 = 0
        guard AudioQueueGetPropertySize(queue, kAudioQueueProperty_MagicCookie, &size) == noErr, size > 0 else { return }
        var cookie = [UInt8](repeating: 0, count: Int(size))
        guard AudioQueueGetProperty(queue, kAudioQueueProperty_MagicCookie, &cookie, &size) == noErr else { return }
        AudioFileSetProperty(file, kAudioFilePropertyMagicCookieData, size, cookie)
    }
}
