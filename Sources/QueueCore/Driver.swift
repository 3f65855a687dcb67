/// Which way audio flows through a device client.
public enum DeviceDirection: Sendable {
    /// A playback queue: its ports are JACK output ports.
    case output
    /// A recording queue: its ports are JACK input ports.
    case input
}

/// Something that happened to a device, reported on a non-realtime thread.
public enum DeviceEvent: Sendable, Equatable {
    /// The server went away or closed the client.
    case shutdown(reason: String)
    /// The server missed a deadline: a timeline discontinuity.
    case xrun
    /// The server's sample rate changed: a timeline discontinuity.
    case sampleRateChanged(Double)
    /// Freewheel (offline bounce) started or ended.
    case freewheel(Bool)
}

/// The engine's per-cycle entry, called by a driver on its realtime thread with
/// the cycle's first device frame, frame count and one buffer per port.
/// `mayWait` is true when nothing is realtime (freewheel, ManualDriver): the
/// entry may then wait for ring data or space instead of dropping. `freewheeling` is true
/// while JACK freewheels: the server then runs every cycle of every client, so a jump in its
/// frame time is not a skipped cycle (jackd 1.9.21's frame timer jumps by arbitrary amounts
/// when an xrun is reported during freewheel) and no frame is lost.
public typealias RealtimeEntry = @convention(c) (
    _ context: UnsafeMutableRawPointer, _ frameTime: Int64, _ frameCount: Int32,
    _ ports: UnsafePointer<UnsafeMutablePointer<Float>>, _ mayWait: Bool, _ freewheeling: Bool
) -> Void

/// A realtime entry and the context pointer it is called with.
public struct RealtimeProcessor: @unchecked Sendable {
    public let context: UnsafeMutableRawPointer
    public let entry: RealtimeEntry
    public init(context: UnsafeMutableRawPointer, entry: RealtimeEntry) {
        self.context = context
        self.entry = entry
    }
}

/// A queue's connection to the audio device: one JACK client with its ports,
/// or a ManualDriver client in tests. Device time is the server's frame time
/// extended to 64 bits; host time is CLOCK_MONOTONIC nanoseconds.
public protocol AudioDevice: AnyObject, Sendable {
    /// The server's sample rate.
    var sampleRate: Double { get }
    /// Frames per cycle now.
    var periodFrames: Int { get }
    /// The client's name as the server knows it.
    var clientName: String { get }
    /// Full names ("client:port") of this client's ports.
    var portNames: [String] { get }
    /// True while the server is freewheeling (nothing is realtime).
    var isFreewheeling: Bool { get }
    /// False once the server went away.
    var isAlive: Bool { get }

    /// Installs the realtime entry; until then (and after nil) the ports carry silence.
    func setProcessor(_ processor: RealtimeProcessor?)
    /// Connects the client's ports to `target` ("system", a port name, a regular
    /// expression, or "" for none) instead of what an earlier call connected them to;
    /// returns the device ports now connected. Throws `.invalidDevice` when nothing matches.
    /// Removes only connections the client made itself, never one another client made.
    /// Thread safety: calls from several threads take turns.
    func connect(to target: String) throws -> [String]
    /// Device time now.
    func currentFrame() -> Int64
    /// The host time (CLOCK_MONOTONIC ns) at which device frame `frame` is processed.
    func hostTime(forFrame frame: Int64) -> UInt64
    /// The device frame processed at host time `hostTime`.
    func frame(forHostTime hostTime: UInt64) -> Int64
    /// Latency range (frames) of port `index`: capture latency for input ports,
    /// playback latency for output ports, as the server reports it.
    func portLatency(_ index: Int) -> ClosedRange<Int>
    /// Waits until `isApplied()` holds, i.e. the realtime side has taken the
    /// commands pushed so far; when no cycle can run (not active, server gone,
    /// ManualDriver between cycles) it calls `applyDirectly` itself instead.
    func synchronize(isApplied: () -> Bool, applyDirectly: () -> Void)
    /// Receives device events on a non-realtime thread.
    func setEventHandler(_ handler: (@Sendable (DeviceEvent) -> Void)?)
    /// Renames the client (reopens it) with the same ports. Connections other clients made to
    /// them are made again; the caller reconnects the client's own (`connect(to:)`).
    func rename(to name: String) throws
    /// Closes the client; after it returns the realtime entry is never called again.
    func close()
}

/// The ports of a queue's client.
public struct PortLayout: Sendable, Equatable {
    /// Short port names ("out_1", "in_2", "out_L").
    public var names: [String]
    /// A mono output queue's two ports (left, right) carrying one channel.
    public var isMonoPair: Bool

    /// One port per channel, or a left/right pair for a mono output queue.
    public static func forQueue(direction: DeviceDirection, channelCount: Int) -> PortLayout {
        switch direction {
        case .output where channelCount == 1:
            return PortLayout(names: ["out_L", "out_R"], isMonoPair: true)
        case .output:
            return PortLayout(names: (1...channelCount).map { "out_\($0)" }, isMonoPair: false)
        case .input:
            return PortLayout(names: (1...channelCount).map { "in_\($0)" }, isMonoPair: false)
        }
    }
}

/// Opens device clients: the JACK driver, or a ManualDriver in tests.
public protocol DeviceProvider: AnyObject, Sendable {
    /// Opens a client named `name` (the server may make it unique) with the
    /// ports of `layout` going `direction`. Throws `.invalidDevice` when no server runs.
    func openDevice(name: String, direction: DeviceDirection, layout: PortLayout) throws -> AudioDevice
    /// The default connection target for a new queue ("system" when physical ports exist, else "").
    func defaultTarget(for direction: DeviceDirection) -> String
}

/// A provider whose devices open under one name, whatever the queue would call them: a JACK
/// client that has its name from the start, instead of opening as `prog-out` and being renamed
/// (kAudioQueueProperty_JACKClientName opens a second client and closes the first; jackd may
/// name the closing one in an xrun, and a rename during freewheel opens a client jackd never runs).
public final class NamedDeviceProvider: DeviceProvider, @unchecked Sendable {
    public let base: DeviceProvider
    public let name: String
    /// What a new queue connects to, in place of `base`'s default; nil: `base`'s.
    public let target: String?

    /// - Parameter target: what a new queue connects to ("" nothing: its owner sets
    ///   CurrentDevice next, so the default's connections would be made only to be removed);
    ///   nil for `base`'s default.
    public init(_ base: DeviceProvider, name: String, target: String? = nil) {
        self.base = base
        self.name = name
        self.target = target
    }

    public func openDevice(name _: String, direction: DeviceDirection, layout: PortLayout) throws -> AudioDevice {
        try base.openDevice(name: name, direction: direction, layout: layout)
    }

    public func defaultTarget(for direction: DeviceDirection) -> String { target ?? base.defaultTarget(for: direction) }
}
