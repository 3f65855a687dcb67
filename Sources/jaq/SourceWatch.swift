import FoundationEssentials
import Glibc
import JackControl

/// Watches the ports a take records from, from the main loop (never the realtime side).
///
/// A port whose client leaves — a netjack2 slave that drops off the network (`<slave>:from_slave_N`
/// on the master), a DAW that quits — stops delivering: its track records silence from then on, and
/// the take goes on, every track on its frames. When a port of that name comes back (the slave
/// rejoins) jaq connects it again to the queue's ports it fed and reports the gap with its frames:
/// at the look after the one that found it, once its client has made its own connections (an
/// audio queue setting its CurrentDevice disconnects its ports first), and again if they undo
/// jaq's within `settling` seconds. A *physical* port that goes
/// away means the server lost its audio device: on a netjack2 slave (`jackd -d net`) that is the
/// master leaving — the net driver unregisters the slave's `system:` ports and waits for a new
/// master, so the take cannot go on: jaq ends it, cleanly.
///
/// The take's end bounds what is watched: a source there at a look at or after the take's last
/// frame was there for the whole take, and one that leaves later leaves a complete take, so
/// nothing is said (a player whose file ends with the take, as in `make demo`). Every format
/// (PCM, FLAC, .m4a) watches its sources the same way.
///
/// Thread safety: one thread (jaq record's main loop) calls `poll`.
final class SourceWatch {
    enum Event: Equatable {
        /// `port` was not there at JACK frame `frame`.
        case gone(port: String, frame: Int64)
        /// `port` is back and connected again at `frame`; it was missing from `since`, and had
        /// been seen `unseen` frames before that (the gap began in between: the looks' spacing).
        case back(port: String, frame: Int64, since: Int64, unseen: Int64)
        /// A physical port went away: the server lost its device (a netjack2 master left).
        case deviceLost(port: String, frame: Int64)
    }

    private let session: JackSession
    private let sources: [String]
    private let physical: Set<String>
    /// The queue's input ports each source was connected to (learnt while it is there).
    private var destinations: [String: [String]] = [:]
    private var missingSince: [String: Int64] = [:]
    /// Frames between the look that last saw each missing source and the one that found it gone.
    private var unseenBefore: [String: Int64] = [:]
    /// Sources found back at the last look, to be connected at this one.
    private var returning: Set<String> = []
    /// When each source was connected again: its client's own set-up may still undo it.
    private var reconnected: [String: Date] = [:]
    private let settling: TimeInterval = 2
    private var lastPoll = Date.distantPast
    /// The JACK frame of the last look.
    private var lastPollFrame: Int64?
    private let interval: TimeInterval

    /// The JACK frame after the take's last frame, once known (--duration, the transport
    /// stopping). The first look at or after it is the last.
    var end: Int64?

    /// The look at the take's end was taken: what the sources do now is past the take.
    var finished: Bool {
        guard let end, let lastPollFrame else { return false }
        return lastPollFrame >= end
    }

    /// The JACK frame of the next look that must come on time, nil if none is due: the look at
    /// the take's end (unless taken), or the one two periods after a reported change.
    var nextDueFrame: Int64? {
        guard let end, !finished else { return recheckFrame }
        return recheckFrame.map { min(end, $0) } ?? end
    }

    /// Seconds until `nextDueFrame`: a main loop sleeps no longer.
    func secondsToDueLook(now: Int64, rate: Double) -> Double? {
        nextDueFrame.map { max(0, Double($0 - now) / rate) }
    }

    /// Watches through `session`, the command's own control client (one JACK client less);
    /// `queueInputs` are the recording queue's input ports (kAudioQueueProperty_JACKPortNames).
    init(session: JackSession, sources: [String], queueInputs: [String], physical: Set<String>, interval: TimeInterval = 0.1) {
        self.session = session
        self.sources = sources
        self.physical = physical
        self.interval = interval
        self.queueInputs = Set(queueInputs)
        for name in queueInputs {
            guard let port = session.port(named: name), queuePortIndex[name] == nil else { continue }
            queuePortIndex[name] = queuePorts.count
            queuePorts.append(port)
        }
        verifiedCount = Array(repeating: nil, count: queuePorts.count)
        fed = Array(repeating: [], count: sources.count)
        let present = session.connections(ofPresent: sources)
        for (i, source) in sources.enumerated() {
            if let connections = present[source] { setDestinations(connections.filter(self.queueInputs.contains), of: i) }
        }
    }

