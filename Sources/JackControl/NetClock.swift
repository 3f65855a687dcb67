import CJack
import Glibc
import JackCommon
import QueueCore
import Synchronization

/// The frame clock a netjack2 master sends to its slaves as audio (`jaq clock`), and what a
/// slave reads back from it (`--clock PORT`). netjack2 carries no transport and no shared frame
/// counter; an audio channel it carries bit-exact (its default float encoding) can carry one.
///
/// The sample at master frame `f` (JACK's 32-bit frame time) is `n / 2^28` with the integer
/// `n = (f mod 2^23) × 2 + b`, `0 ≤ n < 2^24`: exact in a Float32, always in `[0, 1/16)` (below
/// −24 dBFS: a slow ramp, never a full-scale signal). The low bit `b` spells out, 16 frames at
/// a time, the rest of the frame: at frames with `f mod 16 = k`, `b` is bit `k` of `f >> 23` for
/// k < 9, and bit `k − 9` of the marker `0b1100101` for k ≥ 9 (so another signal is not taken
/// for a clock). One aligned 16-frame word gives the whole 32-bit frame; every sample can then be
/// checked against the frame its neighbours name.
public enum NetClockCode {
    /// Bits of the frame in the ramp: it wraps every 2^23 frames (174.8 s at 48 kHz).
    public static let rampBits = 23
    /// Frames in one word of the low-bit stream.
    public static let wordFrames = 16
    /// The marker in the word's frames 9…15.
    static let marker: UInt32 = 0b1100101
    /// 2^-28: the sample of code n is n × this.
    static let scale: Float = 1.0 / 268_435_456

    /// The code (0 ≤ n < 2^24) of master frame `frame`.
    @_noLocks @inline(__always)
    public static func code(_ frame: UInt32) -> UInt32 {
        let k = frame & 15
        let bit = k < 9 ? (frame >> (23 + k)) & 1 : (marker >> (k - 9)) & 1
        return ((frame & 0x7F_FFFF) << 1) | bit
    }

    /// The sample that carries master frame `frame`.
    @_noLocks @inline(__always)
    public static func sample(_ frame: UInt32) -> Float { Float(code(frame)) * scale }

    /// The code a sample carries, or nil when it is no clock sample (not n/2^28 with 0 ≤ n < 2^24).
    @_noLocks @inline(__always)
    public static func code(of sample: Float) -> UInt32? {
        let scaled = sample * 268_435_456  // exact: a power of two
        guard scaled >= 0, scaled < 16_777_216 else { return nil }  // NaN fails too
        let n = UInt32(scaled)
        return Float(n) == scaled ? n : nil
    }

    /// The master frame of `samples[0]` when the `count` samples are an unbroken clock (every
    /// one the code of the frame after the previous one's), else nil. Needs a whole 16-frame
    /// word: `count` ≥ 31.
    @_noLocks
    public static func firstFrame(_ samples: UnsafePointer<Float>, count: Int) -> UInt32? {
        guard count >= 2 * wordFrames - 1, let first = code(of: samples[0]) else { return nil }
        let low = first >> 1
        let start = Int((16 - (low & 15)) & 15)  // the first frame of a word
        var high: UInt32 = 0
        for k in 0..<wordFrames {
            guard let n = code(of: samples[start + k]) else { return nil }
            let bit = n & 1
            if k < 9 { high |= bit << UInt32(k) } else if bit != (marker >> UInt32(k - 9)) & 1 { return nil }
        }
        let wordLow = (low &+ UInt32(start)) & 0x7F_FFFF
        let frame = ((high << 23) | wordLow) &- UInt32(start)
        for i in 0..<count where samples[i] != sample(frame &+ UInt32(i)) { return nil }
        return frame
    }
}

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
        var status = jack_status_t(0)
        guard let client = jaq_jack_client_open(clientName, JackNullOption, &status, serverName) else {
            let which = serverName.map { "JACK server \"\($0)\"" } ?? "the JACK server"
            throw NetClockError("cannot open client \(clientName) on \(which): \(JackError(status))")
        }
        guard let port = jack_port_register(client, "clock", jaq_jack_default_audio_type(), UInt(JackPortIsOutput.rawValue), 0) else {
            jack_client_close(client)
            throw NetClockError("cannot register \(clientName):clock")
        }
        portName = String(cString: jack_port_name(port))
        state = .allocate(capacity: 1)
        state.initialize(to: NetClockGeneratorRealtime(client: client, port: port))
        jack_set_process_callback(client, netClockGeneratorProcess, UnsafeMutableRawPointer(state))
        jack_on_shutdown(client, netClockShutdown, UnsafeMutableRawPointer(state))
        guard jack_activate(client) == 0 else {
            jack_client_close(client)
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
        jack_client_close(state.pointee.client)
        state.deinitialize(count: 1)
        state.deallocate()
    }

    deinit { close() }
}

