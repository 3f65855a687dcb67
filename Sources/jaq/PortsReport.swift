import JackControl

/// What `jaq ports --json` prints: the server and its ports (JSONEncoder, sorted keys; a
/// server that runs no cycles has a null frame time).
struct PortsReport: Encodable {
    struct Port: Encodable {
        let name: String
        let direction: String
        let physical: Bool
        let captureLatency: [Int]
        let playbackLatency: [Int]
        let connections: [String]

        init(_ port: JackPortInfo) {
            name = port.name
            direction = port.isInput ? "input" : "output"
            physical = port.isPhysical
            captureLatency = [port.captureLatency.lowerBound, port.captureLatency.upperBound]
            playbackLatency = [port.playbackLatency.lowerBound, port.playbackLatency.upperBound]
            connections = port.connections
        }
    }

    let server: String
    let sampleRate: Double
    let periodFrames: Int
    let frameTime: UInt32?
    let ports: [Port]

    private enum CodingKeys: String, CodingKey { case server, sampleRate, periodFrames, frameTime, ports }

    /// Written out so that an unknown frame time is `null`, not left out.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(server, forKey: .server)
        try container.encode(sampleRate, forKey: .sampleRate)
        try container.encode(periodFrames, forKey: .periodFrames)
        try container.encode(frameTime, forKey: .frameTime)
        try container.encode(ports, forKey: .ports)
    }
}
