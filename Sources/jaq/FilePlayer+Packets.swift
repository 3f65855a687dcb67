import AudioToolbox

/// Files of compressed packets (AAC, ALAC... in .m4a, .caf, ADTS) played as the guide's player
/// plays them: buffers sized by the file's largest packet, packet descriptions read with the
/// packets and enqueued with them, the file's magic cookie given to the queue, and the
/// encoder's priming and the last packet's padding trimmed with
/// AudioQueueEnqueueBufferWithParameters, so what plays is exactly the file's valid frames.
struct PacketPlayback {
    /// Bytes one buffer holds: packets × the file's largest packet.
    let bufferBytes: UInt32
    let cookie: [UInt8]
    let primingFrames: Int
    let remainderFrames: Int

    /// The packet playback of `file`, or nil for linear PCM (constant one-frame packets).
    init?(_ file: AudioFileID, format: AudioStreamBasicDescription, packetsPerBuffer: UInt32) {
        guard format.mBytesPerPacket == 0 || format.mFramesPerPacket > 1 else { return nil }
        var largest: UInt32 = 0
        var size = UInt32(4)
        if AudioFileGetProperty(file, kAudioFilePropertyPacketSizeUpperBound, &size, &largest) != noErr || largest == 0 {
            size = 4
            AudioFileGetProperty(file, kAudioFilePropertyMaximumPacketSize, &size, &largest)
        }
        bufferBytes = packetsPerBuffer * max(largest, format.mBytesPerPacket, 1)
        var cookie: [UInt8] = []
        size = 0
        if AudioFileGetPropertyInfo(file, kAudioFilePropertyMagicCookieData, &size, nil) == noErr, size > 0 {
            cookie = [UInt8](repeating: 0, count: Int(size))
            if AudioFileGetProperty(file, kAudioFilePropertyMagicCookieData, &size, &cookie) != noErr { cookie = [] }
        }
        self.cookie = cookie
        var table = AudioFilePacketTableInfo()
        size = UInt32(MemoryLayout<AudioFilePacketTableInfo>.size)
        if AudioFileGetProperty(file, kAudioFilePropertyPacketTableInfo, &size, &table) == noErr {
            primingFrames = Int(table.mPrimingFrames)
            remainderFrames = Int(table.mRemainderFrames)
        } else {
            primingFrames = 0
            remainderFrames = 0
        }
    }

    /// Packets a buffer holds: a quarter second, at least 4.
    static func packetsPerBuffer(_ format: AudioStreamBasicDescription) -> UInt32 {
        let framesPerPacket = Double(max(format.mFramesPerPacket, 1))
        return UInt32(max(4, (format.mSampleRate / 4 / framesPerPacket).rounded(.up)))
    }

    /// Frames the file plays: its packets' less the priming and the remainder.
    func validFrames(packets: Int64, format: AudioStreamBasicDescription) -> Int64 {
        packets * Int64(max(format.mFramesPerPacket, 1)) - Int64(primingFrames + remainderFrames)
    }

    /// Reads up to `count` packets from `start` into `buffer` with their descriptions (sets
    /// its byte and description counts) and gives the frames to trim from it: the priming in
    /// the buffer holding packet 0, the padding in the one holding the last packet.
    func read(_ file: AudioFileID, format: AudioStreamBasicDescription, into buffer: AudioQueueBufferRef, from start: Int64,
              count: UInt32, totalPackets: Int64) -> (packets: UInt32, trimStart: Int, trimEnd: Int, status: OSStatus) {
        var bytes = buffer.pointee.mAudioDataBytesCapacity
        var packets = min(count, buffer.pointee.mPacketDescriptionCapacity)
        let status = AudioFileReadPacketData(file, false, &bytes, buffer.pointee.mPacketDescriptions, start, &packets,
                                             buffer.pointee.mAudioData)
        guard status == noErr || status == kAudioFileEndOfFileError else { return (0, 0, 0, status) }
        buffer.pointee.mAudioDataByteSize = bytes
        buffer.pointee.mPacketDescriptionCount = packets
        let end = start + Int64(packets)
        let frames = Int(packets) * Int(max(format.mFramesPerPacket, 1))
        let trimStart = start == 0 ? min(primingFrames, frames) : 0
        // Decoders of AAC, MP3 and Opus give whole packets, padding included; ALAC and FLAC
        // packets carry their own length, so their short last packet needs no trim.
        let padsLastPacket = [kAudioFormatMPEG4AAC, kAudioFormatMPEG4AAC_HE, kAudioFormatMPEGLayer3, kAudioFormatOpus].contains(format.mFormatID)
        let trimEnd = end == totalPackets && padsLastPacket ? min(remainderFrames, frames - trimStart) : 0
        return (packets, trimStart, trimEnd, noErr)
    }
}

extension FilePlayer {
    /// Gives the queue the file's magic cookie (before the first buffer, as the guide does).
    func configure(_ queue: AudioQueueRef) -> OSStatus {
        guard let packets = packetPlayback, !packets.cookie.isEmpty else { return noErr }
        return AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, packets.cookie, UInt32(packets.cookie.count))
    }

    /// A buffer for this file: with packet descriptions for compressed files.
    func allocateBuffer(_ queue: AudioQueueRef, _ buffer: inout AudioQueueBufferRef?) -> OSStatus {
        guard let packets = packetPlayback else {
            return AudioQueueAllocateBuffer(queue, packetsPerBuffer * format.mBytesPerPacket, &buffer)
        }
        return AudioQueueAllocateBufferWithPacketDescriptions(queue, packets.bufferBytes, packetsPerBuffer, &buffer)
    }

    /// Fills `buffer` with the next packets and their descriptions; false at the end. The
    /// frames to trim (priming in the buffer holding packet 0, padding in the one holding the
    /// last packet) go with the buffer's user data.
    func fillPackets(_ buffer: AudioQueueBufferRef, _ packets: PacketPlayback) -> Bool {
        var start = position.withLock { $0 }
        if start >= totalPackets, loop, totalPackets > 0 {
            position.withLock { $0 = 0 }
            start = 0
        }
        guard start < totalPackets else { return false }
        let (count, trimStart, trimEnd, status) = packets.read(file, format: format, into: buffer, from: start, count: packetsPerBuffer,
                                                               totalPackets: totalPackets)
        if status != noErr {
            readError.withLock { $0 = "\(path): read error at packet \(start): \(describe(status, file: true))" }
            mainLoopWake.post()
            return false
        }
        guard count > 0 else {
            position.withLock { $0 = totalPackets }
            return false
        }
        position.withLock { $0 = start + Int64(count) }
        let frames = Int(count) * Int(max(format.mFramesPerPacket, 1))
        trims.withLock { $0[UInt(bitPattern: buffer)] = (trimStart, trimEnd) }
        enqueued.add(Int64(frames - trimStart - trimEnd), ordering: .relaxed)
        return true
    }

    /// Enqueues a filled buffer: with its packet descriptions and trims for compressed files.
    func enqueue(_ buffer: AudioQueueBufferRef, on queue: AudioQueueRef) -> OSStatus {
        guard packetPlayback != nil else { return AudioQueueEnqueueBuffer(queue, buffer, 0, nil) }
        let trim = trims.withLock { $0[UInt(bitPattern: buffer)] } ?? (start: 0, end: 0)
        return AudioQueueEnqueueBufferWithParameters(queue, buffer, buffer.pointee.mPacketDescriptionCount, buffer.pointee.mPacketDescriptions,
                                                     UInt32(trim.start), UInt32(trim.end), 0, nil, nil, nil)
    }
}
