import CJack
import Glibc
import JackCommon
import QueueCore
import Synchronization

/// A port as the server lists it.
public struct JackPortInfo: Sendable, Equatable {
    public var name: String
    public var isInput: Bool
    public var isPhysical: Bool
    public var type: String
    /// Capture latency range (frames): how long ago what the port carries was captured.
    public var captureLatency: ClosedRange<Int>
    /// Playback latency range (frames): how long until what the port carries is heard.
    public var playbackLatency: ClosedRange<Int>
    public var connections: [String]
}

/// Why a port name or pattern named no port.
public struct JackPortMatchError: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }
}

/// A JACK client for queries and control that owns no audio: port listing,
/// server time, transport. `jaq` uses it for `ports`, `time` and transport starts.
public final class JackSession: @unchecked Sendable {
    let client: OpaquePointer
    public let serverName: String?
    private let watcher: UnsafeMutablePointer<TransportWatch>
    private let connectionWatch: UnsafeMutablePointer<ConnectionWatch>
    /// The relocations lost by the last `transportRelocations` (its caller's thread only).
    private var relocationsLostSeen = 0
    /// Whether the client takes part in cycles (it follows the transport, or PipeWire needed it).
    private let isActive: Mutex<Bool>

    /// Opens a control client; throws `.invalidDevice` if no server runs, `JackFreewheelError`
    /// if jackd freewheels (it would run no client that joins now).
    /// - Parameter watchTransport: also follow the transport cycle by cycle (`transportChanges`);
    ///   this makes the client take part in every JACK cycle, so only ask when needed.
    public init(serverName: String?, clientName: String = "jaq-ctl", watchTransport: Bool = false) throws {
        JackMessages.install()
        if let stuck = JackClients.stuckReason { throw QueueError.invalidDevice(stuck) }
        var status = jack_status_t(0)
        guard let client = JackClients.open(clientName, JackNoStartServer, &status, serverName) else {
            let which = serverName.map { "JACK server \"\($0)\"" } ?? "the JACK server"
            throw QueueError.invalidDevice("cannot open a client on \(which): \(JackError(status))")
        }
        if JackCycleClock.serverIsFreewheeling(client) {
            JackClients.close(client, serverGone: false)
            throw JackFreewheelError()
        }
        self.client = client
        self.serverName = serverName
        watcher = .allocate(capacity: 1)
        watcher.initialize(to: TransportWatch(client: client))
        connectionWatch = .allocate(capacity: 1)
        connectionWatch.initialize(to: ConnectionWatch(client: client))
        jack_on_info_shutdown(client, sessionShutdown, UnsafeMutableRawPointer(connectionWatch))
        isActive = Mutex(watchTransport)
        if watchTransport {
            jack_set_process_callback(client, transportProcess, UnsafeMutableRawPointer(watcher))
            jack_activate(client)
        }
    }

    /// Makes sure the server reports its clock and transport to this client, and waits (up to
    /// `timeout` seconds) until it does. jackd2 reports them to any client; PipeWire's libjack
    /// only to one that runs cycles (before that its clock reads 0 and its transport calls are
    /// ignored), so there the client is activated, with no ports, on first need.
    /// - Returns: the cycle clock, or nil if the server ran no cycle within `timeout`.
    @discardableResult
    public func waitForClock(timeout: Double = 2) -> JackCycleClock? {
        if let clock = JackCycleClock.read(client), clock.isCurrent { return clock }
        isActive.withLock { active in
            guard !active else { return }
            jack_set_process_callback(client, idleProcess, nil)
            active = jack_activate(client) == 0
        }
        var waited = 0.0
        while waited < timeout {
            if let clock = JackCycleClock.read(client), clock.isCurrent { return clock }
            HostClock.sleep(seconds: 0.002)
            waited += 0.002
        }
        // A server whose cycles stall (a stopped jackd, a loaded machine): its last cycle is
        // still the best there is.
        return JackCycleClock.read(client)
    }

    /// The server's frame time now (32 bits): jackd2's `jack_frame_time`; under PipeWire from
    /// the cycle clock (see `JackCycleClock`); throws `.invalidDevice` if PipeWire runs no cycles.
    public var frameTime: UInt32 {
        get throws {
            // jackd2's own jack_frame_time is right for any client (and in freewheel).
            guard JackLibrary.isPipeWire else { return jack_frame_time(client) }
            guard let clock = waitForClock() else {
                throw QueueError.invalidDevice("the JACK server reports no frame time (it runs no cycles: "
                    + (JackLibrary.isPipeWire ? "PipeWire has no driver node for its JACK clients)" : "is it stalled?)"))
            }
            return clock.frameNow
        }
    }

