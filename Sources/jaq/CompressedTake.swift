import AudioToolbox
import Foundation
import QueueCore
import Synchronization

/// `jaq record -f m4a` (AAC, or ALAC with --codec alac) and `-f caf --codec aac|alac`: the
/// recorder of Apple's guide with a compressed format. One encoding input queue takes every
/// port (one channel each) and hands whole packets with their descriptions to the callback,
/// which writes them with AudioFileWritePackets; the queue's magic cookie is copied into the
/// file before the first packet and again at the end, and the packet table info is set at the
/// end so the file's length is exact after the encoder's priming.
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
            if let codec { throw CLIError("--codec \(codec) is for -f m4a or -f caf", exitCode: 2) }
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
            default: throw CLIError("-b \(bits): ALAC records 16 or 24-bit sources", exitCode: 2)
            }
        default:
            throw CLIError("--codec \(codec ?? ""): jaq records aac or alac", exitCode: 2)
        }
        if let bitRate {
            guard formatID == kAudioFormatMPEG4AAC else { throw CLIError("--bitrate \(bitRate) is for AAC takes; ALAC is lossless", exitCode: 2) }
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
            throw CLIError("--bitrate \(text): a bit rate in kbit/s (128, 128k) or bit/s (128000)", exitCode: 2)
        }
        let kilo = lowered.hasSuffix("k") || value < 1000
        return UInt32((kilo ? value * 1000 : value).rounded())
    }
}

/// What the recording callback needs.
///
/// Thread safety: `file`, `frameLimit` and `framesPerPacket` are set before the queue starts
/// and only read after; the counters are atomics.
final class CompressedRecorder: @unchecked Sendable {
    var file: AudioFileID?
    /// Packets written so far (the next packet's index) and their frames.
    let packets = Atomic<Int64>(0)
    let frames = Atomic<Int64>(0)
    /// Frames to record before stopping (priming included), Int64.max without --duration.
    var frameLimit: Int64 = .max
    var framesPerPacket: Int64 = 1
    let running = Atomic<Bool>(true)
    let writeError = Mutex<OSStatus>(noErr)
}

/// The guide's HandleInputBuffer for a compressed format: write the packets with their
/// descriptions, re-enqueue until the take is long enough.
private func compressedRecorderCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                                        _ startTime: UnsafePointer<AudioTimeStamp>, _ packetCount: UInt32,
                                        _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
    let recorder = Unmanaged<CompressedRecorder>.fromOpaque(userData!).takeUnretainedValue()
    if packetCount > 0, let file = recorder.file, recorder.frames.load(ordering: .relaxed) < recorder.frameLimit {
        // Only the packets the take still needs: a buffer may run past --duration.
        let missing = recorder.frameLimit - recorder.frames.load(ordering: .relaxed)
        var count = UInt32(min(Int64(packetCount), (missing + recorder.framesPerPacket - 1) / recorder.framesPerPacket))
        let start = recorder.packets.load(ordering: .relaxed)
        let status = AudioFileWritePackets(file, false, buffer.pointee.mAudioDataByteSize, descriptions, start, &count,
                                           buffer.pointee.mAudioData)
        recorder.packets.store(start + Int64(count), ordering: .relaxed)
        var written: Int64 = 0
        for index in 0..<Int(count) {
            let variable = Int64(descriptions?[index].mVariableFramesInPacket ?? 0)
            written += variable > 0 ? variable : recorder.framesPerPacket
        }
        recorder.frames.add(written, ordering: .relaxed)
        if status != noErr {
            recorder.writeError.withLock { $0 = status }
            recorder.running.store(false, ordering: .relaxed)
        }
    }
    if recorder.frames.load(ordering: .relaxed) >= recorder.frameLimit { recorder.running.store(false, ordering: .relaxed) }
    if recorder.running.load(ordering: .relaxed) { AudioQueueEnqueueBuffer(queue, buffer, 0, nil) }
}

