// A ManualDriver's inline mode: the queues' work runs on the caller's thread, between cycles.

/// Who does an audio queue's work (conversion, callbacks, listeners) on a ManualDriver.
public enum QueueWork: Sendable {
    /// A queue thread per queue, as on JACK.
    case threads
    /// No queue thread: `ManualDriver.runQueueWork()` does it, and so do the driver's cycles
    /// (before and after each) and the control calls that wait for it.
    case inline
}

/// A queue whose work runs inline, held weakly: a queue disposed of and released leaves the list.
struct WeakQueue {
    weak var engine: QueueEngine?
}

extension ManualDriver {
    /// Registers a queue made in inline mode (its engine calls this instead of starting a thread).
    func adopt(_ engine: QueueEngine) {
        inlineQueues.withLock { queues in
            queues.removeAll { $0.engine == nil }
            queues.append(WeakQueue(engine: engine))
        }
    }

    /// Does every inline queue's pending work now, on this thread, until none has any left:
    /// what the realtime side reported, conversion, returned buffers, callbacks and listeners
    /// (a callback that enqueues wakes its queue, whose work then runs again). Nothing in
    /// `.threads` mode, where the queue threads do it.
    public func runQueueWork() {
        guard queueWork == .inline else { return }
        let queues = inlineQueues.withLock { $0.compactMap(\.engine) }
        // Again while one queue's work woke another (a callback enqueueing on a second queue).
        for _ in 0..<1000 {
            for engine in queues { engine.runInlineWork() }
            if !queues.contains(where: { $0.wake.isPosted && !$0.isShutDownNow }) { return }
        }
    }

    /// Cycles wait for the queue threads when waiting is allowed and there are threads.
    var cyclesWait: Bool { allowsWaiting && queueWork == .threads }

    /// One step of `run`: the queues' work, then a cycle.
    func runQueueWorkThenCycle() {
        runQueueWork()
        runCycleNow()
    }
}