    deinit {
        let (watcher, connectionWatch) = (watcher, connectionWatch)
        // After the server went away libjack's close can hang for ever: bounded (JackClients).
        JackClients.close(client, serverGone: connectionWatch.pointee.shutDown.load(ordering: .acquiring)) {
            watcher.deinitialize(count: 1)
            watcher.deallocate()
            connectionWatch.deinitialize(count: 1)
            connectionWatch.deallocate()
        }
    }

    /// Whether the client is active for `watchConnections` (and for nothing else).
    private var watchesConnections = false

    /// Has jackd2 report connection changes to this client (`connectionChanges`), posting
    /// `wake` at each, until `stopWatchingConnections`. The client is activated with no process
    /// callback: it joins no cycle, and gets the notifications (libjack calls callbacks of
    /// active clients only, and takes them only before activation; the server sends them to a
    /// client from the moment it has the callback, which is why it is set here and not at the
    /// session's opening: each costs the client's notification thread about 50 µs).
    /// - Returns: false if changes are not reported: the client is active already (it follows
    ///   the transport), the server is PipeWire (there an active client runs every cycle), or
    ///   the activation failed.
    public func watchConnections(wake: UnsafeMutablePointer<sem_t>?) -> Bool {
        guard !JackLibrary.isPipeWire else { return false }
        connectionWatch.pointee.wake.store(UInt(bitPattern: wake), ordering: .releasing)
        return isActive.withLock { active in
            guard !active else { return false }
            jack_set_port_connect_callback(client, sessionPortConnect, UnsafeMutableRawPointer(connectionWatch))
            active = jack_activate(client) == 0
            if !active { jack_set_port_connect_callback(client, nil, nil) }
            watchesConnections = active
            return active
        }
    }

    /// Ends `watchConnections`: the client is deactivated and the server sends it no more
    /// changes (call it before many connections go at once, as when a queue of 64 ports closes).
    public func stopWatchingConnections() {
        isActive.withLock { active in
            guard watchesConnections, active else { return }
            jack_deactivate(client)
            jack_set_port_connect_callback(client, nil, nil)
            active = false
            watchesConnections = false
        }
        connectionWatch.pointee.wake.store(0, ordering: .releasing)
    }

    /// The connection changes reported so far (`watchConnections`), and the server's frame time
    /// (32 bits) of the first one since the last call, if any.
    public func connectionChanges() -> (count: Int, firstFrame: UInt32?) {
        let count = connectionWatch.pointee.changes.load(ordering: .acquiring)
        let first = connectionWatch.pointee.firstChangeFrame.exchange(0, ordering: .relaxed)
        return (count, first == 0 ? nil : UInt32(truncatingIfNeeded: first - 1))
    }

    /// True if a server answers (with no client left behind).
    public static func isServerRunning(_ serverName: String?) -> Bool {
        JackMessages.install()
        var status = jack_status_t(0)
        // libjack cannot open a client now (JackClients): say so at the open that follows.
        if JackClients.stuckReason != nil { return true }
        guard let client = JackClients.open("jaq-probe", JackNoStartServer, &status, serverName) else { return false }
        JackClients.close(client, serverGone: false)
        return true
    }

    /// Whether the server freewheels now (see `JackCycleClock.serverIsFreewheeling`): why a
    /// queue's client that the server refused may have been refused.
    public var isServerFreewheeling: Bool { JackCycleClock.serverIsFreewheeling(client) }

    public var sampleRate: Double { Double(jack_get_sample_rate(client)) }
    public var periodFrames: Int { Int(jack_get_buffer_size(client)) }

    /// The ports among `candidates` that `target` names — a port name, a regular expression,
    /// or "system" (the `physical` ones) — in natural order, as a queue's CurrentDevice takes them.
    /// - Throws: `JackPortMatchError` with the reason if none matches.
    public static func resolvePorts(_ target: String, candidates: [String], physical: [String]) throws(JackPortMatchError) -> [String] {
        do {
            return try PortMatcher.resolve(target, candidates: candidates, physical: physical)
        } catch QueueError.invalidDevice(let reason) {
            throw JackPortMatchError(reason: reason)
        } catch {
            throw JackPortMatchError(reason: "\(error)")
        }
    }

    /// The names of the audio outputs (or inputs), only the physical ones if asked, sorted
    /// naturally: one list from the server, without `ports()`'s look-up of every port by name
    /// (each compared with every port's), latencies and connections.
    public func audioPortNames(inputs: Bool, physicalOnly: Bool = false) -> [String] {
        let direction = inputs ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue
        let flags = UInt(direction | (physicalOnly ? JackPortIsPhysical.rawValue : 0))
        return PortMatcher.naturalSorted(JackPorts.list(client, flags: flags))
    }

