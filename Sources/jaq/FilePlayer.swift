import AudioToolbox
import Synchronization

/// One file played by its own output queue (its own JACK client).
final class FilePlayer: @unchecked Sendable {
    let path: String
    let index: Int
    let file: AudioFileID
    let format: AudioStreamBasicDescription
    let totalPackets: Int64
    let loop: Bool
    var queue: AudioQueueRef!
    let packetsPerBuffer: UInt32
    /// Next packet to read; and frames enqueued in all (for progress).
    let position = Mutex<Int64>(0)
    let enqueued = Atomic<Int64>(0)
    let runningEvents = Atomic<Int>(0)
    let isRunning = Atomic<Bool>(false)
    let readError = Mutex<String?>(nil)
    let ended = Atomic<Bool>(false)
    /// Compressed files: buffer size, cookie, priming and padding (FilePlayer+Packets.swift).
    let packetPlayback: PacketPlayback?
    /// Frames to trim from each enqueued buffer of a compressed file.
    let trims = Mutex<[UInt: (start: Int, end: Int)]>([:])

    init(path: String, index: Int, loop: Bool) throws {
        self.path = path
        self.index = index
        self.loop = loop
        let opened = try PlayableFile(path: path)
        file = opened.id
        format = opened.format
        totalPackets = opened.packetCount
        packetsPerBuffer = opened.packetsPerBuffer(minimumPCMPackets: 256)
        packetPlayback = PacketPlayback(opened.id, format: opened.format, packetsPerBuffer: packetsPerBuffer)
    }

    deinit { AudioFileClose(file) }

    var durationSeconds: Double {
        Double(packetPlayback?.validFrames(packets: totalPackets, format: format) ?? totalPackets) / format.mSampleRate
    }

    /// Fills `buffer` with the next packets (from the start again when looping); false at the end.
    func fill(_ buffer: AudioQueueBufferRef) -> Bool {
        if let packetPlayback { return fillPackets(buffer, packetPlayback) }
        let bytesPerPacket = format.mBytesPerPacket
        var filled: UInt32 = 0
        let capacity = packetsPerBuffer
        while filled < capacity {
            var packets = capacity - filled
            var bytes = packets * bytesPerPacket
            let start = position.withLock { $0 }
            if start >= totalPackets {
                if loop && totalPackets > 0 {
                    position.withLock { $0 = 0 }
                    continue
                }
                break
            }
            let status = AudioFileReadPacketData(file, false, &bytes, nil, start, &packets,
                                                 buffer.pointee.mAudioData + Int(filled * bytesPerPacket))
            if status != noErr && status != kAudioFileEndOfFileError {
                readError.withLock { $0 = "\(path): read error at packet \(start): \(describe(status, file: true))" }
                mainLoopWake.post()
                break
            }
            if packets == 0 {
                // The file is shorter than its header said: treat as its end.
                position.withLock { $0 = totalPackets }
                continue
            }
            position.withLock { $0 = start + Int64(packets) }
            filled += packets
        }
        buffer.pointee.mAudioDataByteSize = filled * bytesPerPacket
        if filled > 0 { enqueued.add(Int64(filled), ordering: .relaxed) }
        return filled > 0
    }
}
