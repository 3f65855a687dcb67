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
/// thread, the run state, callbacks and listeners, and disposal.
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

    // Guarded by `lock`.
    var runState = QueueRunState.stopped
    var isRunning = false
    var disposed = false
    var disposalPending = false
    var invalidated = false
    var exiting = false
    var resetDepth = 0
    var resetDeliveriesPending = 0
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

    /// The device rate the queue's converter and ring were made for (guarded by `lock`).
    var converterRate: Double {
        didSet { converterMismatch = false }
    }
    /// The server changed its rate away from `converterRate` (guarded by `lock`).
    var converterMismatch = false

    /// True once the server runs at a rate the queue's converter was not made for
    /// (kAudioQueueProperty_ConverterError reports it; Start fails with `.cannotStart`).
    public var converterFailed: Bool { lock.withLock { converterMismatch } }

    /// Queue rate / device rate.
    public var rateRatio: Double { format.sampleRate / device.sampleRate }

    init(direction: DeviceDirection, format: StreamFormat, provider: DeviceProvider, clientName: String,
         executor: CallbackExecutor) throws {
        self.direction = direction
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

    /// Connects to the default target and starts the queue thread; called once the subclass is ready.
    func finishSetup(threadName: String) {
        if !currentTarget.isEmpty {
            connectedPorts = (try? device.connect(to: currentTarget)) ?? []
            if connectedPorts.isEmpty { currentTarget = "" }
        }
        device.setEventHandler { [weak self] event in self?.handleDeviceEvent(event) }
        thread = QueueThread(name: threadName) { [self] in self.threadMain() }
    }

    // MARK: Subclass hooks

    /// The queue thread's work between waits (conversion, delivery). Called without the lock.
    func serviceQueue() {}
    /// The realtime publication of the subclass's state.
    func withPublication<T>(_ body: (borrowing RealtimePublication) -> T) -> T { fatalError("subclass") }
    /// Pushes a command to the realtime side (lock held).
    func pushCommand(_ command: RealtimeCommand) -> Bool { fatalError("subclass") }
    /// Applies queued commands on this thread when no cycle can run (lock not held).
    func applyCommandsDirectly() {}
    /// The sequence the realtime side applied.
    func appliedSequence() -> Int { withPublication { $0.appliedSequence.load(ordering: .acquiring) } }
    /// The queue thread found that the realtime side started (lock held).
    func didStart() {}
    /// The queue thread found that the realtime side finished a Stop(false) (lock held).
    func didFinish() {}
    /// Device shut down: subclasses deliver what they can (lock not held, queue thread).
    func handleInvalidation() {}

    // MARK: State checks

    /// Throws the error any call on a disposed, disposing or invalidated queue gets (lock held).
    func checkUsable() throws {
        if disposed { throw QueueError.invalidParameter("the queue was disposed of") }
        if disposalPending { throw QueueError.disposalPending }
        if invalidated { throw QueueError.queueInvalidated }
    }

    // MARK: Commands to the realtime side

    /// Sends a command and, if `synchronous`, waits until the realtime side applied it.
    func send(_ kind: RealtimeCommand.Kind, frame: Int64 = .min, position: Int = 0, synchronous: Bool) {
        let sequence: Int = lock.withLock {
            commandSequence += 1
            let command = RealtimeCommand(kind, frame: frame, position: position, sequence: commandSequence)
            while !pushCommand(command) {
                // The command ring is full only if the realtime side is not running: apply here.
                lock.unlock()
                device.synchronize(isApplied: { false }, applyDirectly: { self.applyCommandsDirectly() })
                lock.lock()
            }
            return commandSequence
        }
        realtimeWake.post()
        if synchronous {
            device.synchronize(isApplied: { self.appliedSequence() >= sequence },
                               applyDirectly: { self.applyCommandsDirectly() })
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

    /// Every buffer's handle (the API layer frees them at disposal).
    public func allBufferHandles() -> [UnsafeMutableRawPointer] {
        lock.withLock { Array(buffers.keys) }
    }

    /// Checks that a buffer may be enqueued now (lock held).
    func checkEnqueue(_ handle: UnsafeMutableRawPointer) throws -> QueueBuffer {
        if disposed { throw QueueError.invalidParameter("the queue was disposed of") }
        if invalidated { throw QueueError.queueInvalidated }
        // An input queue being stopped with Stop(false) still takes buffers for what it captured.
        if resetDepth > 0 || resetDeliveriesPending > 0 || disposalPending || (runState == .stopping && direction == .output) {
            throw QueueError.enqueueDuringReset
        }
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
            if resetBatch { resetDeliveriesPending += 1 }
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
                if resetBatch { resetDeliveriesPending -= 1 }
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
        let done = lock.withLock { lock.wait(timeout: timeout) { isDone(ticket) || disposed || exiting } }
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
            let shouldExit = lock.withLock { exiting }
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
        var events: [QueueEvent] = []
        lock.withLock {
            let started = withPublication { $0.startCount.load(ordering: .acquiring) }
            if started != seenStartCount {
                seenStartCount = started
                if runState == .starting { runState = .running }
                didStart()
                // A start the queue thread sees only after a Stop(true) is not reported.
                if !isRunning && runState != .stopped {
                    isRunning = true
                    events.append(.isRunningChanged(true))
                }
            }
            let finished = withPublication { $0.finishCount.load(ordering: .acquiring) }
            if finished != seenFinishCount {
                seenFinishCount = finished
                if runState == .stopping {
                    runState = .stopped
                    didFinish()
                    if isRunning {
                        isRunning = false
                        events.append(.isRunningChanged(false))
                    }
                }
            }
        }
        for event in events { notify(event) }
        if lock.withLock({ disposalPending && runState == .stopped && !disposed }) {
            disposeNow(fromQueueThread: true)
        }
    }

    // MARK: Device events

    func handleDeviceEvent(_ event: DeviceEvent) {
        switch event {
        case .shutdown:
            let first = lock.withLock { () -> Bool in
                guard !invalidated else { return false }
                invalidated = true
                lock.broadcast()
                return true
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
        handleInvalidation()
        let wasRunning = lock.withLock { () -> Bool in
            let was = isRunning
            isRunning = false
            runState = .stopped
            lock.broadcast()
            return was
        }
        if wasRunning { notify(.isRunningChanged(false)) }
    }

    // MARK: Start, pause, stop

    /// Starts (or resumes) at device frame `deviceFrame`, or as soon as possible.
    public func start(atDeviceFrame deviceFrame: Int64?) throws {
        let proceed: Bool = try lock.withLock {
            try checkUsable()
            // A server that changed its rate since: the converter, the ring and queue time
            // are the old rate's, and would play at the wrong speed.
            let rate = device.sampleRate
            guard rate == converterRate else {
                throw QueueError.cannotStart("the JACK server runs at \(Int(rate)) Hz, the queue was made for \(Int(converterRate)) Hz")
            }
            switch runState {
            case .running, .starting: return false
            case .stopping:
                // Stopping after a pause: resume, and stop once played out.
                return withPublication { $0.mode.load(ordering: .relaxed) } == RealtimeMode.paused.rawValue
            case .stopped, .paused: break
            }
            if runState == .stopped { prepareTimeline() }
            if runState != .stopping { runState = .starting }
            return true
        }
        guard proceed else { return }
        wake.post()
        willSendStart()
        send(.start, frame: deviceFrame ?? .min, synchronous: false)
    }

    /// Called after the state became `.starting`, before the realtime side is told to start.
    func willSendStart() {}

    /// Stop(true)'s first half: the realtime side stops now; a start it made before that
    /// is reported first (IsRunning 1, then 0). Returns whether the queue was running.
    /// The caller holds a reset (resetDepth) until it has returned the buffers.
    func haltRealtime(_ alsoUnderLock: () -> Void) -> Bool {
        lock.withLock { resetDepth += 1 }
        send(.stop, synchronous: true)
        observeRealtime()
        return lock.withLock {
            let was = isRunning
            isRunning = false
            runState = .stopped
            alsoUnderLock()
            return was
        }
    }

    /// A new timeline starts (lock held): subclasses reset their queue-time bookkeeping.
    func prepareTimeline() {}

    /// Pauses; queue time and buffers are kept. An output queue playing out after Stop(false)
    /// pauses too, and stays stopping: Start resumes it, and it stops once played out.
    public func pause() throws {
        let needs: Bool = try lock.withLock {
            try checkUsable()
            switch runState {
            case .running, .starting:
                runState = .paused
                return true
            case .stopping:
                return direction == .output
            case .stopped, .paused:
                return false
            }
        }
        if needs { send(.pause, synchronous: true) }
    }

    /// True between the device's first frame and the stop.
    public var isRunningValue: Bool { lock.withLock { isRunning } }

    /// The run state.
    public var state: QueueRunState { lock.withLock { runState } }

    /// Counts discontinuities (xruns, lost recorded frames, rate changes) so far.
    public var discontinuityCount: Int { lock.withLock { discontinuities } }

    // MARK: Device connection

    /// What the queue connects to: "system", a port, a regular expression, or "".
    public var currentDevice: String { lock.withLock { currentTarget } }

    /// The device ports the queue is connected to.
    public var connectedDevicePorts: [String] { lock.withLock { connectedPorts } }

    /// Connects to `target`, replacing the connections; throws `.invalidDevice` if nothing matches.
    /// - Parameters:
    ///   - ports: what to connect to instead, port i to the i-th name (a comma-separated list),
    ///     while CurrentDevice reports `target` (ChannelAssignments, a ChannelLayout's labels).
    public func setCurrentDevice(_ target: String, connecting ports: String? = nil) throws {
        try lock.withLock { try checkUsable() }
        let before = lock.withLock { connectedPorts.count }
        let connected = try device.connect(to: ports ?? target)
        lock.withLock {
            currentTarget = target
            connectionTarget = ports ?? target
            connectedPorts = connected
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
        try lock.withLock {
            try checkUsable()
            guard runState == .stopped else { throw QueueError.invalidRunState("rename a stopped queue") }
        }
        try device.rename(to: name)
        let target = lock.withLock { connectionTarget ?? currentTarget }
        let ports = target.isEmpty ? [] : ((try? device.connect(to: target)) ?? [])
        lock.withLock {
            clientNameStorage = device.clientName
            connectedPorts = ports
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
        try lock.withLock {
            try checkUsable()
            guard runState != .stopped || primedFrames > 0 || !fifo.isEmpty else {
                throw QueueError.invalidRunState("the queue is neither running nor primed")
            }
        }
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
        if !immediate {
            let deferred: Bool = lock.withLock {
                guard !disposed, !disposalPending else { return true }
                // Output: once what is enqueued has played. Input: once what was captured has
                // been delivered to the enqueued buffers ("until all enqueued buffers are processed").
                let busy = (runState == .running || runState == .starting || runState == .stopping) && !invalidated
                if busy { disposalPending = true }
                return busy
            }
            if deferred {
                // The queue plays out, then the queue thread disposes of it (observeRealtime).
                beginStopForDisposal()
                wake.post()
                return
            }
        }
        disposeNow(fromQueueThread: false)
    }

    /// Stop(false) for a pending disposal (which refuses other calls); output subclasses implement it.
    func beginStopForDisposal() {}

    func disposeNow(fromQueueThread: Bool) {
        let (proceed, inCallback) = lock.withLock { () -> (Bool, Bool) in
            guard !disposed else { return (false, false) }
            disposed = true
            disposalPending = false
            resetDepth += 1
            lock.broadcast()
            return (true, isInCallback)
        }
        guard proceed else { return }
        device.setEventHandler(nil)
        send(.stop, synchronous: true)
        device.setProcessor(nil)
        device.close()
        lock.withLock {
            exiting = true
            isRunning = false
            runState = .stopped
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
