import CJack
import Glibc
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

/// A JACK client for queries and control that owns no audio: port listing,
/// server time, transport. `jaq` uses it for `ports`, `time` and transport starts.
public final class JackSession: @unchecked Sendable {
    let client: OpaquePointer
    public let serverName: String?
    private let watcher: UnsafeMutablePointer<TransportWatch>

    /// Opens a control client; throws `.invalidDevice` if no server runs.
    /// - Parameter watchTransport: also follow the transport cycle by cycle (`transportChanges`);
    ///   this makes the client take part in every JACK cycle, so only ask when needed.
    public init(serverName: String?, clientName: String = "jaq-ctl", watchTransport: Bool = false) throws {
        JackMessages.install()
        var status = jack_status_t(0)
        guard let client = jaq_jack_client_open(clientName, JackNoStartServer, &status, serverName) else {
            let which = serverName.map { "JACK server \"\($0)\"" } ?? "the JACK server"
            throw QueueError.invalidDevice("\(which) is not running")
        }
        self.client = client
        self.serverName = serverName
        watcher = .allocate(capacity: 1)
        watcher.initialize(to: TransportWatch(client: client))
        if watchTransport {
            jack_set_process_callback(client, transportProcess, UnsafeMutableRawPointer(watcher))
            jack_activate(client)
        }
    }

    deinit {
        jack_client_close(client)
        watcher.deinitialize(count: 1)
        watcher.deallocate()
    }

    /// True if a server answers (with no client left behind).
    public static func isServerRunning(_ serverName: String?) -> Bool {
        JackMessages.install()
        var status = jack_status_t(0)
        guard let client = jaq_jack_client_open("jaq-probe", JackNoStartServer, &status, serverName) else { return false }
        jack_client_close(client)
        return true
    }

    public var sampleRate: Double { Double(jack_get_sample_rate(client)) }
    public var periodFrames: Int { Int(jack_get_buffer_size(client)) }

    /// The server's frame time now (32 bits, as `jack_frame_time`).
    public var frameTime: UInt32 { jack_frame_time(client) }

    /// Every port, sorted naturally, with its latencies and connections.
    public func ports(matching pattern: String? = nil) -> [JackPortInfo] {
        let names = JackDevice.portList(client, flags: 0)
        return PortMatcher.naturalSorted(names).compactMap { name -> JackPortInfo? in
            guard let port = jack_port_by_name(client, name) else { return nil }
            let flags = jack_port_flags(port)
            var capture = jack_latency_range_t(min: 0, max: 0)
            var playback = jack_latency_range_t(min: 0, max: 0)
            jack_port_get_latency_range(port, JackCaptureLatency, &capture)
            jack_port_get_latency_range(port, JackPlaybackLatency, &playback)
            var connections: [String] = []
            if let list = jack_port_get_all_connections(client, port) {
                var i = 0
                while let connection = list[i] {
                    connections.append(String(cString: connection))
                    i += 1
                }
                jack_free(list)
            }
            let type = jack_port_type(port).map { String(cString: $0) } ?? ""
            return JackPortInfo(
                name: name, isInput: flags & Int32(JackPortIsInput.rawValue) != 0,
                isPhysical: flags & Int32(JackPortIsPhysical.rawValue) != 0, type: type,
                captureLatency: Int(capture.min)...Int(max(capture.min, capture.max)),
                playbackLatency: Int(playback.min)...Int(max(playback.min, playback.max)),
                connections: connections)
        }
    }

    /// The transport: rolling or not, and its frame.
    public func transport() -> (rolling: Bool, frame: UInt32) {
        var position = jack_position_t()
        let state = jack_transport_query(client, &position)
        return (state == JackTransportRolling, position.frame)
    }

    /// The device frame (32-bit frame time) of the first cycle in which the transport
    /// was seen rolling (`rolling` true) or stopped, after `after` changes; nil if none yet.
    public func transportChanges() -> (count: Int, lastChangeFrame: UInt32, rolling: Bool) {
        (watcher.pointee.changes.load(ordering: .acquiring), UInt32(truncatingIfNeeded: watcher.pointee.lastChangeFrame.load(ordering: .relaxed)),
         watcher.pointee.rolling.load(ordering: .relaxed))
    }

    /// Starts the transport rolling (`jack_transport_start`).
    public func startTransport() { jack_transport_start(client) }

    /// Stops the transport (`jack_transport_stop`).
    public func stopTransport() { jack_transport_stop(client) }

    /// Moves the transport to `frame` (`jack_transport_locate`).
    public func locateTransport(_ frame: UInt32) { jack_transport_locate(client, frame) }

    /// Connects two ports by name (output first).
    public func connect(_ source: String, _ destination: String) throws {
        let result = JackDevice.connectPorts(client, source, destination)
        if result != 0 && result != EEXIST {
            throw QueueError.invalidDevice("cannot connect \(source) to \(destination)")
        }
    }
}

/// The transport as seen by a process callback, cycle by cycle.
struct TransportWatch: ~Copyable {
    let client: OpaquePointer
    let rolling = Atomic<Bool>(false)
    let changes = Atomic<Int>(0)
    /// Frame time of the cycle in which the last change was seen.
    let lastChangeFrame = Atomic<Int>(0)
    var initialized = false
}

private func transportProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let watch = argument.assumingMemoryBound(to: TransportWatch.self)
    let rolling = jack_transport_query(watch.pointee.client, nil) == JackTransportRolling
    if !watch.pointee.initialized {
        watch.pointee.initialized = true
        watch.pointee.rolling.store(rolling, ordering: .relaxed)
        return 0
    }
    if rolling != watch.pointee.rolling.load(ordering: .relaxed) {
        watch.pointee.lastChangeFrame.store(Int(jack_last_frame_time(watch.pointee.client)), ordering: .relaxed)
        watch.pointee.rolling.store(rolling, ordering: .relaxed)
        watch.pointee.changes.wrappingAdd(1, ordering: .releasing)
    }
    return 0
}
