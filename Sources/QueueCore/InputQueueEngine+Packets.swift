// Compressed recording: captured frames through the encoder, whole packets into the buffers.

extension InputQueueEngine {
    /// Moves a waiting packet into `head`, or feeds the encoder the next frames of the ring;
    /// false when neither had anything.
    func fillPackets(into head: QueueBuffer, stage: InputPacketStage, flush: Bool, resetBatch: Bool = false) -> Bool {
        if movePacket(into: head, stage: stage, resetBatch: resetBatch) { return true }
        guard stageCount > 0 || fillStage(flush: flush) else { return false }
        encodeStaged(stage)
        return true
    }

    private func encodeStaged(_ stage: InputPacketStage) {
        let count = stageCount
        guard count > 0 else { return }
        if !stage.hasInput {
            stage.streamOrigin = lock.withLock { $0.input.queueFrames }
            stage.hasInput = true
        }
        let status = stage.encoder.encodeFrames(stagePlanes.readableView(at: stageStart), frames: count)
        stageStart += count
        stageCount = 0
        lock.withLock { $0.input.queueFrames += Double(count) }
        if status != 0 { notify(.converterError(status)) }
    }

    /// Feeds the encoder `frames` of silence (frames the capture lost), through the stage, so
    /// the stream's frame N stays the capture's frame N after a loss.
    func encodeSilence(frames: Int, stage: InputPacketStage) {
        var left = frames
        stagePlanes.silence(count: min(left, stagePlanes.capacity))
        while left > 0 {
            stageStart = 0
            stageCount = min(left, stagePlanes.capacity)
            left -= stageCount
            encodeStaged(stage)
        }
    }

    /// Puts the encoder's next packet into `head`, delivering `head` first when the packet
    /// does not fit, and after it when it fills the buffer's descriptions; false when no packet waits.
    private func movePacket(into head: QueueBuffer, stage: InputPacketStage, resetBatch: Bool) -> Bool {
        guard let packet = stage.encoder.nextEncodedPacket() else { return false }
        let size = packet.bytes.count
        if head.filledBytes + size > head.byteCapacity {
            if head.filledBytes == 0 {
                // Larger than a whole buffer (sized below kAudioQueueProperty_MaximumOutputPacketSize): lost.
                stage.droppedPackets += 1
                notify(.converterError(insufficientBufferStatus))
                return true
            }
            stage.encoder.unreadPacket()
            deliverHead(head, resetBatch: resetBatch)
            return true
        }
        if head.packets.isEmpty {
            head.firstQueueFrame = stage.streamOrigin + Double(max(0, packet.streamFrame))
        }
        packet.bytes.withUnsafeBytes { (head.data + head.filledBytes).copyMemory(from: $0.baseAddress!, byteCount: size) }
        let variable = packet.frames == stage.encoder.framesPerPacket ? 0 : packet.frames
        head.packets.append(PacketDescription(offset: head.filledBytes, variableFrames: variable, size: size))
        head.filledBytes += size
        // As many packets as the buffer has descriptions: it is full, whatever bytes are left
        // (a silent AAC packet is 6 bytes: a buffer sized for the largest would take minutes).
        if head.packetCapacity > 0, head.packets.count >= head.packetCapacity { deliverHead(head, resetBatch: resetBatch) }
        return true
    }

    /// The end of a recording (Stop, or Reset with data): the resampler's tail and the
    /// encoder's last packets go into the buffers there are.
    func finishPackets(_ stage: InputPacketStage, resetBatch: Bool = true) {
        while stageCount > 0 || fillStage(flush: true) { encodeStaged(stage) }
        if stage.hasInput {
            stage.hasInput = false
            let status = stage.encoder.finishEncoding()
            if status != 0 { notify(.converterError(status)) }
        }
        while let head = lock.withLock({ $0.fifo.first }) {
            guard movePacket(into: head, stage: stage, resetBatch: resetBatch) else { break }
        }
        if let head = lock.withLock({ $0.fifo.first }), head.filledBytes > 0 { deliverHead(head, resetBatch: resetBatch) }
    }

    /// A new stream starts at the next Start: the encoder begins again (with its priming).
    func restartPackets(_ stage: InputPacketStage) {
        stage.encoder.resetEncoder()
        stage.hasInput = false
    }
}

/// '!buf' (kAudioCodecNotEnoughBufferSpaceError): a packet larger than the buffer it was meant for.
let insufficientBufferStatus: Int32 = 0x2162_7566
