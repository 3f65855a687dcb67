import CJack
import Glibc
import QueueCore
import Synchronization

/// Opens audio queue clients on a JACK server.
///
/// The server is `serverName`, else `$JACK_DEFAULT_SERVER`, else JACK's default.
/// The driver never starts a server: with none running, opening fails at once
/// with `.invalidDevice` (the queue API's kAudioQueueErr_InvalidDevice).
public final class JackDriver: DeviceProvider, @unchecked Sendable {
    /// The driver for the default server.
    public static let shared = JackDriver(serverName: nil)

    public let serverName: String?

    public init(serverName: String?) {
        self.serverName = serverName
        JackMessages.install()
    }

    public func openDevice(name: String, direction: DeviceDirection, layout: PortLayout) throws -> AudioDevice {
        try JackDevice(driver: self, name: name, direction: direction, layout: layout)
    }

    /// What a new queue connects to: `$JAQ_OUTPUT_DEVICE` (playback) or `$JAQ_INPUT_DEVICE`
    /// (recording) when set, in the syntax of kAudioQueueProperty_CurrentDevice, else "system".
    /// The variables route a program that never sets CurrentDevice (the guides' programs)
    /// to chosen ports, as a user picks the default device on Apple platforms.
    public func defaultTarget(for direction: DeviceDirection) -> String {
        let variable = direction == .output ? "JAQ_OUTPUT_DEVICE" : "JAQ_INPUT_DEVICE"
        guard let value = getenv(variable) else { return "system" }
        return String(cString: value)
    }

    /// Device time shared by every client of this process: JACK frame time extended
    /// to 64 bits. Allocated once; read and advanced by the clients' process threads.
    let frameReference: UnsafeMutablePointer<Atomic<Int64>> = {
        let pointer = UnsafeMutablePointer<Atomic<Int64>>.allocate(capacity: 1)
        pointer.initialize(to: Atomic(Int64.min))
        return pointer
    }()
}

/// Extends a 32-bit JACK frame time to 64 bits: the value congruent to `frames`
/// (mod 2^32) nearest to `reference`. Clients of one process share the reference,
/// and times within ±2^31 frames (12 h at 48 kHz) of now map the same way in
/// every process.
@inline(__always)
func extendFrameTime(_ frames: UInt32, reference: Int64) -> Int64 {
    if reference == .min { return Int64(frames) }
    let delta = Int32(bitPattern: frames &- UInt32(truncatingIfNeeded: reference))
    return reference + Int64(delta)
}

/// A queue's realtime view of its JACK client: plain memory, allocated before the
/// client is activated and freed after it is closed.
struct JackClientRealtime: ~Copyable {
    let client: OpaquePointer
    let isOutput: Bool
    let portCount: Int
    let ports: UnsafeMutablePointer<OpaquePointer?>
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let frameReference: UnsafeMutablePointer<Atomic<Int64>>
    /// The engine's entry (a `ProcessorRecord`), swapped by control threads.
    let processor = Atomic<UnsafeMutableRawPointer?>(nil)
    /// 1 while a cycle runs the entry: the handshake that lets `setProcessor(nil)` wait it out.
    let inCycle = Atomic<Int>(0)
    /// Cycles run so far (the check that the server runs the client at all).
    let cyclesRun = Atomic<Int>(0)
    /// The ports are registered: until then a cycle only counts itself (they are registered
    /// once the server has run the client, so a client it never runs shows no port).
    let portsReady = Atomic<Bool>(false)
    let freewheeling = Atomic<Bool>(false)
    let shutDown = Atomic<Bool>(false)
    /// The `jack_status_t` the shutdown callback gave (its reason), stored before `shutDown`.
    let shutdownStatus = Atomic<UInt32>(0)
    let xruns = Atomic<Int>(0)
    let rateChanges = Atomic<Int>(0)
    let freewheelChanges = Atomic<Int>(0)
}

struct ProcessorRecord {
    let context: UnsafeMutableRawPointer
    let entry: RealtimeEntry
}

// MARK: JACK callbacks (global, non-isolated functions: JACK calls them on its threads)