extension RecordCommand {
    /// Records the ports into one compressed file through an encoding input queue.
    func recordCompressed(_ take: CompressedTake) throws {
        let startup = Watchdog(seconds: Watchdog.startupSeconds,
                               message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s; nothing was recorded")
        let server = try ServerContext(serverOptions, clientName: "jaq-record-ctl", watchTransport: false)
        defer { server.stop() }
        guard at == nil, `in` == nil, !transport, !onEnter, preRoll == 0 else {
            throw CLIError("--at, --in, --transport, --on-enter and --pre-roll are for PCM takes; compressed takes start now", exitCode: 2)
        }
        let interruption = Interruption()
        let fileRate = rate ?? server.session.sampleRate
        let sources = try resolveSources(server).sources
        guard sources.count <= 8 else { throw CLIError("\(sources.count) ports: AAC and ALAC takes hold at most 8 channels") }
        server.closeSession()

        // The queue first: it completes the format (frames per packet, flags) the file needs.
        var format = AudioStreamBasicDescription(
            mSampleRate: fileRate, mFormatID: take.formatID, mFormatFlags: take.formatFlags, mBytesPerPacket: 0,
            mFramesPerPacket: 0, mBytesPerFrame: 0, mChannelsPerFrame: UInt32(sources.count), mBitsPerChannel: 0, mReserved: 0)
        let recorder = CompressedRecorder()
        let user = Unmanaged.passRetained(recorder).toOpaque()
        defer { Unmanaged<CompressedRecorder>.fromOpaque(user).release() }
        var queue: AudioQueueRef?
        let made = AudioQueueNewInput(&format, compressedRecorderCallback, user, nil, nil, 0, &queue)
        guard made == noErr, let queue else {
            throw CLIError("cannot create an encoding queue for \(fourCharacterCode(take.formatID)): \(describe(made, file: false))")
        }
        defer { AudioQueueDispose(queue, true) }
        if var bitRate = take.bitRate {
            let status = AudioQueueSetProperty(queue, kAudioQueueProperty_EncoderBitRate, &bitRate, 4)
            guard status == noErr else {
                throw CLIError("--bitrate \(bitRate / 1000)k for \(sources.count) channel(s): \(describe(status, file: false)) (8-320 kbit/s a channel)", exitCode: 2)
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
        var table = AudioFilePacketTableInfo()
        size = UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
        AudioFileGetProperty(file, kAudioFilePropertyPacketTableInfo, &size, &table)
        let priming = Int64(table.mPrimingFrames)
        var durationFrames: Int64?
        if let duration {
            guard let frames = TimeSpec.frames(duration, rate: fileRate), frames > 0 else {
                throw CLIError("--duration \(duration): not a time", exitCode: 2)
            }
            durationFrames = frames
        }
        recorder.file = file
        recorder.frameLimit = durationFrames.map { $0 + priming } ?? .max
        recorder.framesPerPacket = Int64(max(format.mFramesPerPacket, 1))
        let renamed = setStringProperty(queue, kAudioQueueProperty_JACKClientName, "jaq-record")
        guard renamed == noErr else { throw CLIError("cannot open JACK client jaq-record: \(describe(renamed, file: false))") }
        let connected = setStringProperty(queue, kAudioQueueProperty_CurrentDevice, sources.joined(separator: ","))
        guard connected == noErr else {
            throw CLIError("cannot connect to \(sources.joined(separator: ", ")): \(describe(connected, file: false))")
        }
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
        let started = AudioQueueStart(queue, nil)
        guard started == noErr else { throw CLIError("cannot start recording: \(describe(started, file: false))") }
        startup.disarm()
        Log.info("recording \(sources.joined(separator: ", ")) to \(path) (\(take.formatID == kAudioFormatMPEG4AAC ? "AAC" : "ALAC"))")
        while recorder.running.load(ordering: .relaxed), interruption.signal == nil { usleep(20_000) }
        AudioQueueStop(queue, true)

        // As the guide: the cookie again (encoders may update it), then the exact length.
        copyCookie(from: queue, to: file)
        let packets = recorder.packets.load(ordering: .relaxed)
        let total = recorder.frames.load(ordering: .relaxed)
        let valid = min(durationFrames ?? .max, max(total - priming, 0))
        table.mNumberValidFrames = valid
        table.mRemainderFrames = Int32(clamping: max(total - priming - valid, 0))
        AudioFileSetProperty(file, kAudioFilePropertyPacketTableInfo, UInt32(MemoryLayout<AudioFilePacketTableInfo>.size), &table)
        closed = true
        let closing = AudioFileClose(file)
        if let error = recorder.writeError.withLock({ $0 }) as OSStatus?, error != noErr {
            throw CLIError("\(path): writing stopped after \(packets) packets: \(describe(error, file: true))")
        }
        guard closing == noErr else { throw CLIError("\(path): \(describe(closing, file: true))") }
        Log.info("\(path): \(valid) frames (\(String(format: "%.3f", Double(valid) / fileRate)) s) in \(packets) packets")
    }

    /// The take's file name: --output with {take} (the first number free), {date}, {ext}.
    private func compressedTakePath(_ take: CompressedTake) throws -> String {
        let pattern = output ?? "take-{take}.{ext}"
        let date = ISO8601DateFormatter.string(from: Date(), timeZone: .current, formatOptions: [.withFullDate])
        func path(_ number: Int) -> String {
            pattern.replacingOccurrences(of: "{take}", with: String(format: "%03d", number)).replacingOccurrences(of: "{date}", with: date)
                .replacingOccurrences(of: "{ext}", with: take.fileExtension).replacingOccurrences(of: "{track}", with: "mix")
                .replacingOccurrences(of: "{n}", with: "01")
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