struct NetClockGeneratorRealtime: ~Copyable {
    let client: OpaquePointer
    let port: OpaquePointer
    let cycles = Atomic<Int>(0)
    let shutDown = Atomic<Bool>(false)

}

/// The server shut the generator down: only a flag.
private func netClockShutdown(_ argument: UnsafeMutableRawPointer?) {
    argument?.assumingMemoryBound(to: NetClockGeneratorRealtime.self).pointee.shutDown.store(true, ordering: .relaxed)
}

/// The generator's process trampoline: the cycle's first frame, then the kernel.
private func netClockGeneratorProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let rt = argument.assumingMemoryBound(to: NetClockGeneratorRealtime.self)
    let buffer = jack_port_get_buffer(rt.pointee.port, frameCount).assumingMemoryBound(to: Float.self)
    fillNetClock(buffer, count: Int(frameCount), firstFrame: jack_last_frame_time(rt.pointee.client))
    rt.pointee.cycles.wrappingAdd(1, ordering: .relaxed)
    return 0
}

/// Writes the clock of frames `firstFrame…` into `buffer`.
@_noLocks
func fillNetClock(_ buffer: UnsafeMutablePointer<Float>, count: Int, firstFrame: UInt32) {
    for i in 0..<count { buffer[i] = NetClockCode.sample(firstFrame &+ UInt32(truncatingIfNeeded: i)) }
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
    /// - Throws: `NetClockError` with the reason: no server, no such port, more than one.
    public init(serverName: String?, port: String, clientName: String = "jaq-clock-in") throws {
        JackMessages.install()
        var status = jack_status_t(0)
        guard let client = jaq_jack_client_open(clientName, JackNullOption, &status, serverName) else {
            let which = serverName.map { "JACK server \"\($0)\"" } ?? "the JACK server"
            throw NetClockError("cannot open a client on \(which): \(JackError(status))")
        }
        let candidates = JackPorts.list(client, flags: UInt(JackPortIsOutput.rawValue))
        let physical = JackPorts.list(client, flags: UInt(JackPortIsOutput.rawValue | JackPortIsPhysical.rawValue))
        let matched: [String]
        do { matched = try JackSession.resolvePorts(port, candidates: candidates, physical: physical) } catch {
            jack_client_close(client)
            throw NetClockError("no such port (\(error.reason))")
        }
        guard matched.count == 1 else {
            jack_client_close(client)
            throw NetClockError("names \(matched.count) ports (\(matched.prefix(4).joined(separator: ", "))); the clock is one port")
        }
        source = matched[0]
        guard let input = jack_port_register(client, "clock", jaq_jack_default_audio_type(), UInt(JackPortIsInput.rawValue), 0) else {
            jack_client_close(client)
            throw NetClockError("cannot register a port")
        }
        let ring = UnsafeMutablePointer<NetClockRawEvent>.allocate(capacity: NetClockReaderRealtime.ringCapacity)
        ring.initialize(repeating: NetClockRawEvent(), count: NetClockReaderRealtime.ringCapacity)
        state = .allocate(capacity: 1)
        state.initialize(to: NetClockReaderRealtime(client: client, port: input, ring: ring))
        jack_set_process_callback(client, netClockReaderProcess, UnsafeMutableRawPointer(state))
        let inputName = String(cString: jack_port_name(input))
        guard jack_activate(client) == 0 else {
            close()
            throw NetClockError("cannot activate the clock reader")
        }
        let connected = JackPorts.connect(client, source, inputName)
        guard connected == 0 || connected == EEXIST else {
            close()
            throw NetClockError("cannot connect to it")
        }
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
        jack_client_close(state.pointee.client)
        let ring = state.pointee.ring
        state.deinitialize(count: 1)
        state.deallocate()
        ring.deallocate()
    }

    deinit { close() }
}

