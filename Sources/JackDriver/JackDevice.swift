import CJack
import Glibc
import JackCommon
import QueueCore
import Synchronization

/// One audio queue's JACK client with its ports.
final class JackDevice: AudioDevice, @unchecked Sendable {
    let driver: JackDriver
    let direction: DeviceDirection
    let layout: PortLayout
    private let lock = Locked(Inner())
    /// The lock every request a control thread sends the server on this client is made under
    /// (connection passes, rename, close), with the connections the client made itself.
    ///
    /// libjack writes a client's requests to the server's socket without a lock (jack2's
    /// JackGenericClientChannel::ServerSyncCall), so two threads asking at once interleave their
    /// bytes: the server reads a jack_connect made of one request's source and the other's
    /// destination (a queue's in_2 fed from capture_1), or both threads wait forever for their
    /// answers. Taken before `lock`, never inside it.
    private let requests = Locked(OwnConnections())

    struct Inner {
        var rt: UnsafeMutablePointer<JackClientRealtime>?
        var name = ""
        var processor: UnsafeMutablePointer<ProcessorRecord>?
        var handler: (@Sendable (DeviceEvent) -> Void)?
        var seenXruns = 0
        var seenRateChanges = 0
        var seenFreewheelChanges = 0
        var reportedShutdown = false
    }

    init(driver: JackDriver, name: String, direction: DeviceDirection, layout: PortLayout) throws {
        self.driver = driver
        self.direction = direction
        self.layout = layout
        let rt = try Self.openClient(driver: driver, name: name, direction: direction, layout: layout)
        let actual = String(cString: jack_get_client_name(rt.pointee.client))
        lock.withLock {
            $0.rt = rt
            $0.name = actual
        }
        JackEventWatcher.shared.add(self)
    }

    private var rt: UnsafeMutablePointer<JackClientRealtime>? { lock.withLock { $0.rt } }

    var sampleRate: Double {
        guard let rt else { return 48000 }
        return Double(jack_get_sample_rate(rt.pointee.client))
    }

    var periodFrames: Int {
        guard let rt else { return 256 }
        return Int(jack_get_buffer_size(rt.pointee.client))
    }

    var clientName: String { lock.withLock { $0.name } }

    var portNames: [String] {
        let name = clientName
        return layout.names.map { "\(name):\($0)" }
    }

    var isFreewheeling: Bool { rt?.pointee.freewheeling.load(ordering: .relaxed) ?? false }

    var isAlive: Bool {
        guard let rt else { return false }
        return !rt.pointee.shutDown.load(ordering: .acquiring)
    }

    func setProcessor(_ processor: RealtimeProcessor?) {
        var record: UnsafeMutablePointer<ProcessorRecord>?
        if let processor {
            record = .allocate(capacity: 1)
            record!.initialize(to: ProcessorRecord(context: processor.context, entry: processor.entry))
        }
        let (rt, old) = lock.withLock { inner -> (UnsafeMutablePointer<JackClientRealtime>?, UnsafeMutablePointer<ProcessorRecord>?) in
            let old = inner.processor
            inner.processor = record
            return (inner.rt, old)
        }
        if let rt {
            rt.pointee.processor.store(record.map { UnsafeMutableRawPointer($0) }, ordering: .sequentiallyConsistent)
            waitForCycleEnd(rt)
        }
        if let old {
            old.deinitialize(count: 1)
            old.deallocate()
        }
    }

    /// Waits until no cycle is inside the old entry (a few periods at most).
    private func waitForCycleEnd(_ rt: UnsafeMutablePointer<JackClientRealtime>) {
        var waited = 0.0
        while rt.pointee.inCycle.load(ordering: .sequentiallyConsistent) != 0 && waited < 10 {
            if rt.pointee.shutDown.load(ordering: .acquiring) { break }
            HostClock.sleep(seconds: 0.0005)
            waited += 0.0005
        }
    }

    /// One connection between a port of this client (by index) and another client's port.
    struct Connection: Equatable {
        let port: Int
        let other: String
    }

    /// The connections a client made itself: the only ones a connection pass removes.
    struct OwnConnections {
        var made: [Connection] = []
    }

