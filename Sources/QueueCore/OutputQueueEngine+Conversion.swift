import Synchronization

// An output queue's queue thread: buffers decoded (and resampled) into the decode ring, returned once played.

extension OutputQueueEngine {
    /// Asks the realtime side to wake this thread once the ring has room for a quarter of it
    /// (when there is something to convert), rather than every cycle: the ring stays at least
    /// three quarters full, and the thread wakes about 12 times a second at the default size,
    /// not 47 (a 1024-frame chunk each time; issue #29). An enqueue wakes it at once.
    func armWakeThreshold() {
        let waiting = lock.withLock { !$0.fifo.isEmpty || ($0.life.playOutPending && !$0.output.endOfStreamSent) || $0.output.drainPending }
        let chunk = resampler == nil ? max(chunkFrames, realtime.pointee.ring.capacity / 4) : resampleCapacity
        var threshold = waiting ? min(chunk, realtime.pointee.ring.capacity / 2) : realtime.pointee.ring.capacity / 2
        if effects.isActive && waiting { threshold = realtime.pointee.ring.capacity - effectsFillLimit / 2 }
        // With nothing to convert and the room there already, a threshold would wake this thread
        // every cycle for nothing: a decode ring larger than the frames enqueued (jaq play's
        // three buffers of 12000 frames in a ring of 40000 woke it 1342 times in 9.2 s; 75 now).
        // The next enqueue wakes it, and a played buffer's return (`armReturnWake`).
        if !waiting && realtime.pointee.ring.writableFrames() >= threshold { threshold = .max }
        realtime.pointee.wakeThreshold.store(threshold, ordering: .relaxed)
        if waiting && realtime.pointee.ring.writableFrames() >= threshold { wake.post() }
        armReturnWake()
    }

    /// Asks the realtime side to wake this thread once the oldest held buffer has been played.
    private func armReturnWake() {
        let due = lock.withLock { $0.output.awaitingPlayout.first.map(playedPosition) } ?? .max
        realtime.pointee.returnWakePosition.store(due, ordering: .sequentiallyConsistent)
        // Played meanwhile (the realtime side looked before the store): no wake is coming.
        if due != .max && realtime.pointee.playedIndex.load(ordering: .sequentiallyConsistent) >= due { wake.post() }
    }

    /// The ring position at which `buffer` counts as played: its end, or what the ring holds
    /// if that is less (a resampler keeps a buffer's last frames until more input or a flush
    /// pushes them out; once the ring has played everything else, the buffer is done with).
    private func playedPosition(_ buffer: QueueBuffer) -> Int {
        min(buffer.ringEnd, realtime.pointee.ring.writeIndex.load(ordering: .acquiring))
    }

    /// Returns, oldest first, the held buffers the ring has played (or that a waiting cycle needs played).
    func returnPlayedBuffers() {
        let played: [QueueBuffer] = lock.withLock {
            guard $0.resetTickets.isIdle, !$0.output.awaitingPlayout.isEmpty else { return [] }
            let position = max(realtime.pointee.playedIndex.load(ordering: .acquiring),
                               context.pointee.demandPosition.load(ordering: .sequentiallyConsistent))
            let count = $0.output.awaitingPlayout.prefix { playedPosition($0) <= position }.count
            guard count > 0 else { return [] }
            let done = Array($0.output.awaitingPlayout.prefix(count))
            $0.output.awaitingPlayout.removeFirst(count)
            for buffer in done { buffer.ownership = .returning }
            return done
        }
        guard !played.isEmpty else { return }
        for buffer in played { returnBuffer(buffer, resetBatch: false) }
        producerStateChanged()
    }

    func handleResetRequest() {
        guard let pending = lock.withLock({ $0.resetTickets.pending }) else { return }
        let position = realtime.pointee.ring.writeIndex.load(ordering: .relaxed)
        send(.discard, position: position, synchronous: true)
        resampler?.reset()
        effects.reset()
        packetStage?.reset()
        let returning: [QueueBuffer] = lock.withLock { state in
            let all = state.output.awaitingPlayout + state.fifo
            state.output.awaitingPlayout.removeAll()
            state.fifo.removeAll()
            for buffer in all {
                buffer.ownership = .returning
                buffer.consumedFrames = -1
            }
            state.output.resamplerHasInput = false
            state.output.drainPending = false
            for buffer in all { buffer.drainsDecoderAfter = false }
            _ = state.life.note(.queueDiscarded)
            state.output.endOfStreamSent = false
            // Later buffers with no start time play as soon as possible.
            state.output.predictedEnd = streamPosition(state)
            return all
        }
        for buffer in returning { returnBuffer(buffer, resetBatch: true) }
        lock.withLock {
            $0.resetTickets.complete(pending)
            lock.broadcast()
        }
        producerStateChanged()
    }

