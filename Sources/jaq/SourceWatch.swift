import Foundation
import JackDriver

/// Watches the ports a take records from, from the main loop (never the realtime side).
///
/// A port whose client leaves — a netjack2 slave that drops off the network (`<slave>:from_slave_N`
/// on the master), a DAW that quits — stops delivering: its track records silence from then on, and
/// the take goes on, every track on its frames. When a port of that name comes back (the slave
/// rejoins) jaq connects it again and reports the gap with its frames. A *physical* port that goes
/// away means the server lost its audio device: on a netjack2 slave (`jackd -d net`) that is the
/// master leaving — the net driver unregisters the slave's `system:` ports and waits for a new
/// master, so the take cannot go on: jaq ends it, cleanly.
///
/// Thread safety: one thread (jaq record's main loop) calls `poll`.
final class SourceWatch {
    enum Event: Equatable {
        /// `port` was not there at JACK frame `frame`.
        case gone(port: String, frame: Int64)
        /// `port` is back and connected again at `frame`; it was missing from `since`.
        case back(port: String, frame: Int64, since: Int64)
        /// A physical port went away: the server lost its device (a netjack2 master left).
        case deviceLost(port: String, frame: Int64)
    }

    private let session: JackSession
    private let sources: [String]
    private let physical: Set<String>
    /// The queue's input ports each source was connected to (learnt while it is there).
    private var destinations: [String: [String]] = [:]
    private var missingSince: [String: Int64] = [:]
    private var lastPoll = Date.distantPast
    private let interval: TimeInterval

    /// Watches through `session`, the command's own control client (one JACK client less).
    init(session: JackSession, sources: [String], physical: Set<String>, interval: TimeInterval = 0.1) {
        self.session = session
        self.sources = sources
        self.physical = physical
        self.interval = interval
        destinations = session.connections(ofPresent: sources)
        for name in Set(destinations.values.joined()) { if let port = session.port(named: name) { queuePorts[name] = port } }
    }

    /// The queue's own input ports, by name: they stay for the whole take, so a source still
    /// connected to one of them is there (one look at that port's connections, where finding
    /// the source by name would compare it with every port of the server).
    private var queuePorts: [String: JackSession.Port] = [:]

    /// A queue port's connection count when its connections were last read and held the
    /// source: while the count stays, they are not read again (reading makes a string per name).
    private var verifiedCount: [String: Int] = [:]

    /// Whether `source` is still connected to a queue port it fed.
    private func stillConnected(_ source: String) -> Bool {
        for name in destinations[source] ?? [] {
            guard let port = queuePorts[name] else { continue }
            let count = session.connectionCount(of: port)
            if verifiedCount[name] == count { return true }
            if session.connections(of: port).contains(source) {
                verifiedCount[name] = count
                return true
            }
            verifiedCount[name] = nil
        }
        return false
    }

    /// Looks at the ports (at most every `interval`); `now` is the JACK frame now.
    func poll(now: Int64) -> [Event] {
        guard Date().timeIntervalSince(lastPoll) >= interval else { return [] }
        lastPoll = Date()
        var events: [Event] = []
        for source in sources {
            if missingSince[source] == nil, stillConnected(source) { continue }
            // Not connected to the queue any more: gone, or disconnected by someone (then it
            // stays disconnected), or (missing) back.
            let present = session.connections(ofPresent: [source])[source]
            if let connections = present {
                if let since = missingSince[source] {
                    // Back: connect it again to the queue's ports it fed.
                    for destination in destinations[source] ?? [] { try? session.connect(source, destination) }
                    missingSince[source] = nil
                    events.append(.back(port: source, frame: now, since: since))
                } else if !connections.isEmpty {
                    destinations[source] = connections
                    for name in connections where queuePorts[name] == nil { queuePorts[name] = session.port(named: name) }
                }
            } else if missingSince[source] == nil {
                missingSince[source] = now
                events.append(physical.contains(source) ? .deviceLost(port: source, frame: now) : .gone(port: source, frame: now))
            }
        }
        return events
    }
}
