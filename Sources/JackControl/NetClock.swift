import CJack
import Glibc
import JackCommon
import QueueCore
import Synchronization

/// Why a clock client could not be opened or connected, in words.
public struct NetClockError: Error, CustomStringConvertible {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

// MARK: - The generator (`jaq clock`, on the master)

/// A JACK client with one output port, `<name>:clock`, that plays the server's frame clock
/// (`NetClockCode`). Connect it to a netjack2 slave's `to_slave_N` port.
///
/// Thread safety: create, connect and close from one thread; the process callback only reads
/// the frame time and writes the port's buffer.
public final class NetClockGenerator: @unchecked Sendable {
    private let state: UnsafeMutablePointer<NetClockGeneratorRealtime>
    /// The output port's full name.
    public let portName: String
    private var closed = false

    /// Opens the client on `serverName` (nil: the default server), registers its port and activates it.
    /// - Throws: `NetClockError` with the reason (no server, the name taken, …).
    public init(serverName: String?, clientName: String = "jaq-clock") throws {
        JackMessages.install()
        if let stuck = JackClients.stuckReason { throw NetClockError(stuck) }
        var status = jack_status_t(0)
        guard let client = JackClients.open(clientName, JackNullOption, &status, serverName) else {
            let which = serverName.map { "JACK server \"\($0)\"" } ?? "the JACK server"
            throw NetClockError("cannot open client \(clientName) on \(which): \(JackError(status))")
        }
        guard let port = jack_port_register(client, "clock", jaq_jack_default_audio_type(), UInt(JackPortIsOutput.rawValue), 0) else {
            JackClients.close(client, serverGone: false)
            throw NetClockError("cannot register \(clientName):clock")
        }
        portName = String(cString: jack_port_name(port))
        state = .allocate(capacity: 1)
        state.initialize(to: NetClockGeneratorRealtime(client: client, port: port))
        jack_set_process_callback(client, netClockGeneratorProcess, UnsafeMutableRawPointer(state))
        jack_on_shutdown(client, netClockShutdown, UnsafeMutableRawPointer(state))
        guard jack_activate(client) == 0 else {
            JackClients.close(client, serverGone: false)
            state.deinitialize(count: 1)
            state.deallocate()
            closed = true
            throw NetClockError("cannot activate \(clientName)")
        }
    }

    /// Connects the clock to the input ports `target` names (a port name or a regular expression).
    /// - Returns: the ports connected. - Throws: `JackPortMatchError` when none matches or one refuses.
    public func connect(to target: String) throws(JackPortMatchError) -> [String] {
        let client = state.pointee.client
        let candidates = JackPorts.list(client, flags: UInt(JackPortIsInput.rawValue))
        let physical = JackPorts.list(client, flags: UInt(JackPortIsInput.rawValue | JackPortIsPhysical.rawValue))
        let ports = try JackSession.resolvePorts(target, candidates: candidates, physical: physical)
        for port in ports {
            let result = JackPorts.connect(client, portName, port)
            guard result == 0 || result == EEXIST else { throw JackPortMatchError(reason: "cannot connect \(portName) to \(port)") }
        }
        return ports
    }

    /// Cycles played so far.
    public var cycles: Int { state.pointee.cycles.load(ordering: .relaxed) }
    /// True once the server shut the client down.
    public var isShutDown: Bool { state.pointee.shutDown.load(ordering: .relaxed) }

    /// Closes the client (idempotent).
    public func close() {
        guard !closed else { return }
        closed = true
        closeClockClient(state.pointee.client, state, serverGone: isShutDown)
    }

    deinit { close() }
}

// MARK: - The reader (`--clock PORT`, on a slave)

/// What the clock reader found, in the slave's own frames (32-bit JACK frame time).
public enum NetClockEvent: Equatable, Sendable {
    /// `frames` frames from `frame` on did not carry the clock they should (netjack2 lost packets
    /// and filled their frames from other cycles, or the clock stopped), then it went on where it should.
    case gap(frame: UInt32, frames: Int)
    /// From `frame` on the clock runs `by` frames off where it ran before (the master's server or
    /// the network restarted); the reader follows the new clock.
    case jump(frame: UInt32, by: Int32)
}

/// Reads a netjack2 master's frame clock (`NetClockGenerator`) from a port on a slave: a JACK
/// client with one input port connected to it, whose process callback checks every sample of
/// every cycle against the clock it locked on (a compare a sample) and reports what broke.
///
/// Thread safety: create, read and close from one thread (the CLI's main loop); the process
/// callback writes the published state and the event ring (single producer, single consumer).
public final class NetClockReader: @unchecked Sendable {
    private let state: UnsafeMutablePointer<NetClockReaderRealtime>
    /// The port read (its full name).
    public let source: String
    private var closed = false