    private func returnBuffer(_ buffer: QueueBuffer, resetBatch: Bool) {
        let callback = outputCallback
        deliverBuffer(buffer, resetBatch: resetBatch) { callback(buffer) }
    }

    /// (`state`: the lock's.)
    private func conversionAllowed(_ state: EngineState) -> Bool {
        if state.life.isShutDown || state.invalidated { return false }
        if state.output.priming { return true }
        switch state.runState {
        case .starting, .running, .paused, .stopping: return true
        case .stopped: return false
        }
    }

    /// Decodes enqueued buffers into the ring while there is room.
    func convert() {
        if effects.isActive { _ = releaseEffects() }
        while true {
            // A flushed buffer's tail first; without room for it, later buffers wait.
            if lock.withLock({ $0.output.drainPending }) {
                guard drainResampler() else { break }
                lock.withLock { $0.output.drainPending = false }
            }
            let head: QueueBuffer? = lock.withLock {
                guard conversionAllowed($0), $0.resetTickets.isIdle else { return nil }
                if $0.output.priming && realtime.pointee.ring.readableFrames() >= $0.output.primeTarget { return nil }
                return $0.fifo.first
            }
            guard let head else { break }
            let finished = convertChunk(of: head)
            if finished {
                // Held until played. Frames a resampler still holds come out `delay` frames later.
                let held = effects.isActive ? Double(effects.heldFrames) / rateRatio : 0
                let end = realtime.pointee.ring.writeIndex.load(ordering: .relaxed)
                    + Int((resampler?.delay ?? 0).rounded(.up)) + Int(held.rounded(.up))
                lock.withLock {
                    if let index = $0.fifo.firstIndex(where: { $0 === head }) { $0.fifo.remove(at: index) }
                    head.ringEnd = end
                    $0.output.awaitingPlayout.append(head)
                    if head.drainsDecoderAfter {
                        head.drainsDecoderAfter = false
                        $0.output.drainPending = true
                    }
                }
                returnPlayedBuffers()
            } else if !hasRoomForChunk() {
                break
            }
        }
        sendEndOfStreamIfDue()
    }

    private func hasRoomForChunk() -> Bool {
        if effects.isActive { return effectsHaveRoom() }
        let needed = resampler == nil ? 1 : resampleCapacity
        return realtime.pointee.ring.writableFrames() >= needed
    }

    /// Converts the next part of `buffer`; true when all of it is in the ring.
    private func convertChunk(of buffer: QueueBuffer) -> Bool {
        // The start: silence up to the buffer's start time, then its parameter events.
        if buffer.consumedFrames < 0 {
            let gap: Int64 = lock.withLock {
                guard let start = buffer.requestedStart else { return 0 }
                return max(0, start - streamPosition($0))
            }
            if gap > 0 {
                let written = writeSilence(queueFrames: Int(min(gap, Int64(chunkFrames))))
                if written == 0 { return false }
                if Int64(written) < gap { return false }
            }
            // Frames the effects hold for the ring come before this buffer's first frame too.
            let held = effects.isActive ? Double(effects.heldFrames) / rateRatio : 0
            let position = realtime.pointee.ring.writeIndex.load(ordering: .relaxed)
                + Int((resampler?.delay ?? 0).rounded()) + Int(held.rounded())
            for change in buffer.parameters where !applyEffectsParameter(change) {
                guard let event = realtimeEvent(for: change, at: position) else { continue }
                _ = realtime.pointee.parameterEvents.push(event)
            }
            buffer.consumedFrames = 0
            if packetStage != nil { decodePackets(of: buffer) }
        }
        let playable = buffer.frameCount - buffer.trimStart - buffer.trimEnd
        while buffer.consumedFrames < playable {
            let space = realtime.pointee.ring.writableFrames()
            var count = min(chunkFrames, playable - buffer.consumedFrames)
            let ring = realtime  // the ring is not copyable: through the state's pointer
            let ringOffset = ring.pointee.ring.writeIndex.load(ordering: .relaxed) & ring.pointee.ring.mask
            // Without effects or resampling, decoded straight into the ring's planes.
            let direct = resampler == nil && !effects.isActive && packetStage == nil
            if effects.isActive {
                if !releaseEffects() || !effectsHaveRoom() { count = 0 }
            } else if resampler == nil {
                // Up to the ring's wrap point.
                count = min(count, space, ring.pointee.ring.capacity - ringOffset)
            } else if space < resampleCapacity {
                count = 0
            }
            if count == 0 { return false }
            if let packetStage {
                packetStage.copy(from: buffer.trimStart + buffer.consumedFrames, count: count, into: decodePlanes.planes)
                writeDecoded(frames: count)
            } else {
                // Non-interleaved (a jaq extension): plane c starts at c × frameCount samples.
                let step = format.isNonInterleaved ? format.bytesPerSample : format.bytesPerFrame
                let source = buffer.data + (buffer.trimStart + buffer.consumedFrames) * step
                let stride = buffer.frameCount * format.bytesPerSample
                if direct {
                    let planes = decodePlanes.view(at: 0)  // the table only: pointed at the ring
                    for c in 0..<format.channelCount { planes[c] = ring.pointee.ring.plane(c) + ringOffset }
                    codec.decode(UnsafeRawPointer(source), frames: count, into: UnsafePointer(planes), planeStride: stride)
                    ring.pointee.ring.publish(count)
                    realtimeWake.post()
                } else {
                    codec.decode(UnsafeRawPointer(source), frames: count, into: UnsafePointer(decodePlanes.planes), planeStride: stride)
                    writeDecoded(frames: count)
                }
            }
            buffer.consumedFrames += count
            lock.withLock { $0.output.streamFrames += Int64(count) }
        }
        return true
    }

