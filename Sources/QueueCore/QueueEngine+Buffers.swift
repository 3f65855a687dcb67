import Glibc

// A queue's buffers: registering them, and handing them (and listener calls) to user code.

extension QueueEngine {
    // MARK: Buffers

    /// Registers a buffer the API layer allocated.
    public func addBuffer(_ buffer: QueueBuffer) throws {
        try lock.withLock {
            try $0.life.checkUsable()
            $0.buffers[buffer.handle] = buffer
        }
    }

    /// The buffer with `handle`, if it belongs to this queue.
    public func buffer(for handle: UnsafeMutableRawPointer) -> QueueBuffer? {
        lock.withLock { $0.buffers[handle] }
    }

    /// Forgets a buffer before the API layer frees it; throws `.bufferInQueue` while enqueued.
    public func removeBuffer(_ handle: UnsafeMutableRawPointer) throws {
        try lock.withLock { state in
            guard let buffer = state.buffers[handle] else { throw QueueError.invalidBuffer }
            guard buffer.ownership == .application else { throw QueueError.bufferInQueue }
            // A buffer being handed to its callback is the callback's to free, no other thread's.
            guard buffer.callbacksHolding == 0 || isInCallback(state) else { throw QueueError.bufferInQueue }
            state.buffers[handle] = nil
        }
    }

    /// Checks that a buffer may be enqueued now (`state`: the lock's).
    func checkEnqueue(_ handle: UnsafeMutableRawPointer, _ state: inout EngineState) throws -> QueueBuffer {
        _ = try state.life.handle(.enqueue)
        guard let buffer = state.buffers[handle] else { throw QueueError.invalidBuffer }
        guard buffer.ownership == .application else { throw QueueError.bufferEnqueuedTwice }
        return buffer
    }

    // MARK: Delivery of callbacks and listeners

    /// Runs `work` (user code) through the callback executor, unless the queue is
    /// disposed of by then. `resetBatch` marks buffers Reset/Stop return: enqueueing
    /// is refused until they have all been delivered.
    func deliver(resetBatch: Bool = false, _ work: @escaping @Sendable () -> Void) {
        lock.withLock { state in
            state.callbacksInFlight += 1
            if resetBatch { _ = state.life.note(.resetDeliveryPosted) }
        }
        producerStateChanged()
        let job: @Sendable () -> Void = { [self] in
            let proceed: Bool = lock.withLock { state in
                guard !state.disposed else { return false }
                state.callbacksRunning += 1
                state.callbackThreads.append(pthread_self())
                return true
            }
            if proceed { work() }
            lock.withLock { state in
                if proceed {
                    state.callbacksRunning -= 1
                    if let i = state.callbackThreads.firstIndex(where: { pthread_equal($0, pthread_self()) != 0 }) {
                        state.callbackThreads.remove(at: i)
                    }
                }
                state.callbacksInFlight -= 1
                if resetBatch { _ = state.life.note(.resetDeliveryRan) }
                lock.broadcast()
            }
            producerStateChanged()
            wake.post()
        }
        switch executor {
        case .queueThread:
            if onQueueThread {
                job()
            } else {
                lock.withLock { $0.deliveries.append(job) }
                wake.post()
            }
        case .custom(let post):
            post(job)
        }
    }

    /// Hands `buffer` back to user code (`body` calls the callback) through the executor. The
    /// buffer is the application's once `body` starts, but until `body` returns only the
    /// callback may free it: FreeBuffer from another thread gets kAudioQueueErr_BufferInQueue.
    func deliverBuffer(_ buffer: QueueBuffer, resetBatch: Bool, _ body: @escaping @Sendable () -> Void) {
        deliver(resetBatch: resetBatch) { [self] in
            lock.withLock {
                buffer.ownership = .application
                buffer.callbacksHolding += 1
            }
            body()
            lock.withLock { buffer.callbacksHolding -= 1 }
        }
    }

    /// True if the calling thread is running one of this queue's callbacks (`state`: the lock's).
    func isInCallback(_ state: EngineState) -> Bool {
        state.isRunningCallbackOnThisThread || onQueueThread
    }

    /// Runs pending queue-thread deliveries (queue thread only, lock not held).
    func runDeliveries() {
        while true {
            let next: (@Sendable () -> Void)? = lock.withLock { $0.deliveries.isEmpty ? nil : $0.deliveries.removeFirst() }
            guard let next else { return }
            next()
        }
    }

    /// Has the queue thread do a job a control call asked for: `request` (lock held) files it
    /// and returns its ticket, `isDone(ticket)` (lock held) says it was done. Runs the queue's
    /// work here when called on the queue thread. Returns false if the queue thread did not do
    /// it within `controlTimeout` (a callback holds it); otherwise waits for the callbacks it posted.
    func runOnQueueThread(request: (inout EngineState) -> Int, isDone: (inout EngineState, Int) -> Bool) -> Bool {
        if onQueueThread {
            _ = lock.withLock { request(&$0) }
            serviceQueue()
            return true
        }
        if runsInline {
            // No thread to wait for: the caller does the queue thread's work, callbacks included.
            asQueueThread {
                _ = lock.withLock { request(&$0) }
                serviceQueue()
                runDeliveries()
            }
            return true
        }
        let ticket = lock.withLock { request(&$0) }
        wake.post()
        let timeout = controlTimeout
        let done = lock.waitUntil(timeout: timeout) { isDone(&$0, ticket) || $0.life.isShutDown }
        if done { waitForDeliveries(timeout: timeout) }
        return done
    }

    /// Waits until every queue-thread delivery posted so far has run (not from the queue thread).
    func waitForDeliveries(timeout: Double = 10) {
        guard case .queueThread = executor, !onQueueThread else { return }
        if runsInline { return asQueueThread { runDeliveries() } }
        lock.waitUntil(timeout: timeout) { $0.deliveries.isEmpty && $0.callbacksRunning == 0 || $0.disposed }
    }
}
