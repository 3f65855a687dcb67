import Glibc
import Synchronization

// The queue thread's work run inline, by the caller (`ManualDriver(queueWork: .inline)`):
// deterministic tests step cycles and callbacks without a thread of the queue's own.

extension QueueEngine {
    /// True on the thread doing the queue's work: its queue thread, or the caller running it inline.
    var onQueueThread: Bool {
        if let thread { return thread.isCurrent }
        let worker = inlineWorker.load(ordering: .relaxed)
        return worker != 0 && pthread_equal(pthread_t(worker), pthread_self()) != 0
    }

    /// Runs `body` as the queue thread (inline mode): callbacks it posts run in it, as they
    /// would on the queue thread.
    func asQueueThread<T>(_ body: () -> T) -> T {
        let previous = inlineWorker.exchange(UInt(pthread_self()), ordering: .relaxed)
        defer { inlineWorker.store(previous, ordering: .relaxed) }
        return body()
    }

    /// Disposed of, or on the way to it (takes the lock).
    var isShutDownNow: Bool { lock.withLock { $0.life.isShutDown } }

    /// Does what the queue thread would do now: one pass, then another for as long as someone
    /// woke it meanwhile (the realtime side, an enqueue, a callback that finished). Inline mode only.
    func runInlineWork() {
        guard runsInline else { return }
        asQueueThread {
            // Bounded, as a queue thread that never sleeps would be a bug this must not hide in a hang.
            for _ in 0..<10_000 {
                wake.drain()
                guard queueThreadPass() else {
                    runDeliveries()
                    return
                }
                if !wake.tryWait() { return }
            }
        }
    }
}