/// The process trampoline: port buffers and frame time from libjack, then the engine's entry.
private func jackProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    guard rt.pointee.portsReady.load(ordering: .acquiring) else {
        rt.pointee.cyclesRun.wrappingAdd(1, ordering: .relaxed)
        return 0
    }
    let n = Int(frameCount)
    for p in 0..<rt.pointee.portCount {
        rt.pointee.buffers[p] = jack_port_get_buffer(rt.pointee.ports[p], frameCount).assumingMemoryBound(to: Float.self)
    }
    rt.pointee.inCycle.store(1, ordering: .sequentiallyConsistent)
    if let raw = rt.pointee.processor.load(ordering: .sequentiallyConsistent) {
        let record = raw.assumingMemoryBound(to: ProcessorRecord.self)
        let reference = rt.pointee.frameReference.pointee.load(ordering: .relaxed)
        let frame = extendFrameTime(jack_last_frame_time(rt.pointee.client), reference: reference)
        if frame > reference {
            _ = rt.pointee.frameReference.pointee.compareExchange(expected: reference, desired: frame, ordering: .relaxed)
        }
        let freewheeling = rt.pointee.freewheeling.load(ordering: .relaxed)
        record.pointee.entry(record.pointee.context, frame, Int32(n), UnsafePointer(rt.pointee.buffers),
                             freewheeling, freewheeling)
    } else if rt.pointee.isOutput {
        for p in 0..<rt.pointee.portCount { rt.pointee.buffers[p].update(repeating: 0, count: n) }
    }
    rt.pointee.inCycle.store(0, ordering: .sequentiallyConsistent)
    rt.pointee.cyclesRun.wrappingAdd(1, ordering: .relaxed)
    return 0
}

/// Runs on the client's process thread before its first cycle. On a server without realtime
/// scheduling (`jackd --no-realtime`, a desktop without rtprio) that thread is an ordinary one,
/// and every other thread of the machine (the queue's own, the writer's, a compiler) may
/// preempt it mid-cycle: the server then names the client as late (an xrun). It is given the
/// priority the system allows (nice -10 with CAP_SYS_NICE or RLIMIT_NICE, else unchanged);
/// a realtime (SCHED_FIFO/RR) thread is left alone.
///
/// Nice is a share of the CPU, not a promptness: on Linux 6.12 and later (EEVDF) a thread that
/// wakes while another runs waits, whatever its nice, until the running one has used its slice
/// (1.4 ms here; a second busy thread per core doubles it), and on a 2-core machine a kernel
/// thread reclaiming memory, a process starting (`jaq record` while `jaq play`'s client runs) or
/// a compiler then makes a 5.3 ms cycle late. Measured with the record-format tests' take on an
/// idle 2-core machine: xruns in 12 of 20 runs before, 6 of 20 after, in the take 5 and 1; with
/// two busy loops beside it, 4 of 6 takes lost frames before, 2 of 12 after (Docs/testing.md,
/// "Xruns"). So the thread also asks for a short slice (`processThreadSliceNanoseconds`), which
/// makes it preempt threads with longer slices when it wakes; older kernels ignore it.
private func jackThreadInit(_ argument: UnsafeMutableRawPointer?) {
    guard sched_getscheduler(0) == SCHED_OTHER else { return }
    // PRIO_PROCESS with who 0 is the calling thread on Linux (nice is per thread).
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, -10)
    _ = jaq_thread_set_slice(processThreadSliceNanoseconds)
}

/// The scheduling slice a non-realtime process thread asks for (`jaq_thread_set_slice`): a
/// tenth of a 256-frame cycle at 48 kHz, well above what a cycle of jaq's needs (the kernel
/// allows 0.1 to 100 ms).
let processThreadSliceNanoseconds: UInt64 = 500_000

/// Shutdown: like a signal handler, only a flag and a semaphore post.
private func jackShutdown(_ code: jack_status_t, _ reason: UnsafePointer<CChar>?, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    rt.pointee.shutdownStatus.store(UInt32(code.rawValue), ordering: .relaxed)
    rt.pointee.shutDown.store(true, ordering: .releasing)
    JackEventWatcher.shared.signal.post()
}

private func jackXrun(_ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    argument.assumingMemoryBound(to: JackClientRealtime.self).pointee.xruns.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
    return 0
}