    /// Writes `frames` decoded frames (queue rate) from the decode planes into the ring.
    private func writeDecoded(frames: Int) {
        if effects.isActive {
            effects.push(decodePlanes.readable, frames: frames)
            _ = releaseEffects()
            return
        }
        writeToRing(decodePlanes.readable, frames: frames)
    }

    /// Writes `frames` frames (queue rate) through the resampler, if any, into the ring.
    func writeToRing(_ planes: UnsafePointer<UnsafePointer<Float>>, frames: Int) {
        if let resampler {
            var consumedTotal = 0
            while consumedTotal < frames {
                let (consumed, produced) = resampler.process(
                    input: effects.pending.offsetView(planes, by: consumedTotal), inputFrames: frames - consumedTotal,
                    output: UnsafePointer(resamplePlanes.planes), outputCapacity: resampleCapacity)
                if produced > 0 { realtime.pointee.ring.write(resamplePlanes.readable, offset: 0, count: produced) }
                consumedTotal += consumed
                if consumed == 0 && produced == 0 { break }
            }
            lock.withLock { $0.output.resamplerHasInput = true }
        } else {
            realtime.pointee.ring.write(planes, offset: 0, count: frames)
        }
        realtimeWake.post()
    }

    /// Writes up to `queueFrames` frames of silence (a gap before a timed buffer); returns frames written.
    private func writeSilence(queueFrames: Int) -> Int {
        let space = realtime.pointee.ring.writableFrames()
        var count = queueFrames
        if effects.isActive {
            if !releaseEffects() || !effectsHaveRoom() { count = 0 }
        } else if resampler == nil { count = min(count, space) } else if space < resampleCapacity { count = 0 }
        guard count > 0 else { return 0 }
        decodePlanes.silence(count: count)
        writeDecoded(frames: count)
        lock.withLock { $0.output.streamFrames += Int64(count) }
        return count
    }

    /// Drains the resampler's tail into the ring; true when done.
    private func drainResampler() -> Bool {
        guard drainEffects(endOfStream: lock.withLock { $0.life.playOutPending }) else { return false }
        guard let resampler, lock.withLock({ $0.output.resamplerHasInput }) else { return true }
        while true {
            guard realtime.pointee.ring.writableFrames() >= resampleCapacity else { return false }
            let (_, produced) = resampler.process(input: nil, inputFrames: 0, output: UnsafePointer(resamplePlanes.planes),
                                                  outputCapacity: resampleCapacity)
            if produced == 0 { break }
            realtime.pointee.ring.write(resamplePlanes.readable, offset: 0, count: produced)
            realtimeWake.post()
        }
        resampler.reset()
        lock.withLock { $0.output.resamplerHasInput = false }
        return true
    }

    func handleFlushRequest() {
        guard lock.withLock({ $0.output.drainPending }), drainResampler() else { return }
        lock.withLock { $0.output.drainPending = false }
    }

    private func sendEndOfStreamIfDue() {
        let due = lock.withLock { $0.life.playOutPending && !$0.output.endOfStreamSent && $0.fifo.isEmpty && $0.runState == .stopping }
        guard due, drainResampler() else { return }
        let position = realtime.pointee.ring.writeIndex.load(ordering: .relaxed)
        lock.withLock { $0.output.endOfStreamSent = true }
        send(.endOfStream, position: position, synchronous: false)
        producerStateChanged()
    }

    func finishPrimeIfDone() {
        lock.withLock {
            guard $0.output.priming, let ticket = $0.output.primeTickets.pending else { return }
            let ready = realtime.pointee.ring.readableFrames()
            let full = !hasRoomForChunk()
            if ready >= $0.output.primeTarget || $0.fifo.isEmpty || full {
                $0.output.primeTickets.complete(ticket)
                lock.broadcast()
            }
        }
    }
}
