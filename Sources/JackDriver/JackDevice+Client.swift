import CJack
import Glibc
import JackCommon
import QueueCore
import Synchronization

// Opening a JackDevice's client. Its realtime view and the callbacks libjack calls on its threads
// are in Realtime/JackCallbacks.swift.

extension JackDevice {
    /// Opens, registers the ports, installs the callbacks and activates a client. A port
    /// registration or an activation that fails on a client that opened is tried again on a new
    /// client a few times: PipeWire's libjack (0.3.65) fails every later request of a client
    /// once another client's port vanished while it was binding it (CJack.c), though the
    /// server is fine and a new client gets through.
    static func openClient(driver: JackDriver, name: String, direction: DeviceDirection,
                                   layout: PortLayout) throws -> UnsafeMutablePointer<JackClientRealtime> {
        var attempt = 1
        while true {
            do {
                return try openClientOnce(driver: driver, name: name, direction: direction, layout: layout,
                                          requiresCycle: attempt < 4)
            } catch let failure as ClientSetupFailure {
                guard attempt < 5 else { throw failure.error }
                attempt += 1
                HostClock.sleep(seconds: failure.retryAfter)
            }
        }
    }

    /// A client that opened but could not register its ports or activate.
    private struct ClientSetupFailure: Error {
        let error: QueueError
        /// How long to wait before the next attempt.
        var retryAfter = 0.005
    }

    private static func openClientOnce(driver: JackDriver, name: String, direction: DeviceDirection,
                                       layout: PortLayout, requiresCycle: Bool) throws -> UnsafeMutablePointer<JackClientRealtime> {
        if let stuck = JackClients.stuckReason { throw QueueError.invalidDevice(stuck) }
        var status = jack_status_t(0)
        let limit = Int(jack_client_name_size()) - 1
        let clientName = String(name.prefix(max(limit, 1)))
        guard let client = JackClients.open(clientName, JackNoStartServer, &status, driver.serverName) else {
            let environment = getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) } ?? ""
            let server = driver.serverName ?? environment
            let which = server.isEmpty ? "the default JACK server" : "JACK server \"\(server)\""
            throw QueueError.invalidDevice("cannot open a client on \(which): \(JackError(status))")
        }
        if JackCycleClock.serverIsFreewheeling(client) {
            JackClients.close(client, serverGone: false)
            throw QueueError.invalidDevice(JackFreewheelError().description)
        }
        let portCount = layout.names.count
        let ports = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: portCount)
        ports.initialize(repeating: nil, count: portCount)
        let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(portCount, 1))
        let rt = UnsafeMutablePointer<JackClientRealtime>.allocate(capacity: 1)
        rt.initialize(to: JackClientRealtime(
            client: client, isOutput: direction == .output, portCount: portCount, ports: ports, buffers: buffers,
            frameReference: driver.frameReference))
        // The shared device time starts from this server's frame time: the cycle clock where the
        // server reports one (jackd2 does for any client); PipeWire's reports nothing before the
        // client's first cycle (and its jack_frame_time is not a frame time then), so there the
        // first cycle sets it.
        if driver.frameReference.pointee.load(ordering: .relaxed) == .min, let clock = JackCycleClock.read(client) {
            _ = driver.frameReference.pointee.compareExchange(
                expected: .min, desired: Int64(clock.frames), ordering: .relaxed)
        }
        let argument = UnsafeMutableRawPointer(rt)
        jack_set_process_callback(client, jackProcess, argument)
        jack_set_thread_init_callback(client, jackThreadInit, nil)
        jack_on_info_shutdown(client, jackShutdown, argument)
        jack_set_xrun_callback(client, jackXrun, argument)
        jack_set_sample_rate_callback(client, jackSampleRate, argument)
        jack_set_freewheel_callback(client, jackFreewheel, argument)
        jack_set_latency_callback(client, jackLatency, argument)
        guard jack_activate(client) == 0 else {
            JackClients.close(client, serverGone: rt.pointee.shutDown.load(ordering: .acquiring)) { Self.free(rt) }
            throw ClientSetupFailure(error: .invalidDevice("cannot activate JACK client \(clientName)"))
        }
        // PipeWire's libjack reports no clock until the client's first cycle: wait for it, so
        // device time is valid as soon as the queue exists (jackd2 reports it at once).
        var waited = 0.0
        while JackCycleClock.read(client)?.isCurrent != true && waited < 2 && !rt.pointee.shutDown.load(ordering: .acquiring) {
            HostClock.sleep(seconds: 0.001)
            waited += 0.001
        }
        // jackd 1.9.21 sometimes never runs a client it has activated: it logs the client as
        // triggered and not finished every cycle, for good (seen when a client of the same name
        // had just left the server). Its first cycle comes within a few periods otherwise: a
        // client that has none in a second is opened again (the last attempt is kept as it is).
        if requiresCycle && !JackLibrary.isPipeWire {
            let deadline = Deadline.after(seconds: 1)
            while rt.pointee.cyclesRun.load(ordering: .relaxed) == 0 && !deadline.hasPassed
                    && !rt.pointee.shutDown.load(ordering: .acquiring) {
                JackCycleClock.sleepTowardNextCycle(client)
            }
            if rt.pointee.cyclesRun.load(ordering: .relaxed) == 0 && !rt.pointee.shutDown.load(ordering: .acquiring) {
                jack_deactivate(client)
                JackClients.close(client, serverGone: false) { Self.free(rt) }
                // Long enough for the server to have let go of this client's name.
                throw ClientSetupFailure(error: .invalidDevice("the JACK server ran no cycle of client \(clientName)"), retryAfter: 0.25)
            }
        }
        let flags = UInt(direction == .output ? JackPortIsOutput.rawValue : JackPortIsInput.rawValue)
        for (i, short) in layout.names.enumerated() {
            ports[i] = jack_port_register(client, short, jaq_jack_default_audio_type(), flags, 0)
            if ports[i] == nil {
                let serverGone = rt.pointee.shutDown.load(ordering: .acquiring)
                if !serverGone { jack_deactivate(client) }
                JackClients.close(client, serverGone: serverGone) { Self.free(rt) }
                throw ClientSetupFailure(error: .invalidDevice("cannot register JACK port \(short)"))
            }
        }
        rt.pointee.portsReady.store(true, ordering: .releasing)
        return rt
    }

    static func free(_ rt: UnsafeMutablePointer<JackClientRealtime>) {
        rt.pointee.ports.deallocate()
        rt.pointee.buffers.deallocate()
        rt.deinitialize(count: 1)
        rt.deallocate()
    }
}