/// One event in the reader's ring: a gap (`value` frames) or a jump (`value` the offset change).
struct NetClockRawEvent {
    var isJump = false
    var frame: UInt32 = 0
    var value = 0
}

/// The reader's realtime state: plain memory, allocated before activation, freed after close.
struct NetClockReaderRealtime: ~Copyable {
    static let ringCapacity = 256
    /// Cycles of one unbroken clock before the reader locks on it.
    static let lockCycles = 4
    /// Cycles of a new unbroken clock (about a third of a second at 256 frames, 48 kHz) before the
    /// reader takes it as a jump rather than frames netjack2 filled from other cycles.
    static let jumpCycles = 64

    let client: OpaquePointer
    let port: OpaquePointer
    /// Gaps and jumps: produced by the process thread, consumed by `events()`.
    let ring: UnsafeMutablePointer<NetClockRawEvent>
    let writeIndex = Atomic<Int>(0)
    let readIndex = Atomic<Int>(0)
    let lostEvents = Atomic<Int>(0)
    /// Bit 32 set once locked; the low 32 bits are the offset (master − local).
    let published = Atomic<UInt64>(0)
    let readableCycles = Atomic<Int>(0)
    let unreadableCycles = Atomic<Int>(0)
    /// Unreadable cycles that were not silence (a signal, but no clock).
    let signalCycles = Atomic<Int>(0)
    let openGapStart = Atomic<Int>(0)
    let openGapFrames = Atomic<Int>(0)

    // The process thread's own.
    var locked = false
    var offset: UInt32 = 0
    var candidate: UInt32 = 0
    var candidateCycles = 0
    var gapOpen = false
    var gapStart: UInt32 = 0
    var gapFrames = 0

    init(client: OpaquePointer, port: OpaquePointer, ring: UnsafeMutablePointer<NetClockRawEvent>) {
        self.client = client
        self.port = port
        self.ring = ring
    }
}

private func netClockReaderProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let rt = argument.assumingMemoryBound(to: NetClockReaderRealtime.self)
    let samples = UnsafePointer(jack_port_get_buffer(rt.pointee.port, frameCount).assumingMemoryBound(to: Float.self))
    readNetClockCycle(rt, samples: samples, count: Int(frameCount), localFrame: jack_last_frame_time(rt.pointee.client))
    return 0
}

