import Glibc
import JackCommon
import QueueCore
import Synchronization

/// Opens audio queue clients on a JACK server.
///
/// The server is `serverName`, else `$JACK_DEFAULT_SERVER`, else JACK's default.
/// The driver never starts a server: with none running, opening fails at once
/// with `.invalidDevice` (the queue API's kAudioQueueErr_InvalidDevice).
public final class JackDriver: DeviceProvider, @unchecked Sendable {
    /// The driver for the default server.
    public static let shared = JackDriver(serverName: nil, frameReference: DeviceTime.sharedReference)

    public let serverName: String?

    /// Device time shared by every client of this driver: JACK frame time extended to 64 bits
    /// (`extendFrameTime`), read and advanced by the clients' process threads. The default
    /// server's driver shares it with the control clients (`DeviceTime.sharedReference`).
    let frameReference: UnsafeMutablePointer<Atomic<Int64>>

    public convenience init(serverName: String?) {
        self.init(serverName: serverName, frameReference: DeviceTime.makeReference())
    }

    private init(serverName: String?, frameReference: UnsafeMutablePointer<Atomic<Int64>>) {
        self.serverName = serverName
        self.frameReference = frameReference
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
}
