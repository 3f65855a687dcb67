import Glibc
import Synchronization

/// The run state a queue reports through its API.
public enum QueueRunState: Sendable, Equatable {
    case stopped
    /// Started; the device has not played or recorded its first frame yet.
    case starting
    case running
    case paused
    /// Stop(false): playing out (output) or delivering what was captured (input).
    case stopping
}

/// What every audio queue shares: the device client, the buffers, the queue
/// thread, the run state, callbacks and listeners, and disposal. The lifecycle's decisions
/// (which call is legal when, which error it gets, what follows) are `QueueLifecycle`'s; the
/// engine carries out the actions it returns, and each direction (`OutputQueueEngine`,
/// `InputQueueEngine`) those only it has work for (`perform(_:)`).
///
/// Thread safety: every public method may be called from any thread, including
/// from the queue's own callbacks. State is guarded by `lock`; user code
/// (callbacks, listeners) never runs with the lock held.
public class QueueEngine: @unchecked Sendable {
    public let direction: DeviceDirection
    /// The queue's format; an input queue asked for rate 0 gets the device's rate here.
    public let format: StreamFormat
    /// The device client: the one the queue was opened with, or the offline clock (`DeviceSwitch`).
    public let device: AudioDevice
    let deviceSwitch: DeviceSwitch
    let executor: CallbackExecutor
    let lock = ConditionLock()
    /// Held by each connection pass with the bookkeeping of what it connected (`currentTarget`,
    /// `connectionTarget`, `connectedPorts`): passes asked for from several threads take turns,
    /// and what the queue reports is what the last one connected. Taken before `lock`.
    let connectionLock = ConditionLock()
    /// Wakes the queue thread (posted by the realtime side and by API calls).
    let wake = Semaphore()
    /// Wakes a realtime entry that waits (freewheel, ManualDriver).
    let realtimeWake = Semaphore()
    var thread: QueueThread?

    /// Seconds Reset, Stop(true) and an input queue's Flush wait for the queue thread (held by a
    /// callback that blocks) before they fail with `.queueThreadTimedOut`.
    public var controlTimeout: Double {
        get { lock.withLock { _controlTimeout } }
        set { lock.withLock { _controlTimeout = max(0, newValue) } }
    }
    private var _controlTimeout = 10.0

    /// Listener dispatch, set by the API layer; runs through the callback executor.
    public var eventSink: (@Sendable (QueueEvent) -> Void)? {
        get { lock.withLock { _eventSink } }
        set { lock.withLock { _eventSink = newValue } }
    }
    private var _eventSink: (@Sendable (QueueEvent) -> Void)?

    /// The direction's realtime state (publication, command ring, meters).
    let realtimeLink: any RealtimeLink

    // Guarded by `lock`.
    /// Run state, IsRunning, resets, disposal and invalidation: which call is legal when, and
    /// what it makes the engine do, is decided there.
    var life: QueueLifecycle
    /// Resets the queue thread is asked to carry out.
    var resetTickets = QueueTickets()
    var buffers: [UnsafeMutableRawPointer: QueueBuffer] = [:]
    var fifo: [QueueBuffer] = []
    var deliveries: [@Sendable () -> Void] = []
    var callbacksInFlight = 0
    var callbacksRunning = 0
    var callbackThreads: [pthread_t] = []
    var commandSequence = 0
    var seenStartCount = 0
    var seenFinishCount = 0
    var discontinuities = 0
    var currentTarget: String
    /// What the ports are connected to when it is not `currentTarget` itself.
    var connectionTarget: String?
    var connectedPorts: [String] = []
    var primedFrames = 0
    var clientNameStorage: String

    /// The run state (lock held).
    var runState: QueueRunState { life.state }
    /// IsRunning (lock held).
    var isRunning: Bool { life.isRunning }
    /// Dispose has run or is running (lock held).
    var disposed: Bool { life.disposed }
    /// The JACK server went away (lock held).
    var invalidated: Bool { life.invalidated }

    /// The device rate the queue's converter and ring were made for (guarded by `lock`).
    var converterRate: Double {
        didSet { converterMismatch = false }
    }
    /// The server changed its rate away from `converterRate` (guarded by `lock`).
    var converterMismatch = false