private func jackSampleRate(_ rate: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    argument.assumingMemoryBound(to: JackClientRealtime.self).pointee.rateChanges.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
    return 0
}

private func jackFreewheel(_ starting: Int32, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    rt.pointee.freewheeling.store(starting != 0, ordering: .relaxed)
    rt.pointee.freewheelChanges.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
}

/// Reports latency: a queue adds none of its own, so its output ports capture
/// nothing earlier than now ([0, 0]) and its input ports deliver to nobody later.
private func jackLatency(_ mode: jack_latency_callback_mode_t, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    var none = jack_latency_range_t(min: 0, max: 0)
    let ours = rt.pointee.isOutput ? JackCaptureLatency : JackPlaybackLatency
    guard mode == ours, rt.pointee.portsReady.load(ordering: .acquiring) else { return }
    for p in 0..<rt.pointee.portCount { jack_port_set_latency_range(rt.pointee.ports[p], mode, &none) }
}

// MARK: The device

/// One audio queue's JACK client with its ports.
final class JackDevice: AudioDevice, @unchecked Sendable {
    let driver: JackDriver
    let direction: DeviceDirection
    let layout: PortLayout
    private let lock = Locked(Inner())
    /// The lock every request a control thread sends the server on this client is made under
    /// (connection passes, rename, close), with the connections the client made itself.
    ///
    /// libjack writes a client's requests to the server's socket without a lock (jack2's
    /// JackGenericClientChannel::ServerSyncCall), so two threads asking at once interleave their
    /// bytes: the server reads a jack_connect made of one request's source and the other's
    /// destination (a queue's in_2 fed from capture_1), or both threads wait forever for their
    /// answers. Taken before `lock`, never inside it.
    private let requests = Locked(OwnConnections())

    struct Inner {
        var rt: UnsafeMutablePointer<JackClientRealtime>?
        var name = ""
        var processor: UnsafeMutablePointer<ProcessorRecord>?
        var handler: (@Sendable (DeviceEvent) -> Void)?
        var seenXruns = 0
        var seenRateChanges = 0
        var seenFreewheelChanges = 0
        var reportedShutdown = false
    }

    init(driver: JackDriver, name: String, direction: DeviceDirection, layout: PortLayout) throws {
        self.driver = driver
        self.direction = direction
        self.layout = layout
        let rt = try Self.openClient(driver: driver, name: name, direction: direction, layout: layout)
        let actual = String(cString: jack_get_client_name(rt.pointee.client))
        lock.withLock {
            $0.rt = rt
            $0.name = actual
        }
        JackEventWatcher.shared.add(self)
    }

    /// Opens, registers the ports, installs the callbacks and activates a client. A port
    /// registration or an activation that fails on a client that opened is tried again on a new
    /// client a few times: PipeWire's libjack (0.3.65) fails every later request of a client
    /// once another client's port vanished while it was binding it (CJack.c), though the
    /// server is fine and a new client gets through.
    private static func openClient(driver: JackDriver, name: String, direction: DeviceDirection,
                                   layout: PortLayout) throws -> UnsafeMutablePointer<JackClientRealtime> {
        var attempt = 1
        while true {
            do {
                return try openClientOnce(driver: driver, name: name, direction: direction, layout: layout,
                                          requiresCycle: attempt < 4)
            } catch let failure as ClientSetupFailure {
                guard attempt < 5 else { throw failure.error }
                attempt += 1
                HostClock.sleep(seconds: failure.retryAfter)
            }
        }
    }

    /// A client that opened but could not register its ports or activate.
    private struct ClientSetupFailure: Error {
        let error: QueueError
        /// How long to wait before the next attempt.
        var retryAfter = 0.005
    }

