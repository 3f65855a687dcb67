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
/// from the queue's own callbacks. State is in `lock`'s value (`EngineState`); user code
/// (callbacks, listeners) never runs with the lock held.
public class QueueEngine: @unchecked Sendable {
    public let direction: DeviceDirection
    /// The queue's format; an input queue asked for rate 0 gets the device's rate here.
    public let format: StreamFormat
    /// The device client: the one the queue was opened with, or the offline clock (`DeviceSwitch`).
    public let device: AudioDevice
    let deviceSwitch: DeviceSwitch
    let executor: CallbackExecutor
    /// The engine's lock and what it guards (`EngineState`).
    let lock: Locked<EngineState>
    /// Held by each connection pass with the bookkeeping of what it connected (`currentTarget`,
    /// `connectionTarget`, `connectedPorts`): passes asked for from several threads take turns,
    /// and what the queue reports is what the last one connected. Taken before `lock`.
    let connectionLock = ConditionLock()
    /// Wakes the queue thread (posted by the realtime side and by API calls).
    let wake = Semaphore()
    /// Wakes a realtime entry that waits (freewheel, ManualDriver).
    let realtimeWake = Semaphore()
    /// The queue thread; nil when the queue's work runs inline (`ManualDriver(queueWork: .inline)`).
    var thread: QueueThread?
    /// The queue thread's work runs on whoever calls `ManualDriver.runQueueWork()` (or a control
    /// call that needs it done), not on a thread of its own.
    let runsInline: Bool
    /// The thread running the queue's work inline now (`pthread_t` as a number), or 0.
    let inlineWorker = Atomic<UInt>(0)

    /// Seconds Reset, Stop(true) and an input queue's Flush wait for the queue thread (held by a
    /// callback that blocks) before they fail with `.queueThreadTimedOut`.
    public var controlTimeout: Double {
        get { lock.withLock { $0.controlTimeout } }
        set { lock.withLock { $0.controlTimeout = max(0, newValue) } }
    }

    /// Listener dispatch, set by the API layer; runs through the callback executor.
    public var eventSink: (@Sendable (QueueEvent) -> Void)? {
        get { lock.withLock { $0.eventSink } }
        set { lock.withLock { $0.eventSink = newValue } }
    }

    /// The direction's realtime state (publication, command ring, meters).
    let realtimeLink: any RealtimeLink

    /// True once the server runs at a rate the queue's converter was not made for
    /// (kAudioQueueProperty_ConverterError reports it; Start fails with `.cannotStart`).
    public var converterFailed: Bool { lock.withLock { $0.converterMismatch } }

    /// Where the device came from, kept as long as the queue: a provider made for one queue
    /// (`AudioQueueDevices.offline(...)` passed inline) would otherwise go with the call, and its
    /// device with it.
    private let provider: DeviceProvider

    /// Queue rate / device rate.
    public var rateRatio: Double { format.sampleRate / device.sampleRate }

    init(direction: DeviceDirection, format: StreamFormat, provider: DeviceProvider, clientName: String,
         executor: CallbackExecutor, realtimeLink: any RealtimeLink) throws {
        self.provider = provider
        runsInline = (provider as? ManualDriver)?.queueWork == .inline
        self.direction = direction
        self.realtimeLink = realtimeLink
        self.executor = executor
        let layout = PortLayout.forQueue(direction: direction, channelCount: format.channelCount)
        deviceSwitch = DeviceSwitch(try provider.openDevice(name: clientName, direction: direction, layout: layout))
        device = deviceSwitch
        var resolved = format
        if resolved.sampleRate == 0 { resolved.sampleRate = device.sampleRate }
        self.format = resolved
        lock = Locked(EngineState(direction: direction, converterRate: device.sampleRate, clientName: device.clientName,
                                  target: provider.defaultTarget(for: direction)))
    }

    deinit {
        // Realtime memory goes once no cycle can reach it (the queue thread is gone too).
        device.setProcessor(nil)
        realtimeLink.release()
    }

    /// Connects to the default target and starts the queue thread; called once the subclass is ready.
    func finishSetup(threadName: String) {
        connectionLock.withLock {
            let target = lock.withLock { $0.currentTarget }
            guard !target.isEmpty else { return }
            let ports = (try? device.connect(to: target)) ?? []
            lock.withLock { state in
                state.connectedPorts = ports
                if ports.isEmpty { state.currentTarget = "" }
            }
        }
        device.setEventHandler { [weak self] event in self?.handleDeviceEvent(event) }
        if runsInline, let driver = provider as? ManualDriver {
            driver.adopt(self)
        } else {
            thread = QueueThread(name: threadName) { [self] in self.threadMain() }
        }
    }

    // MARK: What each direction does

    /// The queue thread's work between waits (conversion, delivery). Called without the lock.
    func serviceQueue() {}
    /// Carries out the lifecycle actions that only one direction has work for: prepareToStart,
    /// beginPlayOut, beginCaptureDrain and deliverInvalidation (lock not held). Every other
    /// action the engine carries out itself, or through the two methods below.
    func perform(_ action: LifecycleAction) {}
    /// The lifecycle actions prepareTimeline and endTimeline (`state`: the lock's).
    func prepareTimeline(_ state: inout EngineState) {}
    func endTimeline(_ state: inout EngineState) {}
    /// Flush's work, once the queue is known to be usable (lock not held).
    func flushQueued() throws {}
    /// Output queues recompute whether the realtime side should wait for them.
    func producerStateChanged() {}

