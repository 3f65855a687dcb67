import CJack
import Foundation
import Glibc
import Synchronization
import Testing
import AudioToolbox
import JackDriver
import JackTestSupport
import QueueCore

/// A queue's connections and the user's: a queue removes only the connections it made itself,
/// and its connection passes never interleave (issue #30, point 4).
@Suite(.serialized) struct AudioQueueConnectionTests {
    /// Runs `body` with a JACK driver for a private server with four capture ports.
    func withServer<T>(_ body: (JackServer, JackDriver) throws -> T) throws -> T {
        let server = try JackServer(capture: 4, playback: 2)
        defer { server.stop() }
        return try JackServer.withInProcessClients { try body(server, JackDriver(serverName: server.name)) }
    }

    /// A stereo 16-bit input queue on a private server, its port names, and a patcher (a
    /// plain client making connections by hand) on the same server, for `body`.
    fileprivate func withStereoInput(_ body: (JackServer, Patcher, AudioQueueRef, [String]) throws -> Void) throws {
        try withServer { server, driver in
            let patcher = try Patcher(server: server.name, levels: [])
            defer { patcher.close() }
            var format = lpcm(channels: 2, bits: 16)
            var created: AudioQueueRef?
            #expect(AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &created, device: driver) == noErr)
            let queue = try #require(created)
            defer { AudioQueueDispose(queue, true) }
            try body(server, patcher, queue, property(queue, kAudioQueueProperty_JACKPortNames).split(separator: ",").map(String.init))
        }
    }

    func property(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID) -> String {
        var value: CFString?
        var size = UInt32(8)
        let status = withUnsafeMutablePointer(to: &value) { AudioQueueGetProperty(queue, id, $0, &size) }
        guard status == noErr, let value else { return "" }
        return String(value)
    }

    func setDevice(_ queue: AudioQueueRef, _ target: String) -> OSStatus {
        var value: CFString? = CFString.make(target)
        return withUnsafePointer(to: &value) {
            AudioQueueSetProperty(queue, kAudioQueueProperty_CurrentDevice, $0, UInt32(MemoryLayout<CFString?>.size))
        }
    }

    /// A user's connection (patcher's outputs into the queue's inputs, made as soon as those
    /// appear, the way a script with jack_connect or a patchbay does it) is still there after
    /// the queue connected itself at creation, after Start, and after CurrentDevice changed;
    /// the queue's own connections are exactly its plan (in_2 from capture_2, never capture_1),
    /// and what it recorded on both channels is the patcher's signal.
    @Test func aUsersConnectionSurvivesTheQueuesCreationStartAndDeviceChanges() throws {
        try withServer { server, driver in
            let patcher = try Patcher(server: server.name, levels: [0.5, -0.25])
            defer { patcher.close() }
            // Connects as soon as the ports of a new recording queue appear (the queue's client
            // is named after this program: "<comm>-in").
            let connector = patcher.connectAsSoonAsPortsAppear(["in_1", "in_2"], ofClientEndingWith: "-in", timeout: 10)

            var format = lpcm(channels: 2, bits: 16)
            let context = RecordingContext()
            var created: AudioQueueRef?
            #expect(AudioQueueNewInput(&format, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0,
                                       &created, device: driver) == noErr)
            let queue = try #require(created)
            let made = connector.wait()
            let ports = property(queue, kAudioQueueProperty_JACKPortNames).split(separator: ",").map(String.init)
            #expect(made == ports, "the patcher connected to the queue's ports: \(made)")
            let (in1, in2) = (ports[0], ports[1])
            let out1 = patcher.portNames[0], out2 = patcher.portNames[1]

            #expect(patcher.connections(of: in1) == ["system:capture_1", out1].sorted(), "after creation")
            #expect(patcher.connections(of: in2) == ["system:capture_2", out2].sorted(), "after creation")