    private static func openClientOnce(driver: JackDriver, name: String, direction: DeviceDirection,
                                       layout: PortLayout, requiresCycle: Bool) throws -> UnsafeMutablePointer<JackClientRealtime> {
        var status = jack_status_t(0)
        let limit = Int(jack_client_name_size()) - 1
        let clientName = String(name.prefix(max(limit, 1)))
        guard let client = jaq_jack_client_open(clientName, JackNoStartServer, &status, driver.serverName) else {
            let environment = getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) } ?? ""
            let server = driver.serverName ?? environment
            let which = server.isEmpty ? "the default JACK server" : "JACK server \"\(server)\""
            throw QueueError.invalidDevice("cannot open a client on \(which): \(JackError(status))")
        }
        if JackCycleClock.serverIsFreewheeling(client) {
            jack_client_close(client)
            throw QueueError.invalidDevice(JackFreewheelError().description)
        }
        let portCount = layout.names.count
        let ports = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: portCount)
        ports.initialize(repeating: nil, count: portCount)
        let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(portCount, 1))
        let rt = UnsafeMutablePointer<JackClientRealtime>.allocate(capacity: 1)
        rt.initialize(to: JackClientRealtime(
            client: client, isOutput: direction == .output, portCount: portCount, ports: ports, buffers: buffers,
            frameReference: driver.frameReference))
        // The shared device time starts from this server's frame time: the cycle clock where the
        // server reports one (jackd2 does for any client); PipeWire's reports nothing before the
        // client's first cycle (and its jack_frame_time is not a frame time then), so there the
        // first cycle sets it.
        if driver.frameReference.pointee.load(ordering: .relaxed) == .min, let clock = JackCycleClock.read(client) {
            _ = driver.frameReference.pointee.compareExchange(
                expected: .min, desired: Int64(clock.frames), ordering: .relaxed)
        }
        let argument = UnsafeMutableRawPointer(rt)
        jack_set_process_callback(client, jackProcess, argument)
        jack_set_thread_init_callback(client, jackThreadInit, nil)
        jack_on_info_shutdown(client, jackShutdown, argument)
        jack_set_xrun_callback(client, jackXrun, argument)
        jack_set_sample_rate_callback(client, jackSampleRate, argument)
        jack_set_freewheel_callback(client, jackFreewheel, argument)
        jack_set_latency_callback(client, jackLatency, argument)
        guard jack_activate(client) == 0 else {
            jack_client_close(client)
            Self.free(rt)
            throw ClientSetupFailure(error: .invalidDevice("cannot activate JACK client \(clientName)"))
        }
        // PipeWire's libjack reports no clock until the client's first cycle: wait for it, so
        // device time is valid as soon as the queue exists (jackd2 reports it at once).
        var waited = 0.0
        while JackCycleClock.read(client)?.isCurrent != true && waited < 2 && !rt.pointee.shutDown.load(ordering: .acquiring) {
            HostClock.sleep(seconds: 0.001)
            waited += 0.001
        }
        // jackd 1.9.21 sometimes never runs a client it has activated: it logs the client as
        // triggered and not finished every cycle, for good (seen when a client of the same name
        // had just left the server). Its first cycle comes within a few periods otherwise: a
        // client that has none in a second is opened again (the last attempt is kept as it is).
        if requiresCycle && !JackLibrary.isPipeWire {
            let deadline = Deadline.after(seconds: 1)
            while rt.pointee.cyclesRun.load(ordering: .relaxed) == 0 && !deadline.hasPassed
                    && !rt.pointee.shutDown.load(ordering: .acquiring) {
                HostClock.sleep(seconds: 0.001)
            }
            if rt.pointee.cyclesRun.load(ordering: .relaxed) == 0 && !rt.pointee.shutDown.load(ordering: .acquiring) {
                jack_deactivate(client)
                jack_client_close(client)
                Self.free(rt)
                // Long enough for the server to have let go of this client's name.
                throw ClientSetupFailure(error: .invalidDevice("the JACK server ran no cycle of client \(clientName)"), retryAfter: 0.25)
            }
        }
        let flags = UInt(direction == .output ? JackPortIsOutput.rawValue : JackPortIsInput.rawValue)
        for (i, short) in layout.names.enumerated() {
            ports[i] = jack_port_register(client, short, jaq_jack_default_audio_type(), flags, 0)
            if ports[i] == nil {
                jack_deactivate(client)
                jack_client_close(client)
                Self.free(rt)
                throw ClientSetupFailure(error: .invalidDevice("cannot register JACK port \(short)"))
            }
        }
        rt.pointee.portsReady.store(true, ordering: .releasing)
        return rt
    }

    private static func free(_ rt: UnsafeMutablePointer<JackClientRealtime>) {
        rt.pointee.ports.deallocate()
        rt.pointee.buffers.deallocate()
        rt.deinitialize(count: 1)
        rt.deallocate()
    }

    private var rt: UnsafeMutablePointer<JackClientRealtime>? { lock.withLock { $0.rt } }

    var sampleRate: Double {
        guard let rt else { return 48000 }
        return Double(jack_get_sample_rate(rt.pointee.client))
    }

    var periodFrames: Int {
        guard let rt else { return 256 }
        return Int(jack_get_buffer_size(rt.pointee.client))
    }

    var clientName: String { lock.withLock { $0.name } }

    var portNames: [String] {
        let name = clientName
        return layout.names.map { "\(name):\($0)" }
    }

    var isFreewheeling: Bool { rt?.pointee.freewheeling.load(ordering: .relaxed) ?? false }

    var isAlive: Bool {
        guard let rt else { return false }
        return !rt.pointee.shutDown.load(ordering: .acquiring)
    }

    func setProcessor(_ processor: RealtimeProcessor?) {
        var record: UnsafeMutablePointer<ProcessorRecord>?
        if let processor {
            record = .allocate(capacity: 1)
            record!.initialize(to: ProcessorRecord(context: processor.context, entry: processor.entry))
        }
        let (rt, old) = lock.withLock { inner -> (UnsafeMutablePointer<JackClientRealtime>?, UnsafeMutablePointer<ProcessorRecord>?) in
            let old = inner.processor
            inner.processor = record
            return (inner.rt, old)
        }
        if let rt {
            rt.pointee.processor.store(record.map { UnsafeMutableRawPointer($0) }, ordering: .sequentiallyConsistent)
            waitForCycleEnd(rt)
        }
        if let old {
            old.deinitialize(count: 1)
            old.deallocate()
        }
    }

    /// Waits until no cycle is inside the old entry (a few periods at most).
    private func waitForCycleEnd(_ rt: UnsafeMutablePointer<JackClientRealtime>) {
        var waited = 0.0
        while rt.pointee.inCycle.load(ordering: .sequentiallyConsistent) != 0 && waited < 10 {
            if rt.pointee.shutDown.load(ordering: .acquiring) { break }
            HostClock.sleep(seconds: 0.0005)
            waited += 0.0005
        }
    }

    /// One connection between a port of this client (by index) and another client's port.
    struct Connection: Equatable {
        let port: Int
        let other: String
    }

    /// The connections a client made itself: the only ones a connection pass removes.
    struct OwnConnections {
        var made: [Connection] = []
    }

    /// Connects the ports as `target` plans, and removes the connections this client made
    /// itself that the plan does not keep. A connection someone else made (jack_connect, a
    /// patchbay, a DAW) is never removed, not even one joining the same ports as the plan: it is
    /// theirs. A connection the plan keeps and that is still there is left alone (no gap).
    func connect(to target: String) throws -> [String] {
        try requests.withLock { own in
            guard let rt, isAlive else { throw QueueError.queueInvalidated }
            let client = rt.pointee.client
            let wantInputs = direction == .output
            let kind = UInt(wantInputs ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue)
            let names = portNames
            let ours = Set(names)
            let candidates = Self.portList(client, flags: kind).filter { !ours.contains($0) }
            let physical = Self.portList(client, flags: kind | UInt(JackPortIsPhysical.rawValue))
            let targets = try PortMatcher.resolve(target, candidates: candidates, physical: physical)
            let plan = PortMatcher.plan(portCount: layout.names.count, targets: targets, monoPair: layout.isMonoPair)
            let wanted = plan.map { Connection(port: $0.port, other: $0.target) }
            // (source, destination) of a connection, output port first.
            func ends(_ connection: Connection) -> (String, String) {
                wantInputs ? (names[connection.port], connection.other) : (connection.other, names[connection.port])
            }
            var kept: [Connection] = []
            for connection in own.made {
                if wanted.contains(connection) {
                    // Kept if it is still there (someone may have removed it meanwhile).
                    if jack_port_connected_to(rt.pointee.ports[connection.port], connection.other) != 0 { kept.append(connection) }
                } else {
                    let (source, destination) = ends(connection)
                    // A failure means it is gone already: removed by someone else, or its port left.
                    _ = jack_disconnect(client, source, destination)
                }
            }
            own.made = kept
            for connection in wanted where !kept.contains(connection) {
                let (source, destination) = ends(connection)
                let result = Self.connectPorts(client, source, destination)
                if result == 0 {
                    own.made.append(connection)
                } else if result != EEXIST {
                    throw QueueError.invalidDevice("cannot connect \(source) to \(destination)")
                }
                // EEXIST: someone else made this connection; it stays theirs.
            }
            return Array(Set(plan.map { $0.target })).sorted()
        }
    }

    /// `jack_connect`, patient with a client that is still starting: JACK2 refuses to connect
    /// ports whose owner has registered them but not yet activated (ecasound, for one, does
    /// that for a moment), so a refusal is retried for up to `patience` seconds while both
    /// ports exist. Returns jack_connect's result (0 or EEXIST on success).
    static func connectPorts(_ client: OpaquePointer, _ source: String, _ destination: String, patience: Double = 2) -> Int32 {
        var result = jack_connect(client, source, destination)
        var waited = 0.0
        while result != 0 && result != EEXIST && waited < patience,
              jack_port_by_name(client, source) != nil, jack_port_by_name(client, destination) != nil {
            HostClock.sleep(seconds: 0.02)
            waited += 0.02
            result = jack_connect(client, source, destination)
        }
        return result
    }

    /// The names of the ports `port` is connected to.
    static func connections(of port: OpaquePointer?, in client: OpaquePointer) -> [String] {
        guard let port else { return [] }
        return names(jack_port_get_all_connections(client, port))
    }

    /// Port names the server lists for `flags` (audio ports only).
    static func portList(_ client: OpaquePointer, flags: UInt) -> [String] {
        names(jack_get_ports(client, nil, jaq_jack_default_audio_type(), flags))
    }

    /// The names of a NULL-terminated list libjack allocated; frees it.
    private static func names(_ list: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String] {
        guard let list else { return [] }
        defer { jack_free(list) }
        var names: [String] = []
        var i = 0
        while let name = list[i] {
            names.append(String(cString: name))
            i += 1
        }
        return names
    }

    /// The server's cycle clock with its frame extended to 64 bits; nil before the first cycle
    /// on PipeWire (see `JackCycleClock`).
    private func cycleClock() -> (clock: JackCycleClock, frame: Int64)? {
        guard let rt, let clock = JackCycleClock.read(rt.pointee.client) else { return nil }
        return (clock, extendFrameTime(clock.frames, reference: driver.frameReference.pointee.load(ordering: .relaxed)))
    }

    /// The frame the last cycle began on, for when the server has no clock to report yet.
    private var lastCycleFrame: Int64 {
        let reference = driver.frameReference.pointee.load(ordering: .relaxed)
        return reference == .min ? 0 : reference
    }

    // Device time. On jackd2, libjack's own conversions (correct there, and what every other
    // client of the server computes, in freewheel too), moved onto CLOCK_MONOTONIC; on PipeWire,
    // jaq's from the cycle times, as its conversions are wrong (see JackCycleClock).

    func currentFrame() -> Int64 {
        guard let rt else { return 0 }
        guard JackLibrary.isPipeWire else {
            return extendFrameTime(jack_frame_time(rt.pointee.client), reference: driver.frameReference.pointee.load(ordering: .relaxed))
        }
        return frame(forHostTime: HostClock.nanoseconds())
    }

    func hostTime(forFrame frame: Int64) -> UInt64 {
        guard let rt else { return HostClock.nanoseconds() }
        guard JackLibrary.isPipeWire else {
            let usecs = jack_frames_to_time(rt.pointee.client, UInt32(truncatingIfNeeded: frame))
            return UInt64(bitPattern: (Int64(bitPattern: usecs) &+ JackCycleClock.hostOffsetMicroseconds()) &* 1000)
        }
        guard let (clock, cycleFrame) = cycleClock() else { return HostClock.nanoseconds() }
        return clock.hostTime(atFrameOffset: frame - cycleFrame)
    }

    func frame(forHostTime hostTime: UInt64) -> Int64 {
        guard let rt else { return 0 }
        guard JackLibrary.isPipeWire else {
            let usecs = Int64(bitPattern: hostTime / 1000) &- JackCycleClock.hostOffsetMicroseconds()
            let frames = jack_time_to_frames(rt.pointee.client, jack_time_t(bitPattern: usecs))
            return extendFrameTime(frames, reference: driver.frameReference.pointee.load(ordering: .relaxed))
        }
        guard let (clock, cycleFrame) = cycleClock() else { return lastCycleFrame }
        return cycleFrame + clock.frameOffset(atHostTime: hostTime)
    }

    func portLatency(_ index: Int) -> ClosedRange<Int> {
        guard let rt, index >= 0, index < rt.pointee.portCount else { return 0...0 }
        var range = jack_latency_range_t(min: 0, max: 0)
        jack_port_get_latency_range(rt.pointee.ports[index],
                                    direction == .input ? JackCaptureLatency : JackPlaybackLatency, &range)
        return Int(range.min)...Int(max(range.min, range.max))
    }

    func synchronize(isApplied: () -> Bool, applyDirectly: () -> Void) {
        guard let rt else { return applyDirectly() }
        var waited = 0.0
        let period = Double(periodFrames) / sampleRate
        let limit = max(0.5, 20 * period)
        while !isApplied() {
            if rt.pointee.shutDown.load(ordering: .acquiring) || waited >= limit {
                // No cycle is coming (server gone or stalled): take the commands here,
                // with the entry detached so no cycle can run it meanwhile.
                let record = rt.pointee.processor.exchange(nil, ordering: .sequentiallyConsistent)
                waitForCycleEnd(rt)
                if !isApplied() { applyDirectly() }
                rt.pointee.processor.store(record, ordering: .sequentiallyConsistent)
                return
            }
            HostClock.sleep(seconds: 0.0005)
            waited += 0.0005
        }
    }

    func setEventHandler(_ handler: (@Sendable (DeviceEvent) -> Void)?) {
        lock.withLock { $0.handler = handler }
    }

    /// Reopens the client as `name`. The connections others made to its ports are made again
    /// to the new ports (and stay theirs); the caller reconnects the queue's own.
    func rename(to name: String) throws {
        try requests.withLock { own in
            guard let old = rt else { throw QueueError.queueInvalidated }
            let record = lock.withLock { $0.processor }
            let theirs = (0..<old.pointee.portCount).flatMap { port in
                Self.connections(of: old.pointee.ports[port], in: old.pointee.client)
                    .filter { !own.made.contains(Connection(port: port, other: $0)) }
                    .map { Connection(port: port, other: $0) }
            }
            let replacement = try Self.openClient(driver: driver, name: name, direction: direction, layout: layout)
            let newName = String(cString: jack_get_client_name(replacement.pointee.client))
            for connection in theirs {
                let mine = newName + ":" + layout.names[connection.port]
                _ = direction == .output ? jack_connect(replacement.pointee.client, mine, connection.other)
                    : jack_connect(replacement.pointee.client, connection.other, mine)
            }
            replacement.pointee.processor.store(record.map { UnsafeMutableRawPointer($0) }, ordering: .sequentiallyConsistent)
            old.pointee.processor.store(nil, ordering: .sequentiallyConsistent)
            waitForCycleEnd(old)
            jack_deactivate(old.pointee.client)
            jack_client_close(old.pointee.client)
            Self.free(old)
            own.made = []  // the new client has made none yet
            lock.withLock {
                $0.rt = replacement
                $0.name = newName
            }
        }
    }

    func close() {
        JackEventWatcher.shared.remove(self)
        requests.withLock { own in
            guard let rt = lock.withLock({ inner -> UnsafeMutablePointer<JackClientRealtime>? in
                let rt = inner.rt
                inner.rt = nil
                return rt
            }) else { return }
            own.made = []
            rt.pointee.processor.store(nil, ordering: .sequentiallyConsistent)
            waitForCycleEnd(rt)
            if !rt.pointee.shutDown.load(ordering: .acquiring) { jack_deactivate(rt.pointee.client) }
            jack_client_close(rt.pointee.client)
            Self.free(rt)
        }
        lock.withLock { inner in
            if let record = inner.processor {
                record.deinitialize(count: 1)
                record.deallocate()
                inner.processor = nil
            }
        }
    }

    /// Turns the flags the callbacks set into device events (watcher thread).
    func reportEvents() {
        let (handler, events): ((@Sendable (DeviceEvent) -> Void)?, [DeviceEvent]) = lock.withLock { inner in
            guard let rt = inner.rt else { return (nil, []) }
            var events: [DeviceEvent] = []
            let xruns = rt.pointee.xruns.load(ordering: .relaxed)
            for _ in inner.seenXruns..<max(inner.seenXruns, xruns) { events.append(.xrun) }
            inner.seenXruns = xruns
            let rates = rt.pointee.rateChanges.load(ordering: .relaxed)
            if rates != inner.seenRateChanges {
                inner.seenRateChanges = rates
                events.append(.sampleRateChanged(Double(jack_get_sample_rate(rt.pointee.client))))
            }
            let freewheels = rt.pointee.freewheelChanges.load(ordering: .relaxed)
            if freewheels != inner.seenFreewheelChanges {
                inner.seenFreewheelChanges = freewheels
                events.append(.freewheel(rt.pointee.freewheeling.load(ordering: .relaxed)))
            }
            if rt.pointee.shutDown.load(ordering: .acquiring) && !inner.reportedShutdown {
                inner.reportedShutdown = true
                let status = rt.pointee.shutdownStatus.load(ordering: .relaxed)
                events.append(.shutdown(reason: "the JACK server shut down" + (status == 0 ? "" : ": \(JackError(status: status))")))
            }
            return (inner.handler, events)
        }
        guard let handler else { return }
        for event in events { handler(event) }
    }
}