    /// Opens the client on `serverName`, connects its input to the output port `port` names
    /// (a name or a regular expression naming one port) and starts reading.
    ///
    /// jackd 1.9.21 sometimes never runs a client it has activated: it logs the client as
    /// triggered and not finished, and the server's graph waits on it (netjack2's slave logs
    /// "Process error" every cycle). Seen when a client of the same name had just left: `jaq time
    /// --clock` then `jaq play --clock` on a netjack2 slave, in 6 of 11 full test runs. A reader
    /// that runs no cycle within a second is closed and opened again (up to `openAttempts`
    /// times, the last kept as it is), as a queue's client is (JackDevice+Client.swift).
    /// - Throws: `NetClockError` with the reason: no server, no such port, more than one.
    public init(serverName: String?, port: String, clientName: String = "jaq-clock-in") throws {
        JackMessages.install()
        var attempt = 1
        while true {
            let opened = try Self.open(serverName: serverName, port: port, clientName: clientName)
            if attempt == Self.openAttempts || Self.runsCycles(opened.state, within: 1) {
                state = opened.state
                source = opened.source
                return
            }
            closeClockClient(opened.state.pointee.client, opened.state, serverGone: false)
            attempt += 1
            // Long enough for the server to have let go of this client's name.
            HostClock.sleep(seconds: 0.25)
        }
    }

    /// Opens of a reader that runs no cycle, the last one kept.
    static let openAttempts = 3

    /// One open of the reader: the client, its port, connected and active.
    private static func open(serverName: String?, port: String,
                             clientName: String) throws -> (state: UnsafeMutablePointer<NetClockReaderRealtime>, source: String) {
        if let stuck = JackClients.stuckReason { throw NetClockError(stuck) }
        var status = jack_status_t(0)
        guard let client = JackClients.open(clientName, JackNullOption, &status, serverName) else {
            let which = serverName.map { "JACK server \"\($0)\"" } ?? "the JACK server"
            throw NetClockError("cannot open a client on \(which): \(JackError(status))")
        }
        let candidates = JackPorts.list(client, flags: UInt(JackPortIsOutput.rawValue))
        let physical = JackPorts.list(client, flags: UInt(JackPortIsOutput.rawValue | JackPortIsPhysical.rawValue))
        let matched: [String]
        do { matched = try JackSession.resolvePorts(port, candidates: candidates, physical: physical) } catch {
            JackClients.close(client, serverGone: false)
            throw NetClockError("no such port (\(error.reason))")
        }
        guard matched.count == 1 else {
            JackClients.close(client, serverGone: false)
            throw NetClockError("names \(matched.count) ports (\(matched.prefix(4).joined(separator: ", "))); the clock is one port")
        }
        let source = matched[0]
        guard let input = jack_port_register(client, "clock", jaq_jack_default_audio_type(), UInt(JackPortIsInput.rawValue), 0) else {
            JackClients.close(client, serverGone: false)
            throw NetClockError("cannot register a port")
        }
        let state = UnsafeMutablePointer<NetClockReaderRealtime>.allocate(capacity: 1)
        state.initialize(to: NetClockReaderRealtime(client: client, port: input))
        jack_set_process_callback(client, netClockReaderProcess, UnsafeMutableRawPointer(state))
        let inputName = String(cString: jack_port_name(input))
        guard jack_activate(client) == 0 else {
            closeClockClient(client, state, serverGone: false)
            throw NetClockError("cannot activate the clock reader")
        }
        let connected = JackPorts.connect(client, source, inputName)
        guard connected == 0 || connected == EEXIST else {
            closeClockClient(client, state, serverGone: false)
            throw NetClockError("cannot connect to it")
        }
        return (state, source)
    }

    /// Whether the reader's process callback runs within `seconds` (a cycle read, clock or not),
    /// waited for a cycle at a time as a queue's first cycle is (`JackCycleClock.sleepTowardNextCycle`).
    private static func runsCycles(_ state: UnsafeMutablePointer<NetClockReaderRealtime>, within seconds: Double) -> Bool {
        let deadline = Deadline.after(seconds: seconds)
        func ran() -> Bool {
            state.pointee.readableCycles.load(ordering: .relaxed) + state.pointee.unreadableCycles.load(ordering: .relaxed) > 0
        }
        while !ran() {
            if deadline.hasPassed { return false }
            JackCycleClock.sleepTowardNextCycle(state.pointee.client)
        }
        return true
    }

