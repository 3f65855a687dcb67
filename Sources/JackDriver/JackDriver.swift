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