/// One thread per process that turns JACK's notifications (shutdown, xrun,
/// sample rate, freewheel) into device events, so JACK's threads only set flags.
final class JackEventWatcher: @unchecked Sendable {
    static let shared = JackEventWatcher()
    let signal = Semaphore()
    private let devices = Mutex<[ObjectIdentifier: JackDeviceBox]>([:])
    private let started = Mutex(false)

    struct JackDeviceBox: @unchecked Sendable { weak var device: JackDevice? }

    func add(_ device: JackDevice) {
        devices.withLock { $0[ObjectIdentifier(device)] = JackDeviceBox(device: device) }
        let first = started.withLock { running -> Bool in
            defer { running = true }
            return !running
        }
        if first {
            var thread = pthread_t()
            let result = pthread_create(&thread, nil, { _ in
                JackEventWatcher.shared.run()
                return nil
            }, nil)
            if result == 0 { pthread_detach(thread) }
        }
    }

    func remove(_ device: JackDevice) {
        _ = devices.withLock { $0.removeValue(forKey: ObjectIdentifier(device)) }
    }

    private func run() {
        while true {
            signal.wait(timeout: 0.25)
            let live = devices.withLock { $0.values.compactMap { $0.device } }
            for device in live { device.reportEvents() }
        }
    }
}