    /// The clock once locked: master frame = local frame + `offset` (mod 2^32) for the data the
    /// port carries, and the port's capture latency (frames: how long ago the master sent it).
    public struct Lock: Equatable, Sendable {
        public var offset: UInt32
        public var latency: Int

        /// The master's frame that happens at the local frame `local` (the clock data at `local`
        /// was sent `latency` frames earlier).
        public func masterFrame(atLocal local: UInt32) -> UInt32 { local &+ offset &+ UInt32(truncatingIfNeeded: latency) }
        /// The local frame at which the master's frame `master` happens.
        public func localFrame(forMaster master: UInt32) -> UInt32 { master &- offset &- UInt32(truncatingIfNeeded: latency) }
    }

    /// The lock, once the reader has seen four cycles of one unbroken clock; nil before.
    public var lock: Lock? {
        let published = state.pointee.published.load(ordering: .acquiring)
        guard published >> 32 != 0 else { return nil }
        return Lock(offset: UInt32(truncatingIfNeeded: published), latency: latency)
    }

    /// Waits up to `timeout` seconds for the lock.
    public func waitForLock(timeout: Double) -> Lock? {
        var waited = 0.0
        while waited < timeout {
            if let lock { return lock }
            HostClock.sleep(seconds: 0.01)
            waited += 0.01
        }
        return lock
    }

    /// Cycles the reader saw with an unbroken clock on the port, and without one.
    public var readableCycles: Int { state.pointee.readableCycles.load(ordering: .relaxed) }
    public var unreadableCycles: Int { state.pointee.unreadableCycles.load(ordering: .relaxed) }
    /// Unreadable cycles that carried a signal (not silence): something, but not a clock.
    public var signalCycles: Int { state.pointee.signalCycles.load(ordering: .relaxed) }

    /// The capture latency (maximum, frames) the server reports on the source port.
    public var latency: Int {
        guard let port = jack_port_by_name(state.pointee.client, source) else { return 0 }
        var range = jack_latency_range_t(min: 0, max: 0)
        jack_port_get_latency_range(port, JackCaptureLatency, &range)
        return Int(max(range.min, range.max))
    }

    /// The server's frame time now (32 bits).
    public var frameNow: UInt32 { jack_frame_time(state.pointee.client) }

    /// The server's period (frames a cycle): a cycle must hold a whole clock word (31 frames or more).
    public var periodFrames: Int { Int(jack_get_buffer_size(state.pointee.client)) }

    /// A 32-bit frame of this server as device time (64 bits), as the process's queues extend it.
    public func deviceFrame(_ frame: UInt32) -> Int64 {
        let reference = DeviceTime.sharedReference.pointee.load(ordering: .relaxed)
        return extendFrameTime(frame, reference: reference == .min ? Int64(frameNow) : reference)
    }

    /// The events since the last call, oldest first.
    public func events() -> [NetClockEvent] { drainNetClockEvents(state) }

    /// A gap still open (the clock has not come back yet): its first frame and frames so far.
    public var openGap: (frame: UInt32, frames: Int)? {
        let frames = state.pointee.openGapFrames.load(ordering: .acquiring)
        guard frames > 0 else { return nil }
        return (UInt32(truncatingIfNeeded: state.pointee.openGapStart.load(ordering: .relaxed)), frames)
    }

    /// Events the ring had no room for (the main loop did not read them in time).
    public var lostEvents: Int { state.pointee.lostEvents.load(ordering: .relaxed) }

    /// Closes the client (idempotent).
    public func close() {
        guard !closed else { return }
        closed = true
        closeClockClient(state.pointee.client, state, serverGone: false)
    }

    deinit { close() }
}

/// Takes the events the process thread pushed (the ring's consumer side).
func drainNetClockEvents(_ rt: UnsafeMutablePointer<NetClockReaderRealtime>) -> [NetClockEvent] {
    var result: [NetClockEvent] = []
    while let raw = rt.pointee.ring.pop() {
        result.append(raw.isJump ? .jump(frame: raw.frame, by: Int32(truncatingIfNeeded: raw.value))
                                 : .gap(frame: raw.frame, frames: raw.value))
    }
    return result
}

/// Closes a clock client and then frees its realtime state (no callback runs after the close;
/// bounded after the server went away: JackClients).
private func closeClockClient<State: ~Copyable>(_ client: OpaquePointer, _ state: UnsafeMutablePointer<State>, serverGone: Bool) {
    JackClients.close(client, serverGone: serverGone) {
        state.deinitialize(count: 1)
        state.deallocate()
    }
}
