import AudioToolbox
import Foundation
import JackControl
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
