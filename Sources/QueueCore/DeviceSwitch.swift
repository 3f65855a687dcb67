/// A queue's device: the client it was opened with (a JACK client, or a ManualDriver
/// client in tests), or — while the queue renders offline
/// (AudioQueueSetOfflineRenderFormat) — a private ManualDriver client whose clock
/// `OfflineRenderer` advances. The engine talks to this switch only, so the same engine
/// (queue thread, realtime kernel, commands, time) runs in both modes.
///
/// While offline the online client stays open (its name and ports stay, so going back
/// online is instant) but carries silence and drops the connections it made itself (those
/// a user made stay): "in offline rendering mode, a playback audio queue does not connect
/// to external hardware".
///
/// Thread safety: every method may be called from any thread.
final class DeviceSwitch: AudioDevice, @unchecked Sendable {
    let online: AudioDevice
    private let state: Locked<State>

    /// Serializes offline renders (AudioQueueOfflineRender from any thread).
    let offlineLock = ConditionLock()

    private struct State {
        var processor: RealtimeProcessor?
        var renderer: OfflineRenderer?
    }

    init(_ online: AudioDevice) {
        self.online = online
        state = Locked(State())
    }

    /// The device the engine runs on now.
    private var active: AudioDevice { state.withLock { $0.renderer?.device } ?? online }

    /// The offline renderer, while offline.
    var renderer: OfflineRenderer? { state.withLock { $0.renderer } }

    /// Moves the realtime entry from the online client to `renderer`'s client.
    func goOffline(_ renderer: OfflineRenderer) {
        let processor = state.withLock { $0.processor }
        online.setProcessor(nil)  // returns once no JACK cycle runs the entry
        _ = try? online.connect(to: "")
        renderer.device.setProcessor(processor)
        state.withLock { $0.renderer = renderer }
    }

    /// Moves the realtime entry back to the online client (the caller reconnects it).
    func goOnline() {
        let (renderer, processor) = state.withLock { state -> (OfflineRenderer?, RealtimeProcessor?) in
            defer { state.renderer = nil }
            return (state.renderer, state.processor)
        }
        guard let renderer else { return }
        offlineLock.withLock { renderer.device.close() }
        online.setProcessor(processor)
    }

    // MARK: AudioDevice

    var sampleRate: Double { active.sampleRate }
    var periodFrames: Int { active.periodFrames }
    var clientName: String { online.clientName }
    var portNames: [String] { online.portNames }
    var isFreewheeling: Bool { active.isFreewheeling }
    var isAlive: Bool { online.isAlive }

    func setProcessor(_ processor: RealtimeProcessor?) {
        let device = state.withLock { state -> AudioDevice in
            state.processor = processor
            return state.renderer?.device ?? online
        }
        device.setProcessor(processor)
    }

    func connect(to target: String) throws -> [String] { try online.connect(to: target) }
    func currentFrame() -> Int64 { active.currentFrame() }
    func hostTime(forFrame frame: Int64) -> UInt64 { active.hostTime(forFrame: frame) }
    func frame(forHostTime hostTime: UInt64) -> Int64 { active.frame(forHostTime: hostTime) }
    func portLatency(_ index: Int) -> ClosedRange<Int> { active.portLatency(index) }

    func synchronize(isApplied: () -> Bool, applyDirectly: () -> Void) {
        active.synchronize(isApplied: isApplied, applyDirectly: applyDirectly)
    }

    func setEventHandler(_ handler: (@Sendable (DeviceEvent) -> Void)?) { online.setEventHandler(handler) }
    func rename(to name: String) throws { try online.rename(to: name) }

    func close() {
        let renderer = state.withLock { state -> OfflineRenderer? in
            defer { state.renderer = nil }
            return state.renderer
        }
        renderer?.device.close()
        online.close()
    }
}