    /// True once the server runs at a rate the queue's converter was not made for
    /// (kAudioQueueProperty_ConverterError reports it; Start fails with `.cannotStart`).
    public var converterFailed: Bool { lock.withLock { converterMismatch } }

    /// Where the device came from, kept as long as the queue: a provider made for one queue
    /// (`AudioQueueDevices.offline(...)` passed inline) would otherwise go with the call, and its
    /// device with it.
    private let provider: DeviceProvider

    /// Queue rate / device rate.
    public var rateRatio: Double { format.sampleRate / device.sampleRate }

    init(direction: DeviceDirection, format: StreamFormat, provider: DeviceProvider, clientName: String,
         executor: CallbackExecutor, realtimeLink: any RealtimeLink) throws {
        self.provider = provider
        self.direction = direction
        self.realtimeLink = realtimeLink
        life = QueueLifecycle(direction: direction)
        self.executor = executor
        let layout = PortLayout.forQueue(direction: direction, channelCount: format.channelCount)
        deviceSwitch = DeviceSwitch(try provider.openDevice(name: clientName, direction: direction, layout: layout))
        device = deviceSwitch
        var resolved = format
        if resolved.sampleRate == 0 { resolved.sampleRate = device.sampleRate }
        self.format = resolved
        converterRate = device.sampleRate
        currentTarget = provider.defaultTarget(for: direction)
        clientNameStorage = device.clientName
    }

    deinit {
        // Realtime memory goes once no cycle can reach it (the queue thread is gone too).
        device.setProcessor(nil)
        realtimeLink.release()
    }

    /// Connects to the default target and starts the queue thread; called once the subclass is ready.
    func finishSetup(threadName: String) {
        connectionLock.withLock {
            if !currentTarget.isEmpty {
                connectedPorts = (try? device.connect(to: currentTarget)) ?? []
                if connectedPorts.isEmpty { currentTarget = "" }
            }
        }
        device.setEventHandler { [weak self] event in self?.handleDeviceEvent(event) }
        thread = QueueThread(name: threadName) { [self] in self.threadMain() }
    }

    // MARK: What each direction does

    /// The queue thread's work between waits (conversion, delivery). Called without the lock.
    func serviceQueue() {}
    /// Carries out the lifecycle actions that only one direction has work for: prepareTimeline
    /// and endTimeline (lock held), prepareToStart, beginPlayOut, beginCaptureDrain and
    /// deliverInvalidation (lock not held). Every other action the engine carries out itself.
    func perform(_ action: LifecycleAction) {}
    /// Flush's work, once the queue is known to be usable (lock not held).
    func flushQueued() throws {}

    /// The realtime publication.
    func withPublication<T>(_ body: (borrowing RealtimePublication) -> T) -> T { realtimeLink.withPublication(body) }
    /// The sequence the realtime side applied.
    func appliedSequence() -> Int { withPublication { $0.appliedSequence.load(ordering: .acquiring) } }

    // MARK: State checks

    /// Throws the error any call on a disposed, disposing or invalidated queue gets (lock held).
    func checkUsable() throws {
        try life.checkUsable()
    }

    /// Tells IsRunning listeners what `actions` report (lock not held).
    func report(_ actions: [LifecycleAction]) {
        for case .notifyIsRunning(let running) in actions { notify(.isRunningChanged(running)) }
    }

    // MARK: Commands to the realtime side

    /// Sends a command and, if `synchronous`, waits until the realtime side applied it.
    func send(_ kind: RealtimeCommand.Kind, frame: Int64 = .min, position: Int = 0, synchronous: Bool) {
        let sequence: Int = lock.withLock {
            commandSequence += 1
            let command = RealtimeCommand(kind, frame: frame, position: position, sequence: commandSequence)
            while !realtimeLink.push(command) {
                // The command ring is full only if the realtime side is not running: apply here.
                lock.unlock()
                device.synchronize(isApplied: { false }, applyDirectly: { self.realtimeLink.applyCommandsDirectly() })
                lock.lock()
            }
            return commandSequence
        }
        realtimeWake.post()
        if synchronous {
            device.synchronize(isApplied: { self.appliedSequence() >= sequence },
                               applyDirectly: { self.realtimeLink.applyCommandsDirectly() })
        }
    }

    // MARK: Buffers

