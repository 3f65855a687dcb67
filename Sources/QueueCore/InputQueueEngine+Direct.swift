import Glibc
import Synchronization

// Direct capture, the queue thread's side (issue #29; the realtime side: Realtime/DirectCapture.swift).
// On the plain path the queue thread, once it has drained the ring, lends the head buffer to the
// realtime side, which writes the ports straight into it and gives it back full, or before a
// command, a jump in frame time, a start offset or a gap. While it is lent the queue thread
// touches neither the head nor the ring; it takes the buffer back with what it holds and carries
// on as if it had copied those frames from the ring.
extension InputQueueEngine {
    /// Lends the head buffer to the realtime side if the plain path allows it: the queue is
    /// running, the ring is drained, no gap is due, no stage or tap, nothing being reset or flushed.
    func lendHeadIfPlain() {
        guard capturesDirectly, lentHead == nil, stageCount == 0, !hasTap else { return }
        let r = realtime
        // Read before looking for gaps: the lend is refused if one is recorded after this.
        let gapsSeen = r.pointee.gapsRecorded.load(ordering: .acquiring)
        guard r.pointee.gaps.peek() == nil else { return }
        let position = r.pointee.ring.readIndex.load(ordering: .relaxed)
        guard r.pointee.ring.writeIndex.load(ordering: .acquiring) == position else { return }
        // The realtime side must not fault the buffer's pages in (large buffers are pages not yet
        // touched, BufferMemory): the first time, here. Enqueued, it cannot be freed meanwhile.
        if let candidate = lock.withLock({ $0.fifo.first }), !candidate.pagesFaultedIn {
            faultIn(candidate)
            candidate.pagesFaultedIn = true
        }
        // Under the lock: a stop, pause or reset decided after this check sends its command after
        // the lend, and the realtime side gives the buffer back before applying it.
        lock.withLock { state in
            guard state.runState == .running, state.resetTickets.isIdle, state.input.flushTickets.pending == nil,
                  let head = state.fifo.first else { return }
            let capacity = head.byteCapacity / format.bytesPerFrame
            let filled = head.filledBytes / format.bytesPerFrame
            guard filled < capacity, head.pagesFaultedIn, r.pointee.lendState.load(ordering: .relaxed) == LendCode.idle else { return }
            if filled == 0 { head.firstQueueFrame = state.input.queueFrames }
            r.pointee.lent = LentBuffer(planes: head.data.assumingMemoryBound(to: Float.self), planeStride: capacity,
                                        capacity: capacity, filled: filled, ringPosition: position, gapsSeen: gapsSeen)
            r.pointee.lendState.store(LendCode.lent, ordering: .releasing)
            lentHead = head
            lentFromFrames = filled
        }
    }

    /// Faults a buffer's data pages in without changing what it holds: MADV_POPULATE_WRITE
    /// (Linux 5.14), else the frames not yet filled are written with zeros, plane by plane.
    private func faultIn(_ buffer: QueueBuffer) {
        let page = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
        let start = Int(bitPattern: buffer.data) & ~(page - 1)
        let end = (Int(bitPattern: buffer.data) + buffer.byteCapacity + page - 1) & ~(page - 1)
        if let base = UnsafeMutableRawPointer(bitPattern: start), madvise(base, end - start, MADV_POPULATE_WRITE) == 0 { return }
        let capacity = buffer.byteCapacity / format.bytesPerFrame
        let filled = buffer.filledBytes / format.bytesPerFrame
        let planes = buffer.data.assumingMemoryBound(to: Float.self)
        for c in 0..<format.channelCount { (planes + c * capacity + filled).update(repeating: 0, count: capacity - filled) }
    }

    /// At the start of a pass: a Reset, Flush, stop or pause needs the head buffer back now;
    /// otherwise it is taken if the realtime side gave it back.
    func collectLentHeadIfDue() {
        let needsHead = lock.withLock {
            $0.runState != .running || $0.resetTickets.pending != nil || $0.input.flushTickets.pending != nil
        }
        collectLentHead(reclaiming: needsHead)
    }

    /// Takes the lent head buffer back if the realtime side gave it back (with `reclaiming`,
    /// asks for it first, synchronously: it works when no cycle runs too) and counts what it
    /// captured into it, delivering it if full. True if no buffer is lent now.
    @discardableResult
    func collectLentHead(reclaiming: Bool) -> Bool {
        guard let head = lentHead else { return true }
        let r = realtime
        if reclaiming && r.pointee.lendState.load(ordering: .acquiring) == LendCode.lent {
            send(.reclaim, synchronous: true)
        }
        guard r.pointee.lendState.load(ordering: .acquiring) == LendCode.returned else { return false }
        let filled = r.pointee.lent.filled
        let capacity = r.pointee.lent.capacity
        r.pointee.lendState.store(LendCode.idle, ordering: .relaxed)
        lentHead = nil
        let added = filled - lentFromFrames
        framesCapturedDirectly += added
        head.filledBytes += added * format.bytesPerFrame
        lock.withLock { $0.input.queueFrames += Double(added) }
        if filled == capacity { deliverHead(head) }
        return true
    }
}