            for _ in 0..<4 {
                var buffer: AudioQueueBufferRef?
                #expect(AudioQueueAllocateBuffer(queue, 4 * 1024, &buffer) == noErr)
                #expect(AudioQueueEnqueueBuffer(queue, buffer!, 0, nil) == noErr)
            }
            #expect(AudioQueueStart(queue, nil) == noErr)
            #expect(waitUntil(10) { context.samples.withLock { $0.count } >= 2 * 4800 })
            #expect(patcher.connections(of: in1) == ["system:capture_1", out1].sorted(), "after Start")
            #expect(patcher.connections(of: in2) == ["system:capture_2", out2].sorted(), "after Start")
            // What the user hears on the take: the patcher's levels on both tracks.
            let recorded = context.samples.withLock { Array($0.suffix(2 * 2400)) }
            let left = stride(from: 0, to: recorded.count, by: 2).map { recorded[$0] }
            let right = stride(from: 1, to: recorded.count, by: 2).map { recorded[$0] }
            #expect(!left.isEmpty && left.allSatisfy { abs(Int($0) - 16384) <= 1 }, "track 1 holds out_1's 0.5: \(left.prefix(4))")
            #expect(!right.isEmpty && right.allSatisfy { abs(Int($0) + 8192) <= 1 }, "track 2 holds out_2's -0.25: \(right.prefix(4))")

            // Another device: the queue's own connections move, the user's stay.
            #expect(setDevice(queue, "system:capture_3,system:capture_4") == noErr)
            #expect(patcher.connections(of: in1) == ["system:capture_3", out1].sorted(), "after CurrentDevice changed")
            #expect(patcher.connections(of: in2) == ["system:capture_4", out2].sorted(), "after CurrentDevice changed")
            #expect(property(queue, kAudioQueueProperty_JACKConnectedPorts) == "system:capture_3,system:capture_4")
            // The same device again changes nothing; "" removes the queue's own connections only.
            #expect(setDevice(queue, "system:capture_3,system:capture_4") == noErr)
            #expect(patcher.connections(of: in1) == ["system:capture_3", out1].sorted(), "after the same CurrentDevice")
            #expect(setDevice(queue, "") == noErr)
            #expect(patcher.connections(of: in1) == [out1], "after CurrentDevice \"\"")
            #expect(patcher.connections(of: in2) == [out2], "after CurrentDevice \"\"")
            #expect(setDevice(queue, "system") == noErr)
            #expect(patcher.connections(of: in1) == ["system:capture_1", out1].sorted(), "after CurrentDevice system")
            #expect(patcher.connections(of: in2) == ["system:capture_2", out2].sorted(), "after CurrentDevice system")