    /// The names of the queue's input ports: a source is connected again to these only (its
    /// other connections, to speakers say, are its client's business).
    private let queueInputs: Set<String>

    /// The queue's own input ports: they stay for the whole take, so a source still connected
    /// to one of them is there (one look at that port's connections, where finding the source
    /// by name would compare it with every port of the server).
    private var queuePorts: [JackSession.Port] = []
    private var queuePortIndex: [String: Int] = [:]
    /// For each source (by its index in `sources`), the queue ports of its `destinations`, as
    /// indices into `queuePorts`: a look at a source still there hashes no names (at 64 tracks
    /// the looks at the sources were two fifths of the main loop's CPU, most of it in lookups
    /// by name).
    private var fed: [[Int]] = []

    /// Sets the queue ports source `index` feeds (and any track recording the same port).
    private func setDestinations(_ names: [String], of index: Int) {
        let source = sources[index]
        destinations[source] = names
        let ports = names.compactMap { queuePortIndex[$0] }
        for other in sources.indices where sources[other] == source { fed[other] = ports }
    }

    /// Each queue port's connection count when its connections were last read and held the
    /// source: while the count stays, they are not read again (reading makes a string per name).
    private var verifiedCount: [Int?] = []

    /// Whether source `index` is still connected to a queue port it fed.
    private func stillConnected(_ index: Int) -> Bool {
        for port in fed[index] {
            let count = session.connectionCount(of: queuePorts[port])
            if verifiedCount[port] == count { return true }
            if session.connections(of: queuePorts[port]).contains(sources[index]) {
                verifiedCount[port] = count
                return true
            }
            verifiedCount[port] = nil
        }
        return false
    }

    /// The session reports connection changes (`watchConnections`): each brings a look at once
    /// (the session posts the main loop's semaphore), and while every source is there the main
    /// loop need not look often (`needsQuickLooks`).
    private(set) var reportsChanges = false
    /// The session's count of connection changes at the last look.
    private var changesSeen = 0

    /// Asks the session to report connection changes, posting `wake` at each; `periodFrames` is
    /// the server's period.
    func watchConnections(wake: UnsafeMutablePointer<sem_t>, periodFrames: Int64) {
        reportsChanges = session.watchConnections(wake: wake)
        changesSeen = session.connectionChanges().count
        recheckDelay = 2 * max(periodFrames, 1)
    }

    /// jackd2 tells of a connection change when it makes it, and the ports show it from the
    /// server's next cycle: the look a report brings may still see the old connections, so the
    /// sources are looked at once more two periods later (the JACK frame of that look; nil: none due).
    private var recheckFrame: Int64?
    private var recheckDelay: Int64 = 512

    /// The take is over: no more reports (the queue's ports are about to go, all at once).
    func stopWatchingConnections() {
        guard reportsChanges else { return }
        session.stopWatchingConnections()
        reportsChanges = false
    }

    /// Whether the sources need looking at a few times a second: changes are not reported, or
    /// a source is missing, coming back, or was connected again and its client may undo it.
    var needsQuickLooks: Bool {
        !reportsChanges || !missingSince.isEmpty || !returning.isEmpty
            || reconnected.values.contains { Date().timeIntervalSince($0) < settling }
    }

