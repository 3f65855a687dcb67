import Synchronization

// Start, pause, stop, reset and flush, and what a queue reports of its run (state, losses, meters).

extension QueueEngine {
    // MARK: Start, pause, stop

    /// Starts (or resumes) at device frame `deviceFrame`, or as soon as possible.
    public func start(atDeviceFrame deviceFrame: Int64?) throws {
        let actions: [LifecycleAction] = try lock.withLock { state in
            // A server that changed its rate since cannot start (the lifecycle says so).
            let paused = withPublication { $0.mode.load(ordering: .relaxed) } == RealtimeMode.paused.rawValue
            let actions = try state.life.handle(.start(deviceRate: device.sampleRate, converterRate: state.converterRate,
                                                 realtimePaused: paused))
            if actions.contains(.prepareTimeline) { prepareTimeline(&state) }
            return actions
        }
        for action in actions {
            switch action {
            case .wakeQueueThread: wake.post()
            case .prepareToStart: perform(.prepareToStart)
            case .sendStart: send(.start, frame: deviceFrame ?? .min, synchronous: false)
            default: break
            }
        }
    }

    /// Stop. Output, immediate: now, returning queued buffers through the callback; otherwise
    /// every frame enqueued plays, then IsRunning goes to 0. Input, immediate: capture ends now,
    /// the partly filled buffer is delivered with what was captured and other queued buffers
    /// come back empty; otherwise capture ends now, everything captured is delivered, then
    /// IsRunning goes to 0. Throws `.queueThreadTimedOut` if the queue thread is held (by a
    /// callback that blocks) for `controlTimeout`.
    public func stop(immediate: Bool) throws {
        let actions = try lock.withLock {
            try $0.life.handle(.stop(immediate: immediate, hasQueuedData: !$0.fifo.isEmpty || realtimeLink.bufferedFrames > 0))
        }
        for action in actions {
            if action == .halt { try halt() } else { perform(action) }
        }
    }

    /// Stop(true): the realtime side stops now; a start it made before that is reported first
    /// (IsRunning 1, then 0); the queue thread returns the buffers, and the timeline ends.
    private func halt() throws {
        send(.stop, synchronous: true)
        observeRealtime()
        let reports = lock.withLock { $0.life.note(.halted) }
        let finished = resetOnQueueThread()
        lock.withLock {
            _ = $0.life.note(.resetFinished)
            $0.primedFrames = 0
            endTimeline(&$0)
            lock.broadcast()
        }
        report(reports)
        if !finished { throw QueueError.queueThreadTimedOut("Stop", controlTimeout) }
    }

    /// Reset: drops what is queued and decoded (output) or captured and not yet in a buffer
    /// (input), returning every queued buffer through the callback once (an input queue's
    /// partly filled one with its data).
    public func reset() throws {
        _ = try lock.withLock { try $0.life.handle(.reset) }
        let finished = resetOnQueueThread()
        lock.withLock {
            _ = $0.life.note(.resetFinished)
            $0.primedFrames = 0
            lock.broadcast()
        }
        if !finished { throw QueueError.queueThreadTimedOut("Reset", controlTimeout) }
    }

    /// Has the queue thread reset the queue; false if it did not within `controlTimeout`.
    func resetOnQueueThread() -> Bool {
        runOnQueueThread(request: { $0.resetTickets.request() }, isDone: { $0.resetTickets.isDone($1) })
    }

    /// Flush. Output: what is enqueued now plays to its last frame, the resampler's tail
    /// included, before anything enqueued later; returns at once. Input: everything captured up
    /// to now reaches the enqueued buffers, the partly filled one delivered with what it holds;
    /// returns once those callbacks have run (unless called from one), or throws
    /// `.queueThreadTimedOut` after `controlTimeout`.
    public func flush() throws {
        _ = try lock.withLock { try $0.life.handle(.flush) }
        try flushQueued()
    }

    /// Pauses; queue time and buffers are kept. An output queue playing out after Stop(false)
    /// pauses too, and stays stopping: Start resumes it, and it stops once played out.
    public func pause() throws {
        let actions = try lock.withLock { try $0.life.handle(.pause) }
        if actions.contains(.sendPause) { send(.pause, synchronous: true) }
    }

    /// True between the device's first frame and the stop.
    public var isRunningValue: Bool { lock.withLock { $0.isRunning } }

    /// The run state.
    public var state: QueueRunState { lock.withLock { $0.runState } }

    /// Frames lost so far (device rate): played as silence because the decode ring ran dry
    /// (output), or captured while the capture ring was full (input).
    public var lostFrames: Int { withPublication { $0.lostFrames.load(ordering: .relaxed) } }

    /// Turns level metering on or off.
    public var meteringEnabled: Bool {
        get { realtimeLink.withMeters { $0.enabled.load(ordering: .relaxed) } }
        set {
            realtimeLink.withMeters { meters in
                if newValue && !meters.enabled.load(ordering: .relaxed) { meters.clear() }
                meters.enabled.store(newValue, ordering: .relaxed)
            }
        }
    }

    /// The last meter window's (RMS, peak) per channel, linear.
    public func levels() -> [(average: Float, peak: Float)] {
        realtimeLink.withMeters { meters in (0..<format.channelCount).map { meters.level($0) } }
    }

    /// Counts discontinuities (xruns, lost recorded frames, rate changes) so far.
    public var discontinuityCount: Int { lock.withLock { $0.discontinuities } }
}