            #expect(AudioQueueStop(queue, true) == noErr)
            // A new name reopens the client: the user's connections come along with the queue's.
            var name: CFString? = CFString.make("renamed-in")
            let renamed = withUnsafePointer(to: &name) {
                AudioQueueSetProperty(queue, kAudioQueueProperty_JACKClientName, $0, UInt32(MemoryLayout<CFString?>.size))
            }
            #expect(renamed == noErr)
            #expect(patcher.connections(of: "renamed-in:in_1") == ["system:capture_1", out1].sorted(), "after a rename")
            #expect(patcher.connections(of: "renamed-in:in_2") == ["system:capture_2", out2].sorted(), "after a rename")
            #expect(AudioQueueDispose(queue, true) == noErr)
        }
    }

    /// A connection the user made to a port the queue connects to itself (capture_2 → in_2
    /// made by hand before CurrentDevice named it) is the user's: the queue leaves it when it
    /// moves to another device.
    @Test func aConnectionTheUserMadeFirstIsNotTakenOverByTheQueue() throws {
        try withStereoInput { _, patcher, queue, ports in
            #expect(setDevice(queue, "") == noErr)
            #expect(patcher.connect("system:capture_4", ports[1]) == 0)
            #expect(setDevice(queue, "system:capture_3,system:capture_4") == noErr)
            #expect(patcher.connections(of: ports[0]) == ["system:capture_3"])
            #expect(patcher.connections(of: ports[1]) == ["system:capture_4"])
            #expect(setDevice(queue, "system") == noErr)
            #expect(patcher.connections(of: ports[0]) == ["system:capture_1"])
            #expect(patcher.connections(of: ports[1]) == ["system:capture_2", "system:capture_4"], "the user's capture_4 → in_2 stays")
        }
    }

    /// A queue whose provider names what it connects to at creation (`jaq record`, `jaq play
    /// --to`: AudioQueueDevices.jack(clientName:connectingTo:)) makes only those connections:
    /// "" none at all (CurrentDevice then makes the only ones), a list exactly it, never the
    /// system's ports first (each connection made and removed again cost a server round trip
    /// and a graph change: issue #29).
    @Test func aQueueMadeToConnectNowhereOrElsewhereNeverConnectsToTheSystemFirst() throws {
        try withServer { server, driver in
            let patcher = try Patcher(server: server.name, levels: [])
            defer { patcher.close() }
            for (target, expected) in [("", [[String](), []]), ("system:capture_4,system:capture_3", [["system:capture_4"], ["system:capture_3"]])] {
                var format = lpcm(channels: 2, bits: 16)
                var created: AudioQueueRef?
                let provider = NamedDeviceProvider(driver, name: "jaq-target-\(expected[0].count)", target: target)
                #expect(AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &created, device: provider) == noErr)
                let queue = try #require(created)
                let ports = property(queue, kAudioQueueProperty_JACKPortNames).split(separator: ",").map(String.init)
                #expect(ports.count == 2)
                #expect(ports.map { patcher.connections(of: $0) } == expected, "at creation, target \"\(target)\"")
                #expect(property(queue, kAudioQueueProperty_CurrentDevice) == target)
                #expect(setDevice(queue, "system:capture_1,system:capture_2") == noErr)
                #expect(ports.map { patcher.connections(of: $0) } == [["system:capture_1"], ["system:capture_2"]])
                AudioQueueDispose(queue, true)
            }
            // The provider's default is still the system's ports.
            var format = lpcm(channels: 2, bits: 16)
            var created: AudioQueueRef?
            #expect(AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &created,
                                       device: NamedDeviceProvider(driver, name: "jaq-default")) == noErr)
            let queue = try #require(created)
            defer { AudioQueueDispose(queue, true) }
            let ports = property(queue, kAudioQueueProperty_JACKPortNames).split(separator: ",").map(String.init)
            #expect(ports.map { patcher.connections(of: $0) } == [["system:capture_1"], ["system:capture_2"]])
        }
    }

    /// CurrentDevice set from two threads at once: the passes take turns, so each port ends
    /// up with exactly the connection of one pass (never one pass's source on another pass's
    /// port, as when two threads' requests shared the client's socket at once), and
    /// JACKConnectedPorts says which.
    @Test func deviceChangesFromTwoThreadsNeverCrossConnections() throws {
        try withStereoInput { server, patcher, queue, ports in
            let targets = ["system:capture_1,system:capture_2", "system:capture_4,system:capture_3"]
            let failures = Mutex<[OSStatus]>([])
            let queueBox = QueueBox(queue)
            let group = DispatchGroup()
            for thread in 0..<2 {
                group.enter()
                Thread {
                    for _ in 0..<100 {
                        let status = setDevice(queueBox.queue, targets[thread])
                        if status != noErr { failures.withLock { $0.append(status) } }
                    }
                    group.leave()
                }.start()
            }
            guard group.wait(timeout: .now() + 60) == .success else {
                // Two requests written at once on the client's socket leave both threads
                // waiting for answers that never come: stopping the server unblocks them.
                Issue.record("the two threads' connection passes hung")
                server.stop()
                group.wait()
                return
            }
            #expect(failures.withLock { $0 }.isEmpty, "every set succeeded: \(failures.withLock { $0 })")
            let connected = property(queue, kAudioQueueProperty_JACKConnectedPorts)
            let first = patcher.connections(of: ports[0]), second = patcher.connections(of: ports[1])
            let expected: [[String]] = connected == "system:capture_1,system:capture_2"
                ? [["system:capture_1"], ["system:capture_2"]] : [["system:capture_4"], ["system:capture_3"]]
            #expect(targets.contains(property(queue, kAudioQueueProperty_CurrentDevice)))
            #expect([first, second] == expected, "in_1 ← \(first), in_2 ← \(second); JACKConnectedPorts \(connected)")
        }
    }
}

/// An AudioQueueRef handed to other threads.
private struct QueueBox: @unchecked Sendable {
    let queue: AudioQueueRef
    init(_ queue: AudioQueueRef) { self.queue = queue }
}

/// The test's own JACK client: a patchbay with output ports that play constant levels, the
/// way a user's player (sndfile-jackplay) and jack_connect stand beside a queue.
private final class Patcher: @unchecked Sendable {
    let client: OpaquePointer
    let state: UnsafeMutablePointer<PatcherState>
    let portNames: [String]

