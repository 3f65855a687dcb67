import JackControl

/// When a take (`jaq record`) or a playback (`jaq play`) starts and stops, on JACK frames
/// (64-bit device time, as the queues and JackSession give them): now, on a frame (--at),
/// after a delay (--in), when the transport rolls (--transport, which also stops it), or when
/// Enter is pressed (--on-enter).
///
/// A value type stepped by the command's main loop: each step takes what the loop saw (the
/// time, the transport, the Enter key) and gives at most one event. It holds no threads and
/// no clocks, so every path is tested without a server (TriggerTests).
struct Trigger: Equatable {
    enum Start: Equatable {
        case now
        case frame(Int64)
        case delay(TimeValue)
        case transport
        case enter
    }

    enum Event: Equatable {
        /// The take or playback starts on this device frame (it may have passed).
        case start(frame: Int64)
        /// It ends on this device frame (the transport stopped).
        case stop(frame: Int64)
    }

    /// What the main loop sees at a step.
    struct Observation: Equatable {
        /// The device frame now.
        var now: Int64
        /// Transport changes seen so far (`JackSession.transportChanges`), whether it rolls,
        /// and the device frame of the last change.
        var transportChanges = 0
        var transportRolling = false
        var transportFrame: Int64 = 0
        /// The device frame the transport last started rolling on (a roll and a stop both
        /// between two steps leave it here while `transportFrame` is the stop's).
        var transportRollFrame: Int64 = 0
        /// The device frame the transport last stopped on (a stop and a roll both between two
        /// steps leave it here while `transportFrame` is the roll's).
        var transportStopFrame: Int64 = 0
        var enterPressed = false
    }

    enum Phase: Equatable { case armed, running, stopped }

    let start: Start
    /// The transport stopping ends it (--transport).
    let stopsWithTransport: Bool
    private(set) var phase = Phase.armed
    /// The frame a start on a known frame (now, --at, --in) names, once armed.
    private(set) var plannedFrame: Int64?
    /// Transport changes before arming: only later ones count.
    private var transportBaseline = 0
    /// Transport changes seen when the take started, and the count to re-arm from after its
    /// stop (a roll already seen after that stop starts the next take: `rearm`).
    private var startChanges = 0
    private(set) var changesAtStop: Int?

    /// The trigger the options name; nil options mean "now".
    /// - Throws: `TriggerError` naming the start options given, when there are several.
    init(at: Int64?, in delay: TimeValue?, transport: Bool, onEnter: Bool) throws(TriggerError) {
        let chosen = [(at != nil, "--at"), (delay != nil, "--in"), (transport, "--transport"), (onEnter, "--on-enter")]
            .filter(\.0).map(\.1)
        guard chosen.count <= 1 else { throw TriggerError(options: chosen) }
        if let at { start = .frame(at) }
        else if let delay { start = .delay(delay) }
        else if transport { start = .transport }
        else if onEnter { start = .enter }
        else { start = .now }
        stopsWithTransport = transport
    }

    /// Arms the trigger: a start on a known frame is planned (`now` starts at `origin`, the
    /// frame the caller starts its queue on), and transport changes from now on count.
    mutating func arm(now: Int64, deviceRate: Double, origin: Int64, transportChanges: Int) {
        transportBaseline = transportChanges
        switch start {
        case .now: plannedFrame = origin
        case .frame(let frame): plannedFrame = frame
        case .delay(let delay): plannedFrame = now + delay.frames(at: deviceRate)
        case .transport, .enter: plannedFrame = nil
        }
    }

    /// Arms a transport trigger again after its take (`jaq record --multi`): the next roll after
    /// `transportChanges` changes starts the next take (a roll already seen after them counts,
    /// as a quick roll and stop does).
    mutating func rearm(transportChanges: Int) {
        transportBaseline = changesAtStop ?? transportChanges
        changesAtStop = nil
        phase = .armed
    }

    /// One step of the main loop: (phase, observation) → (new phase, event).
    mutating func step(_ seen: Observation) -> Event? {
        let transportMoved = seen.transportChanges > transportBaseline
        switch phase {
        case .armed:
            let frame: Int64?
            switch start {
            case .now, .frame, .delay: frame = plannedFrame
            case .transport:
                // Rolling now, or a roll and a stop both since the last step (a quick
                // start/stop): the take starts on the roll's frame; the stop is the next step's.
                let rolled = transportMoved && (seen.transportRolling || seen.transportChanges >= transportBaseline + 2)
                frame = rolled ? seen.transportRollFrame : nil
            case .enter: frame = seen.enterPressed ? seen.now : nil
            }
            guard let frame else { return nil }
            phase = .running
            // The roll's change: the last one if it still rolls, else the one before the stop.
            startChanges = seen.transportRolling || start != .transport ? seen.transportChanges : seen.transportChanges - 1
            return .start(frame: frame)
        case .running:
            // Stopped now; or stopped and rolling again, both since the last step (a quick
            // stop and restart): the take ends on the stop's frame, and the new roll is the
            // next take's (`rearm`).
            let stoppedAndRolled = seen.transportRolling && seen.transportChanges >= startChanges + 2
            guard stopsWithTransport, transportMoved, !seen.transportRolling || stoppedAndRolled else { return nil }
            phase = .stopped
            changesAtStop = stoppedAndRolled ? seen.transportChanges - 1 : seen.transportChanges
            return .stop(frame: stoppedAndRolled ? seen.transportStopFrame : seen.transportFrame)
        case .stopped:
            return nil
        }
    }
}

/// More than one of --at, --in, --transport and --on-enter: the ones given, and the message.
struct TriggerError: Error, CustomStringConvertible {
    let options: [String]
    var description: String { "\(options.joined(separator: " and ")): a take or playback starts one way; give one of them" }
}

extension Trigger {
    /// The trigger of a command's options, or its usage error (one line, exit 64).
    static func forCommand(at: Int64?, in delay: TimeValue?, transport: Bool, onEnter: Bool) throws(CLIError) -> Trigger {
        do { return try Trigger(at: at, in: delay, transport: transport, onEnter: onEnter) } catch {
            throw CLIError(error.description, exitCode: CLIError.usage)
        }
    }
}

extension Trigger.Observation {
    /// What `session` (if it follows the transport) shows now.
    init(now: Int64, session: JackSession?, enterPressed: Bool) {
        self.now = now
        self.enterPressed = enterPressed
        if let session {
            let changes = session.transportChanges()
            transportChanges = changes.count
            transportRolling = changes.rolling
            transportFrame = changes.lastChangeFrame
            transportRollFrame = session.lastTransportRollFrame()
            transportStopFrame = session.lastTransportStopFrame()
        }
    }
}
