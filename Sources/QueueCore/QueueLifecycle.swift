/// What happens to a queue's lifecycle: an API call, or news from the realtime side, the
/// queue thread or the device.
enum LifecycleEvent: Equatable, Sendable {
    /// AudioQueueStart. `deviceRate`/`converterRate`: the server's rate now and the rate the
    /// queue's converter was made for (a mismatch cannot start). `realtimePaused`: the realtime
    /// side is paused (an output queue paused while playing out after Stop(false)).
    case start(deviceRate: Double, converterRate: Double, realtimePaused: Bool)
    /// AudioQueuePause.
    case pause
    /// AudioQueueStop. `hasQueuedData`: buffers are enqueued or frames decoded (output).
    case stop(immediate: Bool, hasQueuedData: Bool)
    /// The realtime side applied a Stop(true) (`LifecycleAction.halt`).
    case halted
    /// AudioQueueReset.
    case reset
    /// A reset (Reset, Stop(true), the end of an input Stop(false)) has returned the buffers.
    case resetFinished
    /// An output queue's queue thread discarded what was queued (a reset on the queue thread).
    case queueDiscarded
    /// AudioQueueFlush.
    case flush
    /// AudioQueuePrime.
    case prime
    /// A call that only needs a usable queue (AllocateBuffer, SetProperty, ...).
    case use
    /// AudioQueueDeviceGetNearestStartTime: `primed`: frames were primed or buffers enqueued.
    case nearestStartTime(primed: Bool)
    /// A call allowed only while stopped (rename, resize a ring); `what` says which.
    case reconfigure(String)
    /// AudioQueueEnqueueBuffer (and WithParameters).
    case enqueue
    /// Buffers Reset or Stop return were posted to their callbacks, or one of them ran.
    case resetDeliveryPosted, resetDeliveryRan
    /// AudioQueueDispose.
    case dispose(immediate: Bool)
    /// The disposal proper (immediately, or once a pending one has played out).
    case disposeNow
    /// The disposal has detached the device: the queue thread may exit.
    case tornDown
    /// The realtime side played or recorded its first frame.
    case realtimeStarted
    /// The realtime side stopped by itself at the end of a Stop(false) play-out.
    case realtimeFinished
    /// The queue thread looked at the realtime side (after any started/finished news).
    case realtimeObserved
    /// An input queue's Stop(false) has delivered everything captured.
    case captureDelivered
    /// The JACK server went away.
    case deviceGone
    /// The queue thread delivered what it could after the server went away.
    case invalidationDelivered
}

/// What the engine does for an event, in order, under its lock or after it as each case says.
enum LifecycleAction: Equatable, Sendable {
    /// (lock held) A new queue timeline begins at the coming Start: input bookkeeping restarts.
    case prepareTimeline
    /// Wake the queue thread.
    case wakeQueueThread
    /// (lock not held) Get ready for the first cycle: an input queue touches its ring's pages,
    /// an output queue decodes its first periods.
    case prepareToStart
    /// Tell the realtime side to start (asynchronously).
    case sendStart
    /// Tell the realtime side to pause, and wait until it has.
    case sendPause
    /// Output Stop(false): play what is queued, then stop (the producer state changed).
    case beginPlayOut
    /// Input Stop(false): capture ends now (synchronously); what was captured is delivered.
    case beginCaptureDrain
    /// Stop(true): the realtime side stops now (synchronously), then `halted`, the buffers
    /// come back through a reset on the queue thread, and `resetFinished`.
    case halt
    /// Have the queue thread reset the queue (return every buffer), then `resetFinished`.
    case resetOnQueueThread
    /// (lock held) A Stop(false) play-out ended: the next start begins a new timeline.
    case endTimeline
    /// Tell IsRunning listeners.
    case notifyIsRunning(Bool)
    /// Dispose of the queue now (`disposeNow`).
    case disposeNow
    /// Detach the device, stop the queue thread and wait for callbacks (then `tornDown`).
    case tearDown
    /// The queue thread delivers what it can, then `invalidationDelivered`.
    case deliverInvalidation
}

/// The lifecycle of one audio queue as a value: its run state, what IsRunning reports,
/// resets in progress, disposal and invalidation. Every decision about which call is legal
/// in which state, and which error it gets, is made here; the engine holds one behind its
/// lock and carries out the actions `handle` returns.
///
/// Its parts are independent of each other (any run phase may be disposed of or invalidated
/// while resets are in progress); what depends on the run state is inside `RunPhase`.
///
/// Thread safety: a value; the engine guards its copy with its lock.
struct QueueLifecycle: Hashable, Sendable {
    let direction: DeviceDirection
    private(set) var run = RunPhase.stopped(playOutArmed: false)
    private(set) var disposal = DisposalPhase.none
    /// The JACK server went away (kAudioQueueErr_QueueInvalidated).
    private(set) var invalidated = false
    private(set) var resets = ResetCounts()