    init(server: String, levels: [Float]) throws {
        var status = jack_status_t(0)
        guard let client = jaq_jack_client_open("patcher", JackNoStartServer, &status, server) else {
            throw JackServerError("cannot open the patcher's client: status \(status.rawValue)")
        }
        self.client = client
        state = .allocate(capacity: 1)
        state.initialize(to: PatcherState(count: levels.count))
        var names: [String] = []
        for (i, level) in levels.enumerated() {
            let name = "out_\(i + 1)"
            state.pointee.ports[i] = jack_port_register(client, name, jaq_jack_default_audio_type(), UInt(JackPortIsOutput.rawValue), 0)
            state.pointee.levels[i] = level
            names.append(String(cString: jack_get_client_name(client)) + ":" + name)
        }
        portNames = names
        jack_set_process_callback(client, patcherProcess, UnsafeMutableRawPointer(state))
        jack_activate(client)
    }

    func close() {
        jack_deactivate(client)
        jack_client_close(client)
        state.pointee.ports.deallocate()
        state.pointee.levels.deallocate()
        state.deallocate()
    }

    /// jack_connect's result.
    func connect(_ source: String, _ destination: String) -> Int32 { jack_connect(client, source, destination) }

    /// The ports `name` is connected to, sorted.
    func connections(of name: String) -> [String] {
        guard let port = jack_port_by_name(client, name), let list = jack_port_get_all_connections(client, port) else { return [] }
        defer { jack_free(list) }
        var names: [String] = []
        var i = 0
        while let connection = list[i] {
            names.append(String(cString: connection))
            i += 1
        }
        return names.sorted()
    }

    /// A thread that waits for input ports `shortNames` of a client whose name ends with
    /// `suffix` and connects this client's outputs to them, one to one, the moment the server
    /// allows it (JACK2 refuses until the client is active): as fast as a patchbay can.
    func connectAsSoonAsPortsAppear(_ shortNames: [String], ofClientEndingWith suffix: String, timeout: Double) -> Connector {
        let connector = Connector()
        let box = UncheckedBox(self)
        let thread = Thread {
            let patcher = box.value
            let deadline = monotonicSeconds() + timeout
            var found: [String] = []
            while found.isEmpty && monotonicSeconds() < deadline {
                let inputs = Set(patcher.inputPorts())
                let clients = Set(inputs.compactMap { $0.hasSuffix(":" + shortNames[0]) ? String($0.dropLast(shortNames[0].count + 1)) : nil })
                if let client = clients.first(where: { $0.hasSuffix(suffix) }),
                   shortNames.allSatisfy({ inputs.contains(client + ":" + $0) }) {
                    found = shortNames.map { client + ":" + $0 }
                }
            }
            var made: [String] = []
            for (source, destination) in zip(patcher.portNames, found) {
                while monotonicSeconds() < deadline {
                    let result = patcher.connect(source, destination)
                    if result == 0 || result == EEXIST {
                        made.append(destination)
                        break
                    }
                }
            }
            connector.finish(made)
        }
        thread.start()
        return connector
    }

    private func inputPorts() -> [String] {
        guard let list = jack_get_ports(client, nil, jaq_jack_default_audio_type(), UInt(JackPortIsInput.rawValue)) else { return [] }
        defer { jack_free(list) }
        var names: [String] = []
        var i = 0
        while let name = list[i] {
            names.append(String(cString: name))
            i += 1
        }
        return names
    }

    /// The ports a connector thread connected to, once it is done.
    final class Connector: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let result = Mutex<[String]>([])
        func finish(_ made: [String]) {
            result.withLock { $0 = made }
            done.signal()
        }
        func wait() -> [String] {
            done.wait()
            return result.withLock { $0 }
        }
    }
}

/// Seconds on CLOCK_MONOTONIC.
private func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

private struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// The patcher's realtime state: its ports and the level each plays.
private struct PatcherState {
    let count: Int
    let ports: UnsafeMutablePointer<OpaquePointer?>
    let levels: UnsafeMutablePointer<Float>
    init(count: Int) {
        self.count = count
        ports = .allocate(capacity: max(count, 1))
        ports.initialize(repeating: nil, count: max(count, 1))
        levels = .allocate(capacity: max(count, 1))
        levels.initialize(repeating: 0, count: max(count, 1))
    }
}

private func patcherProcess(_ frames: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let state = argument?.assumingMemoryBound(to: PatcherState.self) else { return 0 }
    for i in 0..<state.pointee.count {
        guard let port = state.pointee.ports[i] else { continue }
        jack_port_get_buffer(port, frames).assumingMemoryBound(to: Float.self).update(repeating: state.pointee.levels[i], count: Int(frames))
    }
    return 0
}