    /// Registers a buffer the API layer allocated.
    public func addBuffer(_ buffer: QueueBuffer) throws {
        try lock.withLock {
            try checkUsable()
            buffers[buffer.handle] = buffer
        }
    }

    /// The buffer with `handle`, if it belongs to this queue.
    public func buffer(for handle: UnsafeMutableRawPointer) -> QueueBuffer? {
        lock.withLock { buffers[handle] }
    }

    /// Forgets a buffer before the API layer frees it; throws `.bufferInQueue` while enqueued.
    public func removeBuffer(_ handle: UnsafeMutableRawPointer) throws {
        try lock.withLock {
            guard let buffer = buffers[handle] else { throw QueueError.invalidBuffer }
            guard buffer.ownership == .application else { throw QueueError.bufferInQueue }
            // A buffer being handed to its callback is the callback's to free, no other thread's.
            guard buffer.callbacksHolding == 0 || isInCallback else { throw QueueError.bufferInQueue }
            buffers[handle] = nil
        }
    }

    /// Checks that a buffer may be enqueued now (lock held).
    func checkEnqueue(_ handle: UnsafeMutableRawPointer) throws -> QueueBuffer {
        _ = try life.handle(.enqueue)
        guard let buffer = buffers[handle] else { throw QueueError.invalidBuffer }
        guard buffer.ownership == .application else { throw QueueError.bufferInQueue }
        return buffer
    }

    // MARK: Delivery of callbacks and listeners