    init(direction: DeviceDirection) {
        self.direction = direction
    }

    /// Any combination of the parts (tests enumerate them).
    init(direction: DeviceDirection, run: RunPhase, disposal: DisposalPhase, invalidated: Bool, resets: ResetCounts) {
        self.direction = direction
        self.run = run
        self.disposal = disposal
        self.invalidated = invalidated
        self.resets = resets
    }

    /// The run state the API reports.
    var state: QueueRunState { run.state }
    /// kAudioQueueProperty_IsRunning: true between the device's first frame and the stop.
    var isRunning: Bool { run.isRunning }
    /// Dispose ran (or is running): every call fails.
    var disposed: Bool { disposal == .disposed || disposal == .tornDown }
    /// Dispose(false) waits for the queue to play out or deliver what was captured.
    var disposalPending: Bool { disposal == .pending }
    /// The queue thread is to exit (disposal has detached the device).
    var exiting: Bool { disposal == .tornDown }
    /// Resets (Reset, Stop(true), Dispose) in progress.
    var resetDepth: Int { resets.inProgress }
    /// Buffers a reset returned that have not been through their callbacks yet.
    var resetDeliveriesPending: Int { resets.deliveriesPending }

    /// Output Stop(false): once what is queued has played, stop (armed before Start too).
    var playOutPending: Bool {
        switch run {
        case .stopped(let armed): armed
        case .stopping(.playingOut, _): true
        default: false
        }
    }

    /// The realtime side is running or about to (queue time advances; host times mean something).
    var isActive: Bool { state == .running || state == .starting || state == .stopping }

    /// An input queue is delivering what it captured before a Stop(false) completes.
    var isDrainingCapture: Bool {
        if case .stopping(.deliveringCapture, _) = run { true } else { false }
    }

    /// Disposed of, or on the way to it: the queue thread does no more work.
    var isShutDown: Bool { disposed }

    /// Throws the error any call on a disposed, disposing or invalidated queue gets.
    func checkUsable() throws(QueueError) {
        if disposed { throw .invalidParameter("the queue was disposed of") }
        if disposalPending { throw .disposalPending }
        if invalidated { throw .queueInvalidated }
    }

    /// Applies `event`; returns what the engine must do, or throws the error the call gets
    /// (the state is then unchanged).
    mutating func handle(_ event: LifecycleEvent) throws(QueueError) -> [LifecycleAction] {
        switch event {
        case .start(let deviceRate, let converterRate, let realtimePaused):
            return try start(deviceRate: deviceRate, converterRate: converterRate, realtimePaused: realtimePaused)
        case .pause: return try pause()
        case .stop(let immediate, let hasQueuedData):
            return try stop(immediate: immediate, hasQueuedData: hasQueuedData)
        case .halted: return halted()
        case .reset: return try reset()
        case .resetFinished: return resetFinished()
        case .queueDiscarded: return queueDiscarded()
        case .flush, .prime, .use:
            try checkUsable()
            return []
        case .nearestStartTime(let primed): return try nearestStartTime(primed: primed)
        case .reconfigure(let what): return try reconfigure(what)
        case .enqueue: return try enqueue()
        case .resetDeliveryPosted: return resetDeliveryPosted()
        case .resetDeliveryRan: return resetDeliveryRan()
        case .dispose(let immediate): return dispose(immediate: immediate)
        case .disposeNow: return disposeNow()
        case .tornDown: return tornDown()
        case .realtimeStarted: return realtimeStarted()
        case .realtimeFinished: return realtimeFinished()
        case .realtimeObserved: return realtimeObserved()
        case .captureDelivered: return captureDelivered()
        case .deviceGone: return deviceGone()
        case .invalidationDelivered: return invalidationDelivered()
        }
    }

    /// Applies news that no state refuses (from the realtime side, the queue thread, the device).
    mutating func note(_ event: LifecycleEvent) -> [LifecycleAction] {
        (try? handle(event)) ?? []
    }

    // MARK: - Run state: Start, Pause, Stop

