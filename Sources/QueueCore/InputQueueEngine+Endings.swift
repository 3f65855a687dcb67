import Glibc
import Synchronization

// The ends of capture, on the queue thread: Flush (the partly filled buffer delivered, capture
// going on), Reset and Stop(true) (what was captured up to them delivered, the rest dropped), and
// the end of a Stop(false), once everything captured has been delivered.
extension InputQueueEngine {
    /// Flush's work on the queue thread (`flushQueued` asks for it).
    func handleFlushRequest() {
        guard let pending = lock.withLock({ $0.input.flushTickets.pending }) else { return }
        drain(ignoringState: true)
        // A stopped queue's resampler tail, once the ring has been read (a bounded number of rounds).
        var rounds = 0
        while resampler != nil, lock.withLock({ $0.runState == .stopped }), rounds < 8,
              realtime.pointee.ring.readableFrames() == 0, lock.withLock({ !$0.fifo.isEmpty }),
              stageCount > 0 || fillStage(flush: true) {
            drain(ignoringState: true)
            rounds += 1
        }
        if let head = lock.withLock({ $0.fifo.first }), head.filledBytes > 0 { deliverHead(head) }
        lock.withLock {
            $0.input.flushTickets.complete(pending)
            lock.broadcast()
        }
    }

    /// Reset's work, and a stop's end: what was captured up to the stop goes into the buffers
    /// there are, the rest of the ring and the stage are dropped, the buffers come back.
    func handleResetRequest() {
        guard let pending = lock.withLock({ $0.resetTickets.pending }) else { return }
        // Deliver what was captured up to the stop into the buffers there are.
        if let packetStage {
            drain(ignoringState: true)
            finishPackets(packetStage)
        } else {
            drain(ignoringState: true)
            while true {
                guard stageCount > 0 || fillStage(flush: true), let head = lock.withLock({ $0.fifo.first }) else { break }
                let capacityFrames = head.byteCapacity / format.bytesPerFrame
                let filledFrames = head.filledBytes / format.bytesPerFrame
                let count = min(stageCount, capacityFrames - filledFrames)
                if filledFrames == 0 && count > 0 { head.firstQueueFrame = lock.withLock { $0.input.queueFrames } }
                encodeStage(count: count, into: head)
                head.filledBytes += count * format.bytesPerFrame
                lock.withLock { $0.input.queueFrames += Double(count) }
                if filledFrames + count == capacityFrames { deliverHead(head, resetBatch: true) }
            }
        }
        // Drop the rest of the ring and the stage.
        let write = realtime.pointee.ring.writeIndex.load(ordering: .acquiring)
        realtime.pointee.ring.readIndex.store(write, ordering: .releasing)
        realtime.pointee.gaps.removeAll()
        stageCount = 0
        stageStart = 0
        resetResampler()
        resetTap()
        if let packetStage { restartPackets(packetStage) }
        let remaining: [QueueBuffer] = lock.withLock {
            $0.input.resamplerHasInput = false
            return $0.fifo
        }
        for buffer in remaining { deliverHead(buffer, resetBatch: true) }
        lock.withLock {
            $0.resetTickets.complete(pending)
            lock.broadcast()
        }
    }

    /// A Stop(false) whose capture is delivered ends here (the tails of the resampler and encoder first).
    func finishStopIfDone() {
        let draining = lock.withLock { $0.life.isDrainingCapture }
        guard draining else { return }
        let stopPosition = realtime.pointee.stopPosition.load(ordering: .acquiring)
        let drained = realtime.pointee.ring.readIndex.load(ordering: .relaxed) >= stopPosition && stageCount == 0
            && !(lock.withLock { $0.input.resamplerHasInput })
        let starved = lock.withLock { $0.fifo.isEmpty && $0.callbacksInFlight == 0 && $0.deliveries.isEmpty }
        if !drained && !starved {
            // Flush the resampler's tail once the ring is empty.
            if realtime.pointee.ring.readIndex.load(ordering: .relaxed) >= stopPosition && stageCount == 0,
               !(lock.withLock { $0.fifo.isEmpty }), fillStage(flush: true) {
                drain(ignoringState: true)
            }
            return
        }
        // Compressed: the encoder's last packets go out with the last buffer.
        if let packetStage { finishPackets(packetStage, resetBatch: false) }
        if let head = lock.withLock({ $0.fifo.first }), head.filledBytes > 0 { deliverHead(head) }
        let actions = lock.withLock { $0.life.note(.captureDelivered) }
        guard actions.contains(.resetOnQueueThread) else { return }
        lock.withLock { _ = $0.resetTickets.request() }
        handleResetRequest()
        lock.withLock {
            _ = $0.life.note(.resetFinished)
            lock.broadcast()
        }
        report(actions)
    }
}