/// libjack prints its errors and notices to stderr ("Cannot connect to server socket...").
/// A queue reports failures as result codes instead, so those messages are kept quiet
/// unless JAQ_JACK_VERBOSE is set. (The handlers do nothing: libjack may call them from a
/// client's process thread, which must not lock or allocate.)
public enum JackMessages {
    private static let installed = Mutex(false)

    /// Installs the handlers once per process.
    public static func install() {
        let first = installed.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        if getenv("JAQ_JACK_VERBOSE") != nil { return }
        jack_set_error_function { _ in }
        jack_set_info_function { _ in }
    }

    /// For a command-line program, whose stderr is its user's: also keeps quiet what the
    /// libraries under libjack write straight to stderr while a client opens (libdb's
    /// "/dev/shm/jack_db-0/__db.002: No such file or directory" when a stopping server removes
    /// the metadata database as this process opens it; PipeWire's log lines): the C library's
    /// `stderr` stream goes to /dev/null for the duration of each open, fd 2 stays (jaq writes
    /// its own lines there). Not for a library: a program's stderr is its own.
    /// JAQ_JACK_VERBOSE leaves everything audible.
    public static func quietOpens() {
        if getenv("JAQ_JACK_VERBOSE") != nil { return }
        jaq_jack_set_quiet_open(1)
    }
}