    /// `LifecycleEvent.start`: AudioQueueStart.
    private mutating func start(
        deviceRate: Double, converterRate: Double, realtimePaused: Bool
    ) throws(QueueError) -> [LifecycleAction] {
        try checkUsable()
        // The converter, the ring and queue time are the old rate's: it would play at the wrong speed.
        guard deviceRate == converterRate else {
            throw .cannotStart("the JACK server runs at \(Int(deviceRate)) Hz, the queue was made for \(Int(converterRate)) Hz")
        }
        let go: [LifecycleAction] = [.wakeQueueThread, .prepareToStart, .sendStart]
        switch run {
        case .running, .starting:
            return []
        case .stopping:
            // Stopping after a pause: resume, and stop once played out.
            return realtimePaused ? go : []
        case .stopped(let playOutArmed):
            // A Stop(false) asked for before Start plays out what is queued, then stops.
            run = playOutArmed ? .stopping(.playingOut, isRunning: false) : .starting(isRunning: false)
            return [.prepareTimeline] + go
        case .paused(let running):
            run = .starting(isRunning: running)
            return go
        }
    }

    /// `LifecycleEvent.pause`: AudioQueuePause.
    private mutating func pause() throws(QueueError) -> [LifecycleAction] {
        try checkUsable()
        switch run {
        case .running(let running), .starting(let running):
            run = .paused(isRunning: running)
            return [.sendPause]
        case .stopping:
            // An output queue playing out pauses too, and stays stopping: Start resumes it.
            return direction == .output ? [.sendPause] : []
        case .stopped, .paused:
            return []
        }
    }

    /// `LifecycleEvent.stop`: AudioQueueStop.
    private mutating func stop(immediate: Bool, hasQueuedData: Bool) throws(QueueError) -> [LifecycleAction] {
        try checkUsable()
        if !immediate, let actions = beginStopping(hasQueuedData: hasQueuedData) { return actions }
        resets.inProgress += 1
        return [.halt]
    }

    /// `LifecycleEvent.halted`: the realtime side applied a Stop(true).
    private mutating func halted() -> [LifecycleAction] {
        let wasRunning = isRunning
        run = .stopped(playOutArmed: false)
        return wasRunning ? [.notifyIsRunning(false)] : []
    }

    // MARK: - Resets

    /// `LifecycleEvent.reset`: AudioQueueReset.
    private mutating func reset() throws(QueueError) -> [LifecycleAction] {
        try checkUsable()
        resets.inProgress += 1
        return [.resetOnQueueThread]
    }

    /// `LifecycleEvent.resetFinished`: a reset has returned the buffers.
    private mutating func resetFinished() -> [LifecycleAction] {
        resets.inProgress = max(0, resets.inProgress - 1)
        return []
    }

    /// `LifecycleEvent.queueDiscarded`: an output queue's queue thread discarded what was queued.
    private mutating func queueDiscarded() -> [LifecycleAction] {
        switch run {
        case .stopped(true): run = .stopped(playOutArmed: false)
        case .stopping(.playingOut, let running): run = .stopping(.discarded, isRunning: running)
        default: break
        }
        return []
    }

    /// `LifecycleEvent.resetDeliveryPosted`: a buffer a reset returned was posted to its callback.
    private mutating func resetDeliveryPosted() -> [LifecycleAction] {
        resets.deliveriesPending += 1
        return []
    }

    /// `LifecycleEvent.resetDeliveryRan`: the callback of a buffer a reset returned ran.
    private mutating func resetDeliveryRan() -> [LifecycleAction] {
        resets.deliveriesPending = max(0, resets.deliveriesPending - 1)
        return []
    }

    // MARK: - Calls that only check the state

    /// `LifecycleEvent.nearestStartTime`: AudioQueueDeviceGetNearestStartTime.
    private func nearestStartTime(primed: Bool) throws(QueueError) -> [LifecycleAction] {
        try checkUsable()
        guard state != .stopped || primed else { throw .invalidRunState("the queue is neither running nor primed") }
        return []
    }

    /// `LifecycleEvent.reconfigure`: a call allowed only while stopped; `what` says which.
    private func reconfigure(_ what: String) throws(QueueError) -> [LifecycleAction] {
        try checkUsable()
        guard state == .stopped else { throw .invalidRunState(what) }
        return []
    }

    /// `LifecycleEvent.enqueue`: AudioQueueEnqueueBuffer (and WithParameters).
    private func enqueue() throws(QueueError) -> [LifecycleAction] {
        if disposed { throw .invalidParameter("the queue was disposed of") }
        if invalidated { throw .queueInvalidated }
        // An input queue being stopped with Stop(false) still takes buffers for what it captured.
        if resets != ResetCounts() || disposalPending || (state == .stopping && direction == .output) {
            throw .enqueueDuringReset
        }
        return []
    }

    // MARK: - Disposal

    /// `LifecycleEvent.dispose`: AudioQueueDispose.
    private mutating func dispose(immediate: Bool) -> [LifecycleAction] {
        if immediate { return disposeNow() }
        guard disposal == .none else { return [] }
        // Output: once what is enqueued has played. Input: once what was captured has been
        // delivered to the enqueued buffers ("until all enqueued buffers are processed").
        guard isActive && !invalidated else { return disposeNow() }
        disposal = .pending
        return stopForDisposal() + [.wakeQueueThread]
    }