    /// Every port, sorted naturally, with its latencies and connections.
    public func ports(matching pattern: String? = nil) -> [JackPortInfo] {
        let names = JackPorts.list(client, flags: 0)
        return PortMatcher.naturalSorted(names).compactMap { name -> JackPortInfo? in
            guard let port = jack_port_by_name(client, name) else { return nil }
            let flags = jack_port_flags(port)
            var capture = jack_latency_range_t(min: 0, max: 0)
            var playback = jack_latency_range_t(min: 0, max: 0)
            jack_port_get_latency_range(port, JackCaptureLatency, &capture)
            jack_port_get_latency_range(port, JackPlaybackLatency, &playback)
            let connections = connectionNames(port)
            let type = jack_port_type(port).map { String(cString: $0) } ?? ""
            return JackPortInfo(
                name: name, isInput: flags & Int32(JackPortIsInput.rawValue) != 0,
                isPhysical: flags & Int32(JackPortIsPhysical.rawValue) != 0, type: type,
                captureLatency: Int(capture.min)...Int(max(capture.min, capture.max)),
                playbackLatency: Int(playback.min)...Int(max(playback.min, playback.max)),
                connections: connections)
        }
    }

    /// The names of the ports `port` is connected to.
    private func connectionNames(_ port: OpaquePointer) -> [String] { JackPorts.connections(of: port, in: client) }

    /// A port looked up once: `jack_port_by_name` compares the name with every port of the
    /// server, so a port asked about ten times a second is kept by its handle.
    public struct Port {
        let handle: OpaquePointer
        public let name: String
    }

    /// The port named `name`, if there is one now.
    public func port(named name: String) -> Port? {
        jack_port_by_name(client, name).map { Port(handle: $0, name: name) }
    }

    /// The names of the ports `port` is connected to (no search by name).
    public func connections(of port: Port) -> [String] { connectionNames(port.handle) }

    /// How many ports `port` is connected to (no names made).
    public func connectionCount(of port: Port) -> Int { Int(jack_port_connected(port.handle)) }

    /// Of the ports `names`, those that exist now, each with its connections: a lookup of
    /// those ports alone (no listing, sorting or latencies of every port), cheap enough to
    /// call ten times a second while recording.
    public func connections(ofPresent names: [String]) -> [String: [String]] {
        var result: [String: [String]] = [:]
        for name in names {
            guard let port = jack_port_by_name(client, name) else { continue }
            result[name] = connectionNames(port)
        }
        return result
    }

    /// The transport: rolling or not, and its frame.
    public func transport() -> (rolling: Bool, frame: UInt32) {
        if JackLibrary.isPipeWire { waitForClock() }
        var position = jack_position_t()
        let state = jack_transport_query(client, &position)
        return (state == JackTransportRolling, position.frame)
    }

    /// The transport as the current cycle began: rolling or not, its frame, and that cycle's
    /// device frame (JACK's frame time extended to 64 bits as `transportChanges` extends it):
    /// while it rolls, the transport frame of device frame `f` is `frame + (f - deviceFrame)`.
    public func transportPosition() -> (rolling: Bool, frame: UInt32, deviceFrame: Int64) {
        if JackLibrary.isPipeWire { waitForClock() }
        // The position is the transport's at the current cycle's first frame: read between two
        // readings of that frame that agree (a cycle that began during the read is read again).
        // jack_time_to_frames(position.usecs) would be off by a frame or two (the clock's filter).
        func cycleFrame() -> jack_nframes_t? {
            var frames: jack_nframes_t = 0
            var current: jack_time_t = 0
            var next: jack_time_t = 0
            var period: Float = 0
            return jack_get_cycle_times(client, &frames, &current, &next, &period) == 0 ? frames : nil
        }
        var position = jack_position_t()
        var state = jack_transport_query(client, &position)
        var cycle = jack_time_to_frames(client, position.usecs)
        for _ in 0..<8 {
            guard let before = cycleFrame() else { break }
            state = jack_transport_query(client, &position)
            if cycleFrame() == before {
                cycle = before
                break
            }
        }
        return (state == JackTransportRolling, position.frame,
                extendFrameTime(cycle, reference: DeviceTime.sharedReference.pointee.load(ordering: .relaxed)))
    }

    /// The device frame (32-bit frame time) of the first cycle in which the transport
    /// was seen rolling (`rolling` true) or stopped, after `after` changes; nil if none yet.
    /// `lastChangeFrame` is device time: JACK's 32-bit frame time extended to 64 bits as the
    /// process's queues extend it (the one place the wrap is handled).
    public func transportChanges() -> (count: Int, lastChangeFrame: Int64, rolling: Bool) {
        let frame32 = UInt32(truncatingIfNeeded: watcher.pointee.lastChangeFrame.load(ordering: .relaxed))
        let reference = DeviceTime.sharedReference.pointee.load(ordering: .relaxed)
        return (watcher.pointee.changes.load(ordering: .acquiring), extendFrameTime(frame32, reference: reference),
                watcher.pointee.rolling.load(ordering: .relaxed))
    }

