// Compressed playback: packet descriptions in, decoded frames out, on the queue thread.

extension OutputQueueEngine {
    /// Checks a compressed buffer's packet descriptions against its bytes (lock held).
    /// Constant-size formats (IMA4) may come without descriptions: they are derived.
    func checkedPackets(_ given: [PacketDescription], byteCount: Int) throws -> [PacketDescription] {
        var packets = given
        if packets.isEmpty {
            guard let size = constantPacketBytes, size > 0 else {
                throw QueueError.invalidParameter("a compressed buffer needs its packet descriptions")
            }
            packets = stride(from: 0, to: byteCount - size + 1, by: size).map {
                PacketDescription(offset: $0, variableFrames: 0, size: size)
            }
            guard !packets.isEmpty else { throw QueueError.bufferEmpty }
        }
        for (i, packet) in packets.enumerated() {
            guard packet.offset >= 0, packet.size > 0, packet.offset <= byteCount - packet.size, packet.variableFrames >= 0,
                  packet.variableFrames <= 1 << 20
            else {
                throw QueueError.invalidParameter(
                    "packet \(i) (offset \(packet.offset), \(packet.size) bytes) lies outside the buffer's \(byteCount) bytes")
            }
        }
        return packets
    }

    /// Decodes a buffer's packets (at its start, after any gap before it); a packet the codec
    /// refuses plays as silence and sets ConverterError.
    func decodePackets(of buffer: QueueBuffer) {
        guard let packetStage else { return }
        let (frames, error) = packetStage.decode(UnsafeRawPointer(buffer.data), packets: buffer.packets,
                                                 framesPerPacket: framesPerPacket)
        lock.withLock {
            // The descriptions' count was a prediction: the decoder has the last word.
            $0.output.predictedEnd += Int64(frames - buffer.frameCount)
            buffer.frameCount = frames
            if buffer.trimStart + buffer.trimEnd > frames {
                buffer.trimStart = min(buffer.trimStart, frames)
                buffer.trimEnd = frames - buffer.trimStart
            }
        }
        if error != 0 { notify(.converterError(error)) }
    }

    /// A new magic cookie for a compressed queue (kAudioQueueProperty_MagicCookie).
    public func setMagicCookie(_ bytes: [UInt8]) {
        packetStage?.setCookie(bytes)
    }

    /// True for a queue of compressed packets.
    public var isCompressed: Bool { packetStage != nil }
}
