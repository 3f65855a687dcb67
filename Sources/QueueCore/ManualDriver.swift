import Synchronization

/// A device provider whose clock the caller advances: the same engine as on
/// JACK, with no server. Deterministic tests and offline rendering use it.
///
/// It models a JACK graph: `physicalPortCount` system playback and capture
/// ports, clients with ports, connections; `run(cycles:)` processes one cycle
/// after another, output clients first, then input clients, so an input
/// connected to an output hears it in the same cycle, as on JACK.
/// By default cycles may wait for the queues (as in JACK's freewheel mode), so
/// no frame is dropped because a queue thread was slow.
///
/// With `queueWork: .inline` no queue has a thread: the queue threads' work (conversion,
/// callbacks, listeners, what follows the realtime side's news) runs on the thread that
/// calls `runQueueWork()`, before and after each cycle `run` runs, and inside the control
/// calls that wait for it (Reset, Stop, Prime). A test then steps cycles and callbacks in
/// one order, every run the same.
public final class ManualDriver: DeviceProvider, @unchecked Sendable {
    /// The server's sample rate (a simulated rate change sets it).
    public var sampleRate: Double { Double(bitPattern: rateBits.load(ordering: .relaxed)) }
    private let rateBits: Atomic<UInt64>
    public let physicalPortCount: Int
    /// Largest period a test may use.
    public let maximumPeriodFrames = 8192
    /// Whether cycles wait for queue threads (no drops) — like JACK freewheel.
    public var allowsWaiting = true
    /// Whether the clients are told the server freewheels, as JACK's freewheel callback does:
    /// the server then runs every cycle of every client, so `skip(cycles:)` only moves the clock
    /// (as jackd's does when it reports an xrun during freewheel) and no frame is lost.
    public var isFreewheeling = false

    /// Who does the queues' work: a thread per queue, or the caller (`runQueueWork()`).
    public let queueWork: QueueWork
    /// The queues whose work runs inline, in the order they were made.
    let inlineQueues = Locked<[WeakQueue]>([])

    let cycleLock = ConditionLock()
    /// Locked (pthread), not Mutex: ThreadSanitizer runs (make tsan-api) see its locking.
    let state = Locked(State())

    struct State {
        var frameTime: Int64 = 0
        var lateReadings = 0
        var periodFrames: Int = 256
        var devices: [ManualDevice] = []
        var recording = false
        var playback: [[Float]] = []
        var playbackStartFrame: Int64 = 0
        var captureSignal: (@Sendable (_ port: Int, _ frame: Int64) -> Float)? = nil
    }

    /// - Parameters:
    ///   - startFrame: device time of the first cycle (tests start near 2^32 to cross a wrap).
    ///   - queueWork: `.inline`: no queue thread; `runQueueWork()` and the cycles do their work.
    public init(sampleRate: Double = 48000, periodFrames: Int = 256, physicalPortCount: Int = 2, startFrame: Int64 = 0,
                queueWork: QueueWork = .threads) {
        self.queueWork = queueWork
        rateBits = Atomic(sampleRate.bitPattern)
        self.physicalPortCount = physicalPortCount
        state.withLock {
            $0.periodFrames = periodFrames
            $0.frameTime = startFrame
            $0.playback = Array(repeating: [], count: physicalPortCount)
        }
    }

    func setSampleRate(_ rate: Double) { rateBits.store(rate.bitPattern, ordering: .relaxed) }

    /// Frames per cycle; change it between cycles to vary the period.
    public var periodFrames: Int {
        get { state.withLock { $0.periodFrames } }
        set { state.withLock { $0.periodFrames = min(max(newValue, 1), maximumPeriodFrames) } }
    }

    /// Device time of the next cycle's first frame.
    public var frameTime: Int64 { state.withLock { $0.frameTime } }

    /// The signal system capture port `port` delivers at device frame `frame`.
    public func setCaptureSignal(_ signal: (@Sendable (_ port: Int, _ frame: Int64) -> Float)?) {
        state.withLock { $0.captureSignal = signal }
    }

    /// Starts recording what reaches the system playback ports (from the next cycle).
    public func startRecordingPlayback() {
        state.withLock {
            $0.recording = true
            $0.playback = Array(repeating: [], count: physicalPortCount)
            $0.playbackStartFrame = $0.frameTime
        }
    }

    /// What system playback port `port` received since recording started, and the device frame of its first sample.
    public func recordedPlayback(port: Int) -> (startFrame: Int64, samples: [Float]) {
        state.withLock { ($0.playbackStartFrame, $0.playback[port]) }
    }

    /// The clients open now, in the order they were opened.
    public var devices: [ManualDevice] { state.withLock { $0.devices } }

    public var systemPlaybackPorts: [String] { (0..<physicalPortCount).map { "system:playback_\($0 + 1)" } }
    public var systemCapturePorts: [String] { (0..<physicalPortCount).map { "system:capture_\($0 + 1)" } }