    /// The realtime publication.
    func withPublication<T>(_ body: (borrowing RealtimePublication) -> T) -> T { realtimeLink.withPublication(body) }
    /// The sequence the realtime side applied.
    func appliedSequence() -> Int { withPublication { $0.appliedSequence.load(ordering: .acquiring) } }

    // MARK: State checks

    /// Tells IsRunning listeners what `actions` report (lock not held).
    func report(_ actions: [LifecycleAction]) {
        for case .notifyIsRunning(let running) in actions { notify(.isRunningChanged(running)) }
    }

    /// Tells listeners about `event` (through the executor).
    func notify(_ event: QueueEvent) {
        guard let sink = lock.withLock({ $0.eventSink }) else { return }
        deliver { sink(event) }
    }

    // MARK: Commands to the realtime side

    /// Sends a command and, if `synchronous`, waits until the realtime side applied it.
    func send(_ kind: RealtimeCommand.Kind, frame: Int64 = .min, position: Int = 0, synchronous: Bool) {
        // Pushed under the lock, so commands go in the order of their sequence numbers.
        var sequence = 0
        while !lock.withLock({ state in
            if sequence == 0 {
                state.commandSequence += 1
                sequence = state.commandSequence
            }
            return realtimeLink.push(RealtimeCommand(kind, frame: frame, position: position, sequence: sequence))
        }) {
            // The command ring is full only if the realtime side is not running: apply here.
            device.synchronize(isApplied: { false }, applyDirectly: { self.realtimeLink.applyCommandsDirectly() })
        }
        realtimeWake.post()
        if synchronous {
            device.synchronize(isApplied: { self.appliedSequence() >= sequence },
                               applyDirectly: { self.realtimeLink.applyCommandsDirectly() })
        }
    }

    // MARK: The queue thread

    /// The queue thread's longest sleep. Everything it must act on posts its semaphore (the
    /// realtime side's thresholds, starts, stops, gaps and commands; enqueues, device changes,
    /// disposal), so this only bounds how long a missed post could go unnoticed. It used to be
    /// 0.05 s: 20 wake-ups a second for every queue, idle or not, a third of a 2-track
    /// recorder's steady CPU (issue #29).
    static let idleWakeSeconds = 0.5

    private func threadMain() {
        while true {
            wake.wait(timeout: QueueEngine.idleWakeSeconds)
            if !queueThreadPass() { break }
        }
        runDeliveries()
    }

    /// One pass of the queue thread's work between waits; false once the queue thread is to exit.
    func queueThreadPass() -> Bool {
        if lock.withLock({ $0.life.exiting }) { return false }
        observeRealtime()
        runDeliveries()
        serviceQueue()
        runDeliveries()
        return true
    }

    /// Turns what the realtime side published into run-state changes and listener calls.
    func observeRealtime() {
        let actions: [LifecycleAction] = lock.withLock { state in
            var actions: [LifecycleAction] = []
            let started = withPublication { $0.startCount.load(ordering: .acquiring) }
            if started != state.seenStartCount {
                state.seenStartCount = started
                actions += state.life.note(.realtimeStarted)
            }
            let finished = withPublication { $0.finishCount.load(ordering: .acquiring) }
            if finished != state.seenFinishCount {
                state.seenFinishCount = finished
                let news = state.life.note(.realtimeFinished)
                if news.contains(.endTimeline) {
                    state.primedFrames = 0
                    endTimeline(&state)
                }
                actions += news
            }
            return actions
        }
        report(actions)
        if lock.withLock({ $0.life.note(.realtimeObserved) }).contains(.disposeNow) {
            disposeNow()
        }
    }

    // MARK: Time (OutputQueueEngine overrides this one; the rest is in QueueEngine+Time.swift)

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

    // MARK: Disposal

    /// Disposes of the queue. Immediate: now; afterwards no callback or listener runs.
    /// Otherwise once the enqueued buffers have played (output) or received what was captured
    /// (input: capture ends now), or at once for a stopped or paused queue.
    public func dispose(immediate: Bool) {
        let (actions, inCallback) = lock.withLock { state in
            defer { lock.broadcast() }
            return (state.life.note(.dispose(immediate: immediate)), isInCallback(state))
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
        let (actions, inCallback) = lock.withLock { state in
            defer { lock.broadcast() }
            return (state.life.note(.disposeNow), isInCallback(state))
        }
        if actions.contains(.tearDown) { tearDown(inCallback: inCallback) }
    }

    private func tearDown(inCallback: Bool) {
        device.setEventHandler(nil)
        send(.stop, synchronous: true)
        device.setProcessor(nil)
        device.close()
        lock.withLock {
            _ = $0.life.note(.tornDown)
            for buffer in $0.buffers.values { buffer.ownership = .application }
            $0.fifo.removeAll()
        }
        wake.post()
        realtimeWake.post()
        if let thread {
            if thread.isCurrent { thread.detach() } else { thread.join() }
        }
        // Callbacks already running on other threads (a run loop, a dispatch queue) finish first.
        // Realtime memory is freed in the subclass's deinit, when the queue thread is gone too.
        if !inCallback {
            lock.waitUntil(timeout: 10) { $0.callbacksRunning == 0 }
        }
        let handler = lock.withLock { state -> (@Sendable () -> Void)? in
            defer { state.onDisposed = nil }
            return state.onDisposed
        }
        handler?()
    }

    /// True once Dispose ran.
    public var isDisposed: Bool { lock.withLock { $0.disposed } }

    /// Called once, when the queue has been disposed of (immediately or after playing out).
    public var onDisposed: (@Sendable () -> Void)? {
        get { lock.withLock { $0.onDisposed } }
        set { lock.withLock { $0.onDisposed = newValue } }
    }
}