/// One cycle of the reader: lock on an unbroken clock, then check every sample against it.
@_noLocks
func readNetClockCycle(_ rt: UnsafeMutablePointer<NetClockReaderRealtime>, samples: UnsafePointer<Float>, count: Int,
                       localFrame: UInt32) {
    let first = NetClockCode.firstFrame(samples, count: count)
    if first != nil {
        rt.pointee.readableCycles.wrappingAdd(1, ordering: .relaxed)
    } else {
        rt.pointee.unreadableCycles.wrappingAdd(1, ordering: .relaxed)
        for i in 0..<count where samples[i] != 0 {
            rt.pointee.signalCycles.wrappingAdd(1, ordering: .relaxed)
            break
        }
    }
    // This cycle's own offset (when it is an unbroken clock), counted while it holds.
    if let first {
        let offset = first &- localFrame
        if rt.pointee.candidateCycles > 0 && offset == rt.pointee.candidate {
            rt.pointee.candidateCycles += 1
        } else {
            rt.pointee.candidate = offset
            rt.pointee.candidateCycles = 1
        }
    } else {
        rt.pointee.candidateCycles = 0
    }
    guard rt.pointee.locked else {
        if rt.pointee.candidateCycles >= NetClockReaderRealtime.lockCycles {
            rt.pointee.locked = true
            rt.pointee.offset = rt.pointee.candidate
            rt.pointee.published.store(1 << 32 | UInt64(rt.pointee.candidate), ordering: .releasing)
        }
        return
    }
    // Locked: every sample must carry local frame + offset.
    var bad = 0
    var firstBad = -1
    let base = localFrame &+ rt.pointee.offset
    for i in 0..<count where samples[i] != NetClockCode.sample(base &+ UInt32(truncatingIfNeeded: i)) {
        bad += 1
        if firstBad < 0 { firstBad = i }
    }
    if bad == 0 {
        if rt.pointee.gapOpen {
            pushNetClockEvent(rt, NetClockRawEvent(isJump: false, frame: rt.pointee.gapStart, value: rt.pointee.gapFrames))
            rt.pointee.gapOpen = false
            rt.pointee.openGapFrames.store(0, ordering: .releasing)
        }
        return
    }
    if rt.pointee.gapOpen {
        rt.pointee.gapFrames += bad
    } else {
        rt.pointee.gapOpen = true
        rt.pointee.gapStart = localFrame &+ UInt32(truncatingIfNeeded: firstBad)
        rt.pointee.gapFrames = bad
        rt.pointee.openGapStart.store(Int(rt.pointee.gapStart), ordering: .relaxed)
    }
    rt.pointee.openGapFrames.store(rt.pointee.gapFrames, ordering: .releasing)
    // A new clock that holds is a jump, from where the old one broke.
    if rt.pointee.candidateCycles >= NetClockReaderRealtime.jumpCycles && rt.pointee.candidate != rt.pointee.offset {
        let change = Int32(bitPattern: rt.pointee.candidate &- rt.pointee.offset)
        pushNetClockEvent(rt, NetClockRawEvent(isJump: true, frame: rt.pointee.gapStart, value: Int(change)))
        rt.pointee.offset = rt.pointee.candidate
        rt.pointee.published.store(1 << 32 | UInt64(rt.pointee.candidate), ordering: .releasing)
        rt.pointee.gapOpen = false
        rt.pointee.openGapFrames.store(0, ordering: .releasing)
    }
}

/// Takes the events the process thread pushed (the ring's consumer side).
func drainNetClockEvents(_ rt: UnsafeMutablePointer<NetClockReaderRealtime>) -> [NetClockEvent] {
    var result: [NetClockEvent] = []
    var read = rt.pointee.readIndex.load(ordering: .relaxed)
    let written = rt.pointee.writeIndex.load(ordering: .acquiring)
    while read != written {
        let raw = rt.pointee.ring[read % NetClockReaderRealtime.ringCapacity]
        result.append(raw.isJump ? .jump(frame: raw.frame, by: Int32(truncatingIfNeeded: raw.value))
                                 : .gap(frame: raw.frame, frames: raw.value))
        read += 1
    }
    rt.pointee.readIndex.store(read, ordering: .releasing)
    return result
}

/// Pushes an event (the ring's producer side, the process thread); counts it lost when full.
@_noLocks @inline(__always)
func pushNetClockEvent(_ rt: UnsafeMutablePointer<NetClockReaderRealtime>, _ event: NetClockRawEvent) {
    let write = rt.pointee.writeIndex.load(ordering: .relaxed)
    guard write - rt.pointee.readIndex.load(ordering: .acquiring) < NetClockReaderRealtime.ringCapacity else {
        rt.pointee.lostEvents.wrappingAdd(1, ordering: .relaxed)
        return
    }
    rt.pointee.ring[write % NetClockReaderRealtime.ringCapacity] = event
    rt.pointee.writeIndex.store(write + 1, ordering: .releasing)
}