    public func openDevice(name: String, direction: DeviceDirection, layout: PortLayout) throws -> AudioDevice {
        let unique = state.withLock { state -> String in
            var candidate = name
            var suffix = 1
            while state.devices.contains(where: { $0.clientName == candidate }) {
                suffix += 1
                candidate = suffix < 10 ? "\(name)-0\(suffix)" : "\(name)-\(suffix)"
            }
            return candidate
        }
        let device = ManualDevice(driver: self, name: unique, direction: direction, layout: layout)
        state.withLock { $0.devices.append(device) }
        return device
    }

    public func defaultTarget(for direction: DeviceDirection) -> String {
        physicalPortCount > 0 ? "system" : ""
    }

    func remove(_ device: ManualDevice) {
        state.withLock { $0.devices.removeAll { $0 === device } }
    }

    /// Every port name, by direction of data: outputs (system capture + client outputs) and inputs.
    func ports(receiving direction: DeviceDirection) -> (candidates: [String], physical: [String]) {
        let devices = state.withLock { $0.devices }
        switch direction {
        case .output:  // an output port connects to input ports
            let clientInputs = devices.filter { $0.direction == .input }.flatMap { $0.portNames }
            return (systemPlaybackPorts + clientInputs, systemPlaybackPorts)
        case .input:
            let clientOutputs = devices.filter { $0.direction == .output }.flatMap { $0.portNames }
            return (systemCapturePorts + clientOutputs, systemCapturePorts)
        }
    }

    /// Runs `cycles` cycles of the current period.
    public func run(cycles: Int) {
        for _ in 0..<cycles { runQueueWorkThenCycle() }
        runQueueWork()
    }

    /// Lets `cycles` cycles pass without running any client, as a JACK server does when an
    /// xrun leaves clients out: device time moves on, the clients miss those frames.
    public func skip(cycles: Int) {
        cycleLock.withLock {
            state.withLock { state in
                if state.recording {
                    let silence = [Float](repeating: 0, count: cycles * state.periodFrames)
                    for p in 0..<physicalPortCount { state.playback[p].append(contentsOf: silence) }
                }
                state.frameTime += Int64(cycles * state.periodFrames)
            }
        }
    }

    /// For the next `cycles` cycles, clients read the frame time one period ahead of the
    /// cycle they run, as a late client of a JACK2 server does when the server has begun
    /// the next cycle (jack_last_frame_time is the server's clock). Nothing is lost: the
    /// cycles run as usual, and the reading is right again afterwards (a repeat).
    public func readLate(cycles: Int = 1) {
        state.withLock { $0.lateReadings = cycles }
    }

    /// Runs cycles until at least `frames` frames have passed.
    public func run(frames: Int) {
        var done = 0
        while done < frames {
            done += periodFrames
            runQueueWorkThenCycle()
        }
        runQueueWork()
    }

    func runCycleNow() {
        cycleLock.lock()
        defer { cycleLock.unlock() }
        let (frameTime, n, devices, signal, late) = state.withLock { state in
            defer { state.lateReadings = max(0, state.lateReadings - 1) }
            return (state.frameTime, state.periodFrames, state.devices, state.captureSignal, state.lateReadings > 0)
        }
        let reading = late ? frameTime + Int64(n) : frameTime
        var playbackMix = Array(repeating: [Float](repeating: 0, count: n), count: physicalPortCount)
        var outputsByName: [String: UnsafeMutablePointer<Float>] = [:]

        for device in devices where device.direction == .output {
            device.process(frameTime: reading, frameCount: n, mayWait: cyclesWait)
            for (port, target) in device.connectionList {
                if let index = systemPlaybackPorts.firstIndex(of: target) {
                    let source = device.buffers[port]
                    for i in 0..<n { playbackMix[index][i] += source[i] }
                }
            }
            for (i, name) in device.portNames.enumerated() { outputsByName[name] = device.buffers[i] }
        }
        for device in devices where device.direction == .input {
            for p in 0..<device.portCount { device.buffers[p].update(repeating: 0, count: n) }
            for (port, source) in device.connectionList {
                let destination = device.buffers[port]
                if let index = systemCapturePorts.firstIndex(of: source) {
                    if let signal {
                        for i in 0..<n { destination[i] += signal(index, frameTime + Int64(i)) }
                    }
                } else if let output = outputsByName[source] {
                    for i in 0..<n { destination[i] += output[i] }
                }
            }
            device.process(frameTime: reading, frameCount: n, mayWait: cyclesWait)
        }
        state.withLock {
            if $0.recording {
                for p in 0..<physicalPortCount { $0.playback[p].append(contentsOf: playbackMix[p]) }
            }
            $0.frameTime += Int64(n)
        }
    }
}