    /// `LifecycleEvent.disposeNow`: the disposal proper.
    private mutating func disposeNow() -> [LifecycleAction] {
        if disposed { return [] }
        disposal = .disposed
        resets.inProgress += 1
        return [.tearDown]
    }

    /// `LifecycleEvent.tornDown`: the disposal has detached the device (the queue is disposed
    /// of, whatever came before).
    private mutating func tornDown() -> [LifecycleAction] {
        // Not reported: no listener runs after Dispose.
        disposal = .tornDown
        run = .stopped(playOutArmed: playOutPending)
        return []
    }

    // MARK: - News from the realtime side, the queue thread and the device

    /// `LifecycleEvent.realtimeStarted`: the realtime side played or recorded its first frame.
    private mutating func realtimeStarted() -> [LifecycleAction] {
        if case .starting(let running) = run { run = .running(isRunning: running) }
        // A start the queue thread sees only after a Stop(true) is not reported, nor one
        // seen while disposing (no listener runs once Dispose has begun).
        guard !isRunning && state != .stopped && !disposed else { return [] }
        run = run.reporting(true)
        return [.notifyIsRunning(true)]
    }

    /// `LifecycleEvent.realtimeFinished`: the realtime side stopped at the end of a Stop(false) play-out.
    private mutating func realtimeFinished() -> [LifecycleAction] {
        guard state == .stopping else { return [] }
        let wasRunning = isRunning
        run = .stopped(playOutArmed: false)
        return wasRunning ? [.endTimeline, .notifyIsRunning(false)] : [.endTimeline]
    }

    /// `LifecycleEvent.realtimeObserved`: the queue thread looked at the realtime side.
    private func realtimeObserved() -> [LifecycleAction] {
        disposalPending && state == .stopped ? [.disposeNow] : []
    }

    /// `LifecycleEvent.captureDelivered`: an input queue's Stop(false) has delivered everything captured.
    private mutating func captureDelivered() -> [LifecycleAction] {
        guard isDrainingCapture else { return [] }
        let wasRunning = isRunning
        run = .stopped(playOutArmed: false)
        resets.inProgress += 1
        return [.resetOnQueueThread] + (wasRunning ? [.notifyIsRunning(false)] : [])
    }

    /// `LifecycleEvent.deviceGone`: the JACK server went away.
    private mutating func deviceGone() -> [LifecycleAction] {
        guard !invalidated else { return [] }
        invalidated = true
        return [.deliverInvalidation]
    }

    /// `LifecycleEvent.invalidationDelivered`: the queue thread delivered what it could after
    /// the server went away.
    private mutating func invalidationDelivered() -> [LifecycleAction] {
        let wasRunning = isRunning
        run = .stopped(playOutArmed: playOutPending)
        return wasRunning ? [.notifyIsRunning(false)] : []
    }

    // MARK: - Stopping

    /// Stop(false): the asynchronous stop, or nil where it is a Stop(true).
    private mutating func beginStopping(hasQueuedData: Bool) -> [LifecycleAction]? {
        switch (direction, run) {
        case (.output, .running(let running)), (.output, .starting(let running)), (.output, .paused(let running)):
            run = .stopping(.playingOut, isRunning: running)
            return [.beginPlayOut]
        case (.output, .stopping):
            return []
        case (.output, .stopped):
            // Not started yet (a callback at the end of the data while priming): play what
            // is queued once started, then stop.
            guard hasQueuedData else { return nil }
            run = .stopped(playOutArmed: true)
            return [.beginPlayOut]
        case (.input, .stopped):
            return []
        case (.input, .stopping):
            // A second Stop(false) stops at once.
            return nil
        case (.input, .running(let running)), (.input, .starting(let running)), (.input, .paused(let running)):
            run = .stopping(.deliveringCapture, isRunning: running)
            return [.beginCaptureDrain]
        }
    }

    /// Dispose(false) of a busy queue: the Stop(false) it implies (a pending disposal refuses
    /// the API's own Stop).
    private mutating func stopForDisposal() -> [LifecycleAction] {
        switch (direction, run) {
        case (.output, .running(let running)), (.output, .starting(let running)):
            run = .stopping(.playingOut, isRunning: running)
            return [.beginPlayOut]
        case (.input, .running(let running)), (.input, .starting(let running)):
            run = .stopping(.deliveringCapture, isRunning: running)
            return [.beginCaptureDrain]
        default:
            return []
        }
    }
}