    /// Runs `work` (user code) through the callback executor, unless the queue is
    /// disposed of by then. `resetBatch` marks buffers Reset/Stop return: enqueueing
    /// is refused until they have all been delivered.
    func deliver(resetBatch: Bool = false, _ work: @escaping @Sendable () -> Void) {
        lock.withLock {
            callbacksInFlight += 1
            if resetBatch { _ = life.note(.resetDeliveryPosted) }
        }
        producerStateChanged()
        let job: @Sendable () -> Void = { [self] in
            let proceed: Bool = lock.withLock {
                guard !disposed else { return false }
                callbacksRunning += 1
                callbackThreads.append(pthread_self())
                return true
            }
            if proceed { work() }
            lock.withLock {
                if proceed {
                    callbacksRunning -= 1
                    if let i = callbackThreads.firstIndex(where: { pthread_equal($0, pthread_self()) != 0 }) {
                        callbackThreads.remove(at: i)
                    }
                }
                callbacksInFlight -= 1
                if resetBatch { _ = life.note(.resetDeliveryRan) }
                lock.broadcast()
            }
            producerStateChanged()
            wake.post()
        }
        switch executor {
        case .queueThread:
            if thread?.isCurrent == true {
                job()
            } else {
                lock.withLock { deliveries.append(job) }
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

    /// Tells listeners about `event` (through the executor).
    func notify(_ event: QueueEvent) {
        guard let sink = lock.withLock({ _eventSink }) else { return }
        deliver { sink(event) }
    }

    /// True if the calling thread is running one of this queue's callbacks (lock held).
    var isInCallback: Bool {
        callbackThreads.contains { pthread_equal($0, pthread_self()) != 0 } || thread?.isCurrent == true
    }

    /// Output queues recompute whether the realtime side should wait for them.
    func producerStateChanged() {}

    /// Runs pending queue-thread deliveries (queue thread only, lock not held).
    func runDeliveries() {
        while true {
            let next: (@Sendable () -> Void)? = lock.withLock { deliveries.isEmpty ? nil : deliveries.removeFirst() }
            guard let next else { return }
            next()
        }
    }

    /// Has the queue thread do a job a control call asked for: `request` (lock held) files it
    /// and returns its ticket, `isDone(ticket)` (lock held) says it was done. Runs the queue's
    /// work here when called on the queue thread. Returns false if the queue thread did not do
    /// it within `controlTimeout` (a callback holds it); otherwise waits for the callbacks it posted.
    func runOnQueueThread(request: () -> Int, isDone: (Int) -> Bool) -> Bool {
        if thread?.isCurrent == true {
            _ = lock.withLock { request() }
            serviceQueue()
            return true
        }
        let ticket = lock.withLock { request() }
        wake.post()
        let timeout = controlTimeout
        let done = lock.withLock { lock.wait(timeout: timeout) { isDone(ticket) || life.isShutDown } }
        if done { waitForDeliveries(timeout: timeout) }
        return done
    }

    /// Waits until every queue-thread delivery posted so far has run (not from the queue thread).
    func waitForDeliveries(timeout: Double = 10) {
        guard case .queueThread = executor, thread?.isCurrent != true else { return }
        lock.withLock {
            _ = lock.wait(timeout: timeout) { deliveries.isEmpty && callbacksRunning == 0 || disposed }
        }
    }

    // MARK: The queue thread

    private func threadMain() {
        while true {
            wake.wait(timeout: 0.05)
            let shouldExit = lock.withLock { life.exiting }
            if shouldExit { break }
            observeRealtime()
            runDeliveries()
            serviceQueue()
            runDeliveries()
        }
        runDeliveries()
    }

    /// Turns what the realtime side published into run-state changes and listener calls.
    func observeRealtime() {
        let actions: [LifecycleAction] = lock.withLock {
            var actions: [LifecycleAction] = []
            let started = withPublication { $0.startCount.load(ordering: .acquiring) }
            if started != seenStartCount {
                seenStartCount = started
                actions += life.note(.realtimeStarted)
            }
            let finished = withPublication { $0.finishCount.load(ordering: .acquiring) }
            if finished != seenFinishCount {
                seenFinishCount = finished
                let news = life.note(.realtimeFinished)
                if news.contains(.endTimeline) { perform(.endTimeline) }
                actions += news
            }
            return actions
        }
        report(actions)
        if lock.withLock({ life.note(.realtimeObserved) }).contains(.disposeNow) {
            disposeNow()
        }
    }

    // MARK: Device events

    func handleDeviceEvent(_ event: DeviceEvent) {
        switch event {
        case .shutdown:
            let first = lock.withLock { () -> Bool in
                let actions = life.note(.deviceGone)
                lock.broadcast()
                return actions.contains(.deliverInvalidation)
            }
            guard first else { return }
            // The queue thread delivers what it can, then reports the stop.
            lock.withLock { deliveries.append { [self] in self.finishInvalidation() } }
            wake.post()
            realtimeWake.post()
        case .xrun:
            lock.withLock { discontinuities += 1 }
        case .sampleRateChanged(let rate):
            let mismatch = lock.withLock { () -> Bool in
                discontinuities += 1
                converterMismatch = rate != converterRate
                return converterMismatch
            }
            deviceRateChanged()
            // The queue's converter was made for another rate: its conversion no longer fits.
            if mismatch { notify(.converterError(0x666D_743F)) }  // 'fmt?', kAudioConverterErr_FormatNotSupported
        case .freewheel:
            realtimeWake.post()
        }
    }

    private func finishInvalidation() {
        perform(.deliverInvalidation)
        let actions = lock.withLock {
            defer { lock.broadcast() }
            return life.note(.invalidationDelivered)
        }
        report(actions)
    }

    // MARK: Start, pause, stop

    /// Starts (or resumes) at device frame `deviceFrame`, or as soon as possible.
    public func start(atDeviceFrame deviceFrame: Int64?) throws {
        let actions: [LifecycleAction] = try lock.withLock {
            // A server that changed its rate since cannot start (the lifecycle says so).
            let paused = withPublication { $0.mode.load(ordering: .relaxed) } == RealtimeMode.paused.rawValue
            let actions = try life.handle(.start(deviceRate: device.sampleRate, converterRate: converterRate,
                                                 realtimePaused: paused))
            if actions.contains(.prepareTimeline) { perform(.prepareTimeline) }
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
            try life.handle(.stop(immediate: immediate, hasQueuedData: !fifo.isEmpty || realtimeLink.bufferedFrames > 0))
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
        let reports = lock.withLock { life.note(.halted) }
        let finished = resetOnQueueThread()
        lock.withLock {
            _ = life.note(.resetFinished)
            primedFrames = 0
            perform(.endTimeline)
            lock.broadcast()
        }
        report(reports)
        if !finished { throw QueueError.queueThreadTimedOut("Stop", controlTimeout) }
    }

    /// Reset: drops what is queued and decoded (output) or captured and not yet in a buffer
    /// (input), returning every queued buffer through the callback once (an input queue's
    /// partly filled one with its data).
    public func reset() throws {
        _ = try lock.withLock { try life.handle(.reset) }
        let finished = resetOnQueueThread()
        lock.withLock {
            _ = life.note(.resetFinished)
            primedFrames = 0
            lock.broadcast()
        }
        if !finished { throw QueueError.queueThreadTimedOut("Reset", controlTimeout) }
    }

    /// Has the queue thread reset the queue; false if it did not within `controlTimeout`.
    func resetOnQueueThread() -> Bool {
        runOnQueueThread(request: { resetTickets.request() }, isDone: { resetTickets.isDone($0) })
    }

    /// Flush. Output: what is enqueued now plays to its last frame, the resampler's tail
    /// included, before anything enqueued later; returns at once. Input: everything captured up
    /// to now reaches the enqueued buffers, the partly filled one delivered with what it holds;
    /// returns once those callbacks have run (unless called from one), or throws
    /// `.queueThreadTimedOut` after `controlTimeout`.
    public func flush() throws {
        _ = try lock.withLock { try life.handle(.flush) }
        try flushQueued()
    }

    /// Pauses; queue time and buffers are kept. An output queue playing out after Stop(false)
    /// pauses too, and stays stopping: Start resumes it, and it stops once played out.
    public func pause() throws {
        let actions = try lock.withLock { try life.handle(.pause) }
        if actions.contains(.sendPause) { send(.pause, synchronous: true) }
    }

    /// True between the device's first frame and the stop.
    public var isRunningValue: Bool { lock.withLock { isRunning } }

    /// The run state.
    public var state: QueueRunState { lock.withLock { runState } }

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
    public var discontinuityCount: Int { lock.withLock { discontinuities } }

    // MARK: Device connection

    /// What the queue connects to: "system", a port, a regular expression, or "".
    public var currentDevice: String { lock.withLock { currentTarget } }

    /// The device ports the queue is connected to.
    public var connectedDevicePorts: [String] { lock.withLock { connectedPorts } }

    /// Connects to `target` instead of what the queue connected to before; throws
    /// `.invalidDevice` if nothing matches. Only the connections the queue made itself are
    /// removed: one a user made to its ports stays.
    /// - Parameters:
    ///   - ports: what to connect to instead, port i to the i-th name (a comma-separated list),
    ///     while CurrentDevice reports `target` (ChannelAssignments, a ChannelLayout's labels).
    public func setCurrentDevice(_ target: String, connecting ports: String? = nil) throws {
        try lock.withLock { try checkUsable() }
        let (before, connected) = try connectionLock.withLock {
            let before = lock.withLock { connectedPorts.count }
            let connected = try device.connect(to: ports ?? target)
            lock.withLock {
                currentTarget = target
                connectionTarget = ports ?? target
                connectedPorts = connected
            }
            return (before, connected)
        }
        notify(.currentDeviceChanged)
        if connected.count != before { notify(.deviceChannelsChanged) }
    }

    /// What the queue's ports are connected to now (CurrentDevice, or the ports it maps to).
    public var connectionTargetValue: String { lock.withLock { connectionTarget ?? currentTarget } }

    /// The JACK sample rate changed: listeners of the device's rate hear of it.
    func deviceRateChanged() { notify(.deviceSampleRateChanged) }

    /// The JACK client's name.
    public var clientName: String { lock.withLock { clientNameStorage } }

    /// Renames the client (reopens it); allowed while stopped.
    public func setClientName(_ name: String) throws {
        _ = try lock.withLock { try life.handle(.reconfigure("rename a stopped queue")) }
        try connectionLock.withLock {
            try device.rename(to: name)
            let target = lock.withLock { connectionTarget ?? currentTarget }
            let ports = target.isEmpty ? [] : ((try? device.connect(to: target)) ?? [])
            lock.withLock {
                clientNameStorage = device.clientName
                connectedPorts = ports
            }
        }
    }

    // MARK: Time

    /// Device time now, and the host time of that frame.
    public func deviceTime() -> (frame: Int64, hostTime: UInt64, valid: Bool) {
        let alive = device.isAlive
        let frame = alive ? device.currentFrame() : 0
        return (frame, HostClock.nanoseconds(), alive)
    }

    /// The queue time now at the queue's rate (0 at the first frame, pauses excluded).
    public func currentQueueTime() -> QueueTimeStamp {
        let now = device.currentFrame()
        guard let time = withPublication({ $0.time.read() }) else {
            return QueueTimeStamp(sampleTime: 0, hostTime: HostClock.nanoseconds())
        }
        // Not beyond what the device has processed.
        let frames = min(time.queueFrames(atDeviceFrame: now), time.queueFrames(atDeviceFrame: time.cycleEndFrame))
        return QueueTimeStamp(sampleTime: Double(frames) * rateRatio, hostTime: device.hostTime(forFrame: now))
    }

    /// The earliest device frame at or after `requested` at which a start can be honoured.
    public func nearestStartFrame(atOrAfter requested: Int64) throws -> Int64 {
        _ = try lock.withLock { try life.handle(.nearestStartTime(primed: primedFrames > 0 || !fifo.isEmpty)) }
        let time = withPublication { $0.time.read() } ?? PublishedTime()
        let (cycleFrame, cycleCount) = (time.cycleFrame, time.cycleFrameCount)
        let period = Int64(max(cycleCount, device.periodFrames))
        let base = cycleCount > 0 ? cycleFrame : device.currentFrame()
        return max(requested, base + 2 * period)
    }

    // MARK: Disposal

    /// Disposes of the queue. Immediate: now; afterwards no callback or listener runs.
    /// Otherwise once the enqueued buffers have played (output) or received what was captured
    /// (input: capture ends now), or at once for a stopped or paused queue.
    public func dispose(immediate: Bool) {
        let (actions, inCallback) = lock.withLock {
            defer { lock.broadcast() }
            return (life.note(.dispose(immediate: immediate)), isInCallback)
        }
        for action in actions {
            switch action {
            case .tearDown: tearDown(inCallback: inCallback)
            case .wakeQueueThread: wake.post()
            default: perform(action)  // the Stop(false) a pending disposal implies
            }
        }
    }

    /// Disposes of the queue now (a pending disposal, once played out; on the queue thread).
    func disposeNow() {
        let (actions, inCallback) = lock.withLock {
            defer { lock.broadcast() }
            return (life.note(.disposeNow), isInCallback)
        }
        if actions.contains(.tearDown) { tearDown(inCallback: inCallback) }
    }

    private func tearDown(inCallback: Bool) {
        device.setEventHandler(nil)
        send(.stop, synchronous: true)
        device.setProcessor(nil)
        device.close()
        lock.withLock {
            _ = life.note(.tornDown)
            for buffer in buffers.values { buffer.ownership = .application }
            fifo.removeAll()
        }
        wake.post()
        realtimeWake.post()
        if let thread {
            if thread.isCurrent { thread.detach() } else { thread.join() }
        }
        // Callbacks already running on other threads (a run loop, a dispatch queue) finish first.
        // Realtime memory is freed in the subclass's deinit, when the queue thread is gone too.
        if !inCallback {
            lock.withLock { _ = lock.wait(timeout: 10) { callbacksRunning == 0 } }
        }
        let handler = lock.withLock { () -> (@Sendable () -> Void)? in
            defer { _onDisposed = nil }
            return _onDisposed
        }
        handler?()
    }

    /// True once Dispose ran.
    public var isDisposed: Bool { lock.withLock { disposed } }

    /// Called once, when the queue has been disposed of (immediately or after playing out).
    public var onDisposed: (@Sendable () -> Void)? {
        get { lock.withLock { _onDisposed } }
        set { lock.withLock { _onDisposed = newValue } }
    }
    private var _onDisposed: (@Sendable () -> Void)?

    /// The device frame at which queue time 0 falls (start frame, moved by pauses); nil before a start.
    public var queueTimeOriginFrame: Int64? {
        withPublication { $0.time.read() }?.originFrame
    }

    /// The host time at which queue time `sampleTime` (queue rate) plays, while the queue runs.
    public func hostTime(forQueueTime sampleTime: Double) -> UInt64? {
        let active = lock.withLock { runState == .running || runState == .starting || runState == .stopping }
        guard active else { return nil }
        let deviceQueueFrames = Int64((sampleTime / rateRatio).rounded())
        guard let time = withPublication({ $0.time.read() }) else { return nil }
        return device.hostTime(forFrame: time.deviceFrame(forQueueFrames: deviceQueueFrames))
    }
}