    /// Looks at the ports (at most every `interval`, at once after a reported connection change,
    /// and once at the take's end); `now` is the JACK frame now. Nothing after the look at the end.
    func poll(now: Int64) -> [Event] {
        guard !finished else { return [] }
        let atEnd = end.map { now >= $0 } ?? false
        // A source that left was disconnected by then: at or after the first change reported
        // since the last look (its frame time widened to `now`'s 64 bits).
        var firstChange: Int64?
        var changed = false
        if reportsChanges {
            let (count, first) = session.connectionChanges()
            changed = count != changesSeen
            changesSeen = count
            firstChange = first.map { now - Int64(UInt32(truncatingIfNeeded: now) &- $0) }
        }
        let recheckDue = recheckFrame.map { now >= $0 } ?? false
        if recheckDue { recheckFrame = nil }
        if changed { recheckFrame = now + recheckDelay }
        guard atEnd || changed || recheckDue || Date().timeIntervalSince(lastPoll) >= interval else { return [] }
        lastPoll = Date()
        let previousPollFrame = lastPollFrame ?? now
        lastPollFrame = now
        // Since when a source found gone may have been: the last look that saw it, or the first
        // change reported after that look, whichever is later.
        let lastSeen = max(previousPollFrame, firstChange ?? previousPollFrame)
        var events: [Event] = []
        for (index, source) in sources.enumerated() {
            if missingSince.isEmpty || missingSince[source] == nil, stillConnected(index) { continue }
            // Not connected to the queue any more: gone, or disconnected by someone (then it
            // stays disconnected), or (missing) back.
            guard let connections = session.connections(ofPresent: [source])[source] else {
                returning.remove(source)
                reconnected[source] = nil
                if missingSince[source] == nil {
                    missingSince[source] = now
                    unseenBefore[source] = max(0, now - lastSeen)
                    events.append(physical.contains(source) ? .deviceLost(port: source, frame: now) : .gone(port: source, frame: now))
                }
                continue
            }
            if let since = missingSince[source] {
                // Back: connected at the next look, when its client has set up its own connections.
                guard returning.contains(source) else {
                    returning.insert(source)
                    continue
                }
                returning.remove(source)
                connect(source)
                missingSince[source] = nil
                reconnected[source] = Date()
                events.append(.back(port: source, frame: now, since: since, unseen: unseenBefore.removeValue(forKey: source) ?? 0))
            } else if let at = reconnected[source], Date().timeIntervalSince(at) < settling {
                // Connected again, then disconnected by its client setting up: again.
                connect(source)
            } else {
                reconnected[source] = nil
                // Moved to other queue ports by someone: those are its ports now.
                let feeds = connections.filter(queueInputs.contains)
                if !feeds.isEmpty { setDestinations(feeds, of: index) }
            }
        }
        return events
    }

    private func connect(_ source: String) {
        for destination in destinations[source] ?? [] { try? session.connect(source, destination) }
    }
}

extension SourceWatch {
    /// Says each event in one line, the same for every format; returns the physical port that
    /// went away (the server lost its device: the take ends there), if one did.
    /// - Parameters:
    ///   - takeTime: a JACK frame as a time in the take ("00:02.1").
    ///   - fileFrames: JACK frames as frames of the take's files (a gap's length).
    ///   - deviceRate: JACK's sample rate (how precise the gap's start is, in seconds).
    static func report(_ events: [Event], takeTime: (Int64) -> String, fileFrames: (Int64) -> Int64, deviceRate: Double) -> String? {
        var deviceLost: String?
        for event in events {
            switch event {
            case .gone(let port, let frame):
                Log.error("\(port) went away at \(takeTime(frame)) (JACK frame \(frame)): its track records silence until it is back")
            case .back(let port, let frame, let since, let unseen):
                // The gap began between the look that last saw the port and the one that found
                // it gone: its length is known to within that spacing, rounded up to a tenth.
                let within = (Double(unseen) / deviceRate * 10).rounded(.up) / 10
                Log.error("\(port) is back at \(takeTime(frame)), connected again: a gap of \(fileFrames(frame - since)) frames "
                          + "(from \(takeTime(since)), JACK frames \(since)-\(frame), to within \(String(cFormat: "%.1f", max(within, 0.1))) s) of silence in its track")
            case .deviceLost(let port, _):
                deviceLost = deviceLost ?? port
            }
        }
        return deviceLost
    }
}