/// One client of a ManualDriver.
public final class ManualDevice: AudioDevice, @unchecked Sendable {
    unowned let driver: ManualDriver
    public let direction: DeviceDirection
    public let layout: PortLayout
    public var portCount: Int { layout.names.count }
    let buffers: [UnsafeMutablePointer<Float>]
    let bufferTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private let lock: Locked<Inner>

    struct Inner {
        var name: String
        var processor: RealtimeProcessor?
        var connections: [(port: Int, target: String)] = []
        var handler: (@Sendable (DeviceEvent) -> Void)?
        var alive = true
    }

    init(driver: ManualDriver, name: String, direction: DeviceDirection, layout: PortLayout) {
        self.driver = driver
        self.direction = direction
        self.layout = layout
        let portCount = layout.names.count
        buffers = (0..<portCount).map { _ in
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: driver.maximumPeriodFrames)
            buffer.initialize(repeating: 0, count: driver.maximumPeriodFrames)
            return buffer
        }
        bufferTable = .allocate(capacity: max(portCount, 1))
        for (i, buffer) in buffers.enumerated() { bufferTable[i] = buffer }
        lock = Locked(Inner(name: name))
    }

    deinit {
        buffers.forEach { $0.deallocate() }
        bufferTable.deallocate()
    }

    var connectionList: [(port: Int, target: String)] { lock.withLock { $0.connections } }

    func process(frameTime: Int64, frameCount: Int, mayWait: Bool) {
        let processor = lock.withLock { $0.alive ? $0.processor : nil }
        if let processor {
            processor.entry(processor.context, frameTime, Int32(frameCount), bufferTable, mayWait, driver.isFreewheeling)
        } else if direction == .output {
            for buffer in buffers { buffer.update(repeating: 0, count: frameCount) }
        }
    }

    public var sampleRate: Double { driver.sampleRate }
    public var periodFrames: Int { driver.periodFrames }
    public var clientName: String { lock.withLock { $0.name } }
    public var portNames: [String] {
        let name = clientName
        return layout.names.map { "\(name):\($0)" }
    }
    public var isFreewheeling: Bool { driver.allowsWaiting }
    public var isAlive: Bool { lock.withLock { $0.alive } }

    public func setProcessor(_ processor: RealtimeProcessor?) {
        driver.cycleLock.withLock { lock.withLock { $0.processor = processor } }
    }

    public func connect(to target: String) throws -> [String] {
        let (candidates, physical) = driver.ports(receiving: direction)
        let targets = try PortMatcher.resolve(target, candidates: candidates, physical: physical)
        let plan = PortMatcher.plan(portCount: portCount, targets: targets, monoPair: layout.isMonoPair)
        driver.cycleLock.withLock { lock.withLock { $0.connections = plan } }
        return Array(Set(plan.map { $0.target })).sorted()
    }

    public func currentFrame() -> Int64 { driver.frameTime }

    public func hostTime(forFrame frame: Int64) -> UInt64 {
        // Clamped: a far-off frame (a caller's time stamp) must not trap the conversion.
        UInt64(min(max(0, (Double(frame) * 1e9 / driver.sampleRate).rounded()), 1e18)) + 1_000_000_000
    }

    public func frame(forHostTime hostTime: UInt64) -> Int64 {
        Int64(((Double(hostTime) - 1e9) * driver.sampleRate / 1e9).rounded(.down))
    }

    public func portLatency(_ index: Int) -> ClosedRange<Int> { 0...0 }

    public func synchronize(isApplied: () -> Bool, applyDirectly: () -> Void) {
        driver.cycleLock.lock()
        if !isApplied() { applyDirectly() }
        driver.cycleLock.unlock()
    }

    public func setEventHandler(_ handler: (@Sendable (DeviceEvent) -> Void)?) {
        lock.withLock { $0.handler = handler }
    }

    public func rename(to name: String) throws {
        lock.withLock { $0.name = name }
    }

    /// Simulates the server going away: the client stops being processed and the engine hears of it.
    public func simulateShutdown(reason: String = "server shut down") {
        let handler = driver.cycleLock.withLock {
            lock.withLock { inner -> (@Sendable (DeviceEvent) -> Void)? in
                inner.alive = false
                return inner.handler
            }
        }
        handler?(.shutdown(reason: reason))
    }

    /// Simulates the server changing its sample rate (JACK's sample-rate callback): the
    /// driver runs at `rate` from now on, and this client hears of it.
    public func simulateSampleRateChange(_ rate: Double) {
        driver.setSampleRate(rate)
        lock.withLock { $0.handler }?(.sampleRateChanged(rate))
    }

    /// Simulates an xrun reported by the server.
    public func simulateXrun() {
        lock.withLock { $0.handler }?(.xrun)
    }

    public func close() {
        driver.cycleLock.withLock { lock.withLock { $0.processor = nil; $0.alive = false } }
        driver.remove(self)
    }
}