    /// Connects the ports as `target` plans, and removes the connections this client made
    /// itself that the plan does not keep. A connection someone else made (jack_connect, a
    /// patchbay, a DAW) is never removed, not even one joining the same ports as the plan: it is
    /// theirs. A connection the plan keeps and that is still there is left alone (no gap).
    func connect(to target: String) throws -> [String] {
        try requests.withLock { own in
            guard let rt, isAlive else { throw QueueError.queueInvalidated }
            let client = rt.pointee.client
            let wantInputs = direction == .output
            let kind = UInt(wantInputs ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue)
            let names = portNames
            let ours = Set(names)
            let candidates = JackPorts.list(client, flags: kind).filter { !ours.contains($0) }
            let physical = JackPorts.list(client, flags: kind | UInt(JackPortIsPhysical.rawValue))
            let targets = try PortMatcher.resolve(target, candidates: candidates, physical: physical)
            let plan = PortMatcher.plan(portCount: layout.names.count, targets: targets, monoPair: layout.isMonoPair)
            let wanted = plan.map { Connection(port: $0.port, other: $0.target) }
            // (source, destination) of a connection, output port first.
            func ends(_ connection: Connection) -> (String, String) {
                wantInputs ? (names[connection.port], connection.other) : (connection.other, names[connection.port])
            }
            var kept: [Connection] = []
            for connection in own.made {
                if wanted.contains(connection) {
                    // Kept if it is still there (someone may have removed it meanwhile).
                    if jack_port_connected_to(rt.pointee.ports[connection.port], connection.other) != 0 { kept.append(connection) }
                } else {
                    let (source, destination) = ends(connection)
                    // A failure means it is gone already: removed by someone else, or its port left.
                    _ = jack_disconnect(client, source, destination)
                }
            }
            own.made = kept
            for connection in wanted where !kept.contains(connection) {
                let (source, destination) = ends(connection)
                let result = JackPorts.connect(client, source, destination)
                if result == 0 {
                    own.made.append(connection)
                } else if result != EEXIST {
                    throw QueueError.invalidDevice("cannot connect \(source) to \(destination)")
                }
                // EEXIST: someone else made this connection; it stays theirs.
            }
            return Array(Set(plan.map { $0.target })).sorted()
        }
    }

    /// The server's cycle clock with its frame extended to 64 bits; nil before the first cycle
    /// on PipeWire (see `JackCycleClock`).
    private func cycleClock() -> (clock: JackCycleClock, frame: Int64)? {
        guard let rt, let clock = JackCycleClock.read(rt.pointee.client) else { return nil }
        return (clock, extendFrameTime(clock.frames, reference: driver.frameReference.pointee.load(ordering: .relaxed)))
    }

    /// The frame the last cycle began on, for when the server has no clock to report yet.
    private var lastCycleFrame: Int64 {
        let reference = driver.frameReference.pointee.load(ordering: .relaxed)
        return reference == .min ? 0 : reference
    }

    // Device time. On jackd2, libjack's own conversions (correct there, and what every other
    // client of the server computes, in freewheel too), moved onto CLOCK_MONOTONIC; on PipeWire,
    // jaq's from the cycle times, as its conversions are wrong (see JackCycleClock).

    func currentFrame() -> Int64 {
        guard let rt else { return 0 }
        guard JackLibrary.isPipeWire else {
            return extendFrameTime(jack_frame_time(rt.pointee.client), reference: driver.frameReference.pointee.load(ordering: .relaxed))
        }
        return frame(forHostTime: HostClock.nanoseconds())
    }

    func hostTime(forFrame frame: Int64) -> UInt64 {
        guard let rt else { return HostClock.nanoseconds() }
        guard JackLibrary.isPipeWire else {
            let usecs = jack_frames_to_time(rt.pointee.client, UInt32(truncatingIfNeeded: frame))
            return UInt64(bitPattern: (Int64(bitPattern: usecs) &+ JackCycleClock.hostOffsetMicroseconds()) &* 1000)
        }
        guard let (clock, cycleFrame) = cycleClock() else { return HostClock.nanoseconds() }
        return clock.hostTime(atFrameOffset: frame - cycleFrame)
    }

    func frame(forHostTime hostTime: UInt64) -> Int64 {
        guard let rt else { return 0 }
        guard JackLibrary.isPipeWire else {
            let usecs = Int64(bitPattern: hostTime / 1000) &- JackCycleClock.hostOffsetMicroseconds()
            let frames = jack_time_to_frames(rt.pointee.client, jack_time_t(bitPattern: usecs))
            return extendFrameTime(frames, reference: driver.frameReference.pointee.load(ordering: .relaxed))
        }
        guard let (clock, cycleFrame) = cycleClock() else { return lastCycleFrame }
        return cycleFrame + clock.frameOffset(atHostTime: hostTime)
    }

    func portLatency(_ index: Int) -> ClosedRange<Int> {
        guard let rt, index >= 0, index < rt.pointee.portCount else { return 0...0 }
        var range = jack_latency_range_t(min: 0, max: 0)
        jack_port_get_latency_range(rt.pointee.ports[index],
                                    direction == .input ? JackCaptureLatency : JackPlaybackLatency, &range)
        return Int(range.min)...Int(max(range.min, range.max))
    }