    /// The device frame of the last cycle in which the transport was seen starting to roll
    /// (with `watchTransport`): a roll that has already stopped again by the time
    /// `transportChanges` is read is still known by its first frame. Extended to 64 bits as
    /// `transportChanges` extends its frame.
    public func lastTransportRollFrame() -> Int64 {
        let frame32 = UInt32(truncatingIfNeeded: watcher.pointee.lastRollFrame.load(ordering: .acquiring))
        return extendFrameTime(frame32, reference: DeviceTime.sharedReference.pointee.load(ordering: .relaxed))
    }

    /// The device frame of the last cycle in which the transport was seen stopping (with
    /// `watchTransport`): a stop that was followed by a new roll before `transportChanges` is
    /// read is still known by its frame. Extended to 64 bits as `transportChanges` extends its frame.
    public func lastTransportStopFrame() -> Int64 {
        let frame32 = UInt32(truncatingIfNeeded: watcher.pointee.lastStopFrame.load(ordering: .acquiring))
        return extendFrameTime(frame32, reference: DeviceTime.sharedReference.pointee.load(ordering: .relaxed))
    }

    /// Starts the transport rolling (`jack_transport_start`) and waits (up to `timeout` s) until
    /// it rolls, so a command that exits right after has had its effect.
    public func startTransport(timeout: Double = 1) {
        if JackLibrary.isPipeWire { waitForClock() }
        jack_transport_start(client)
        waitForTransport(timeout: timeout) { rolling, _ in rolling }
    }

    /// Stops the transport (`jack_transport_stop`) and waits (up to `timeout` s) until it stops.
    public func stopTransport(timeout: Double = 1) {
        if JackLibrary.isPipeWire { waitForClock() }
        jack_transport_stop(client)
        waitForTransport(timeout: timeout) { rolling, _ in !rolling }
    }

    /// Moves the transport to `frame` (`jack_transport_locate`) and waits (up to `timeout` s)
    /// until it is there. PipeWire takes the request from this client's own shared memory in a
    /// later cycle: a client that closed right after asking would lose it.
    public func locateTransport(_ frame: UInt32, timeout: Double = 1) {
        if JackLibrary.isPipeWire { waitForClock() }
        jack_transport_locate(client, frame)
        let period = UInt32(max(periodFrames, 1))
        waitForTransport(timeout: timeout) { rolling, now in
            rolling ? now &- frame < 64 &* period : now == frame
        }
    }

    private func waitForTransport(timeout: Double, until done: (_ rolling: Bool, _ frame: UInt32) -> Bool) {
        var waited = 0.0
        while waited < timeout {
            let state = transport()
            if done(state.rolling, state.frame) { return }
            HostClock.sleep(seconds: 0.002)
            waited += 0.002
        }
    }

    /// Connects two ports by name (output first).
    public func connect(_ source: String, _ destination: String) throws {
        let result = JackPorts.connect(client, source, destination)
        if result != 0 && result != EEXIST {
            throw QueueError.invalidDevice("cannot connect \(source) to \(destination)")
        }
    }
}

/// A jump of the transport while it rolled: from `deviceFrame` (frame time, 64 bits as
/// `transportChanges` gives it) on, the transport plays from `transportFrame`.
public struct TransportRelocation: Sendable, Equatable {
    public var deviceFrame: Int64
    public var transportFrame: UInt32
}

extension JackSession {
    /// The transport frame (position) the last roll started from (with `watchTransport`).
    public func lastTransportRollPosition() -> UInt32 {
        UInt32(truncatingIfNeeded: watcher.pointee.lastRollPosition.load(ordering: .acquiring))
    }

    /// Relocations of the rolling transport since the last call (with `watchTransport`), in
    /// order, and how many found no room before they were read (more than 64 between two calls).
    public func transportRelocations() -> (relocations: [TransportRelocation], lost: Int) {
        let watch = watcher
        let reference = DeviceTime.sharedReference.pointee.load(ordering: .relaxed)
        var relocations: [TransportRelocation] = []
        while let raw = watch.pointee.relocations.pop() {
            relocations.append(TransportRelocation(deviceFrame: extendFrameTime(raw.frame, reference: reference), transportFrame: raw.position))
        }
        let lost = watch.pointee.relocationsLost.load(ordering: .relaxed)
        defer { relocationsLostSeen = lost }
        return (relocations, lost &- relocationsLostSeen)
    }
}
