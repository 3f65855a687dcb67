/// A provider whose devices live on a server that may not be running (JACK), and can say so.
public protocol ServerBackedProvider: DeviceProvider {
    /// False when no server answers: nothing could be opened now, whatever the client.
    func serverIsRunning() -> Bool
}

extension NamedDeviceProvider: ServerBackedProvider {
    public func serverIsRunning() -> Bool { (base as? ServerBackedProvider)?.serverIsRunning() ?? true }
}

/// Opens playback queues' devices on `base`, and when no server runs at all, a
/// `DeferredDevice` instead of failing: Apple's AudioQueueNewOutput needs no audio device
/// (AQOfflineRenderTest renders on a machine with none), only a Start that plays does. The
/// queue renders offline on it; the first call that needs the device connects it
/// (`OutputQueueEngine.connectDeviceIfNeeded`), and fails with `.invalidDevice` while
/// there is still no server.
///
/// Only an absent server defers: a server that refuses the client (freewheeling, no cycles)
/// fails at once, as before. A provider that is not a `ServerBackedProvider` never defers.
public final class DeferringDeviceProvider: DeviceProvider, @unchecked Sendable {
    public let base: DeviceProvider
    /// The rate a deferred device reports: the queue's own, so that it converts nothing.
    public let sampleRate: Double

    public init(_ base: DeviceProvider, sampleRate: Double) {
        self.base = base
        self.sampleRate = sampleRate
    }

    public func openDevice(name: String, direction: DeviceDirection, layout: PortLayout) throws -> AudioDevice {
        do {
            return try base.openDevice(name: name, direction: direction, layout: layout)
        } catch QueueError.invalidDevice(let reason) {
            guard let server = base as? ServerBackedProvider, !server.serverIsRunning() else {
                throw QueueError.invalidDevice(reason)
            }
            return DeferredDevice(base: base, name: name, direction: direction, layout: layout,
                                  sampleRate: sampleRate, reason: reason)
        }
    }

    public func defaultTarget(for direction: DeviceDirection) -> String { base.defaultTarget(for: direction) }
}

/// A queue's device while no server runs: until `attach()` opens the client on the server,
/// it has no ports, no connections and no clock of its own (`isAlive` is false: the device is
/// not running), keeps the realtime entry and the event handler for the client to come, and
/// applies commands directly (no cycle runs). Once attached it is that client.
///
/// Thread safety: every method may be called from any thread; `attach` and the calls that
/// hand over the entry or the handler take turns.
final class DeferredDevice: AudioDevice, @unchecked Sendable {
    private let base: DeviceProvider
    private let direction: DeviceDirection
    private let layout: PortLayout
    private let detachedRate: Double
    /// Why the server could not be had when the queue was made.
    let reason: String
    /// Frames per cycle of the offline clock a render makes while detached (that of
    /// `AudioQueueDevices.offline`).
    static let detachedPeriodFrames = 1024
    /// Held by `attach` and by what it hands over (entry, handler, commands applied directly).
    private let gate = ConditionLock()
    /// Held by the engine around a whole connection (`connectDeviceIfNeeded`).
    let connectionTurn = ConditionLock()
    private let state: Locked<State>

    private struct State {
        var real: AudioDevice?
        var name: String
        var processor: RealtimeProcessor?
        var handler: (@Sendable (DeviceEvent) -> Void)?
        var closed = false
    }

    init(base: DeviceProvider, name: String, direction: DeviceDirection, layout: PortLayout, sampleRate: Double, reason: String) {
        self.base = base
        self.direction = direction
        self.layout = layout
        detachedRate = sampleRate
        self.reason = reason
        state = Locked(State(name: name))
    }

    private var real: AudioDevice? { state.withLock { $0.real } }

    /// True once the client is open on the server.
    var isAttached: Bool { real != nil }

    /// What a new queue connects to on the server.
    var defaultTarget: String { base.defaultTarget(for: direction) }

    /// Opens the client on the server and hands it the entry and the event handler.
    /// - Returns: true if it attached now, false if it was attached already.
    /// - Throws: `.invalidDevice` while no server runs; `.queueInvalidated` once closed.
    func attach() throws -> Bool {
        try gate.withLock {
            let (attached, name, closed) = state.withLock { ($0.real != nil, $0.name, $0.closed) }
            if attached { return false }
            if closed { throw QueueError.queueInvalidated }
            let device = try base.openDevice(name: name, direction: direction, layout: layout)
            let (processor, handler) = state.withLock { ($0.processor, $0.handler) }
            device.setEventHandler(handler)
            device.setProcessor(processor)
            state.withLock { $0.real = device }
            return true
        }
    }

    // MARK: AudioDevice

    var sampleRate: Double { real?.sampleRate ?? detachedRate }
    var periodFrames: Int { real?.periodFrames ?? Self.detachedPeriodFrames }
    var clientName: String { real?.clientName ?? state.withLock { $0.name } }
    var portNames: [String] { real?.portNames ?? [] }
    var isFreewheeling: Bool { real?.isFreewheeling ?? false }
    var isAlive: Bool { real?.isAlive ?? false }

    func setProcessor(_ processor: RealtimeProcessor?) {
        gate.withLock {
            let device = state.withLock { state -> AudioDevice? in
                state.processor = processor
                return state.real
            }
            device?.setProcessor(processor)
        }
    }

    func connect(to target: String) throws -> [String] {
        if let real { return try real.connect(to: target) }
        guard target.isEmpty else { throw QueueError.invalidDevice(reason) }
        return []
    }

    func currentFrame() -> Int64 { real?.currentFrame() ?? 0 }
    func hostTime(forFrame frame: Int64) -> UInt64 { real?.hostTime(forFrame: frame) ?? HostClock.nanoseconds() }
    func frame(forHostTime hostTime: UInt64) -> Int64 { real?.frame(forHostTime: hostTime) ?? 0 }
    func portLatency(_ index: Int) -> ClosedRange<Int> { real?.portLatency(index) ?? 0...0 }

    func synchronize(isApplied: () -> Bool, applyDirectly: () -> Void) {
        gate.lock()
        if let real {
            gate.unlock()
            real.synchronize(isApplied: isApplied, applyDirectly: applyDirectly)
            return
        }
        // No cycle runs, and none can start meanwhile (attach waits for the gate).
        if !isApplied() { applyDirectly() }
        gate.unlock()
    }

    func setEventHandler(_ handler: (@Sendable (DeviceEvent) -> Void)?) {
        gate.withLock {
            let device = state.withLock { state -> AudioDevice? in
                state.handler = handler
                return state.real
            }
            device?.setEventHandler(handler)
        }
    }

    func rename(to name: String) throws {
        if let real {
            try real.rename(to: name)
        } else {
            state.withLock { $0.name = name }
        }
    }

    func close() {
        let device = gate.withLock {
            state.withLock { state -> AudioDevice? in
                state.closed = true
                return state.real
            }
        }
        device?.close()
    }
}