    func synchronize(isApplied: () -> Bool, applyDirectly: () -> Void) {
        guard let rt else { return applyDirectly() }
        let period = Double(periodFrames) / sampleRate
        let limit = Deadline.after(seconds: max(0.5, 20 * period))
        while !isApplied() {
            if rt.pointee.shutDown.load(ordering: .acquiring) || limit.hasPassed {
                // No cycle is coming (server gone or stalled): take the commands here,
                // with the entry detached so no cycle can run it meanwhile.
                let record = rt.pointee.processor.exchange(nil, ordering: .sequentiallyConsistent)
                waitForCycleEnd(rt)
                if !isApplied() { applyDirectly() }
                rt.pointee.processor.store(record, ordering: .sequentiallyConsistent)
                return
            }
            JackCycleClock.sleepTowardNextCycle(rt.pointee.client)
        }
    }

    func setEventHandler(_ handler: (@Sendable (DeviceEvent) -> Void)?) {
        lock.withLock { $0.handler = handler }
    }

    /// Reopens the client as `name`. The connections others made to its ports are made again
    /// to the new ports (and stay theirs); the caller reconnects the queue's own.
    func rename(to name: String) throws {
        try requests.withLock { own in
            guard let old = rt else { throw QueueError.queueInvalidated }
            let record = lock.withLock { $0.processor }
            let theirs = (0..<old.pointee.portCount).flatMap { port in
                JackPorts.connections(of: old.pointee.ports[port], in: old.pointee.client)
                    .filter { !own.made.contains(Connection(port: port, other: $0)) }
                    .map { Connection(port: port, other: $0) }
            }
            let replacement = try Self.openClient(driver: driver, name: name, direction: direction, layout: layout)
            let newName = String(cString: jack_get_client_name(replacement.pointee.client))
            for connection in theirs {
                let mine = newName + ":" + layout.names[connection.port]
                _ = direction == .output ? jack_connect(replacement.pointee.client, mine, connection.other)
                    : jack_connect(replacement.pointee.client, connection.other, mine)
            }
            replacement.pointee.processor.store(record.map { UnsafeMutableRawPointer($0) }, ordering: .sequentiallyConsistent)
            old.pointee.processor.store(nil, ordering: .sequentiallyConsistent)
            waitForCycleEnd(old)
            let serverGone = old.pointee.shutDown.load(ordering: .acquiring)
            if !serverGone { jack_deactivate(old.pointee.client) }
            JackClients.close(old.pointee.client, serverGone: serverGone) { Self.free(old) }
            own.made = []  // the new client has made none yet
            lock.withLock {
                $0.rt = replacement
                $0.name = newName
            }
        }
    }

    func close() {
        JackEventWatcher.shared.remove(self)
        requests.withLock { own in
            guard let rt = lock.withLock({ inner -> UnsafeMutablePointer<JackClientRealtime>? in
                let rt = inner.rt
                inner.rt = nil
                return rt
            }) else { return }
            own.made = []
            rt.pointee.processor.store(nil, ordering: .sequentiallyConsistent)
            waitForCycleEnd(rt)
            let serverGone = rt.pointee.shutDown.load(ordering: .acquiring)
            if !serverGone { jack_deactivate(rt.pointee.client) }
            // After the server went away libjack's close can hang for ever: bounded (JackClients).
            JackClients.close(rt.pointee.client, serverGone: serverGone) { Self.free(rt) }
        }
        lock.withLock { inner in
            if let record = inner.processor {
                record.deinitialize(count: 1)
                record.deallocate()
                inner.processor = nil
            }
        }
    }

    /// Turns the flags the callbacks set into device events (watcher thread).
    func reportEvents() {
        let (handler, events): ((@Sendable (DeviceEvent) -> Void)?, [DeviceEvent]) = lock.withLock { inner in
            guard let rt = inner.rt else { return (nil, []) }
            var events: [DeviceEvent] = []
            let xruns = rt.pointee.xruns.load(ordering: .relaxed)
            for _ in inner.seenXruns..<max(inner.seenXruns, xruns) { events.append(.xrun) }
            inner.seenXruns = xruns
            let rates = rt.pointee.rateChanges.load(ordering: .relaxed)
            if rates != inner.seenRateChanges {
                inner.seenRateChanges = rates
                events.append(.sampleRateChanged(Double(jack_get_sample_rate(rt.pointee.client))))
            }
            let freewheels = rt.pointee.freewheelChanges.load(ordering: .relaxed)
            if freewheels != inner.seenFreewheelChanges {
                inner.seenFreewheelChanges = freewheels
                events.append(.freewheel(rt.pointee.freewheeling.load(ordering: .relaxed)))
            }
            if rt.pointee.shutDown.load(ordering: .acquiring) && !inner.reportedShutdown {
                inner.reportedShutdown = true
                let status = rt.pointee.shutdownStatus.load(ordering: .relaxed)
                events.append(.shutdown(reason: "the JACK server shut down" + (status == 0 ? "" : ": \(JackError(status: status))")))
            }
            return (inner.handler, events)
        }
        guard let handler else { return }
        for event in events { handler(event) }
    }
}
