import CJack
import Glibc
import JackCommon
import QueueCore
import Synchronization

// A JackDevice's client: its realtime view, the callbacks libjack calls on its threads, and opening it.

/// A queue's realtime view of its JACK client: plain memory, allocated before the
/// client is activated and freed after it is closed.
struct JackClientRealtime: ~Copyable {
    let client: OpaquePointer
    let isOutput: Bool
    let portCount: Int
    let ports: UnsafeMutablePointer<OpaquePointer?>
    let buffers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let frameReference: UnsafeMutablePointer<Atomic<Int64>>
    /// The engine's entry (a `ProcessorRecord`), swapped by control threads.
    let processor = Atomic<UnsafeMutableRawPointer?>(nil)
    /// 1 while a cycle runs the entry: the handshake that lets `setProcessor(nil)` wait it out.
    let inCycle = Atomic<Int>(0)
    /// Cycles run so far (the check that the server runs the client at all).
    let cyclesRun = Atomic<Int>(0)
    /// The ports are registered: until then a cycle only counts itself (they are registered
    /// once the server has run the client, so a client it never runs shows no port).
    let portsReady = Atomic<Bool>(false)
    let freewheeling = Atomic<Bool>(false)
    let shutDown = Atomic<Bool>(false)
    /// The `jack_status_t` the shutdown callback gave (its reason), stored before `shutDown`.
    let shutdownStatus = Atomic<UInt32>(0)
    let xruns = Atomic<Int>(0)
    let rateChanges = Atomic<Int>(0)
    let freewheelChanges = Atomic<Int>(0)
}

struct ProcessorRecord {
    let context: UnsafeMutableRawPointer
    let entry: RealtimeEntry
}

// MARK: JACK callbacks (global, non-isolated functions: JACK calls them on its threads)

/// The process trampoline: port buffers and frame time from libjack, then the engine's entry.
private func jackProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    guard rt.pointee.portsReady.load(ordering: .acquiring) else {
        rt.pointee.cyclesRun.wrappingAdd(1, ordering: .relaxed)
        return 0
    }
    let n = Int(frameCount)
    for p in 0..<rt.pointee.portCount {
        rt.pointee.buffers[p] = jack_port_get_buffer(rt.pointee.ports[p], frameCount).assumingMemoryBound(to: Float.self)
    }
    rt.pointee.inCycle.store(1, ordering: .sequentiallyConsistent)
    if let raw = rt.pointee.processor.load(ordering: .sequentiallyConsistent) {
        let record = raw.assumingMemoryBound(to: ProcessorRecord.self)
        let reference = rt.pointee.frameReference.pointee.load(ordering: .relaxed)
        let frame = extendFrameTime(jack_last_frame_time(rt.pointee.client), reference: reference)
        if frame > reference {
            _ = rt.pointee.frameReference.pointee.compareExchange(expected: reference, desired: frame, ordering: .relaxed)
        }
        let freewheeling = rt.pointee.freewheeling.load(ordering: .relaxed)
        record.pointee.entry(record.pointee.context, frame, Int32(n), UnsafePointer(rt.pointee.buffers),
                             freewheeling, freewheeling)
    } else if rt.pointee.isOutput {
        for p in 0..<rt.pointee.portCount { rt.pointee.buffers[p].update(repeating: 0, count: n) }
    }
    rt.pointee.inCycle.store(0, ordering: .sequentiallyConsistent)
    rt.pointee.cyclesRun.wrappingAdd(1, ordering: .relaxed)
    return 0
}

/// Runs on the client's process thread before its first cycle. On a server without realtime
/// scheduling (`jackd --no-realtime`, a desktop without rtprio) that thread is an ordinary one,
/// and every other thread of the machine (the queue's own, the writer's, a compiler) may
/// preempt it mid-cycle: the server then names the client as late (an xrun). It is given the
/// priority the system allows (nice -10 with CAP_SYS_NICE or RLIMIT_NICE, else unchanged);
/// a realtime (SCHED_FIFO/RR) thread is left alone.
///
/// Nice is a share of the CPU, not a promptness: on Linux 6.12 and later (EEVDF) a thread that
/// wakes while another runs waits, whatever its nice, until the running one has used its slice
/// (1.4 ms here; a second busy thread per core doubles it), and on a 2-core machine a kernel
/// thread reclaiming memory, a process starting (`jaq record` while `jaq play`'s client runs) or
/// a compiler then makes a 5.3 ms cycle late. Measured with the record-format tests' take on an
/// idle 2-core machine: xruns in 12 of 20 runs before, 6 of 20 after, in the take 5 and 1; with
/// two busy loops beside it, 4 of 6 takes lost frames before, 2 of 12 after (Docs/testing.md,
/// "Xruns"). So the thread also asks for a short slice (`processThreadSliceNanoseconds`), which
/// makes it preempt threads with longer slices when it wakes; older kernels ignore it.
private func jackThreadInit(_ argument: UnsafeMutableRawPointer?) {
    guard sched_getscheduler(0) == SCHED_OTHER else { return }
    // PRIO_PROCESS with who 0 is the calling thread on Linux (nice is per thread).
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, -10)
    _ = jaq_thread_set_slice(processThreadSliceNanoseconds)
}

/// The scheduling slice a non-realtime process thread asks for (`jaq_thread_set_slice`): a
/// tenth of a 256-frame cycle at 48 kHz, well above what a cycle of jaq's needs (the kernel
/// allows 0.1 to 100 ms).
let processThreadSliceNanoseconds: UInt64 = 500_000

/// Shutdown: like a signal handler, only a flag and a semaphore post.
private func jackShutdown(_ code: jack_status_t, _ reason: UnsafePointer<CChar>?, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    rt.pointee.shutdownStatus.store(UInt32(code.rawValue), ordering: .relaxed)
    rt.pointee.shutDown.store(true, ordering: .releasing)
    JackEventWatcher.shared.signal.post()
}

private func jackXrun(_ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    argument.assumingMemoryBound(to: JackClientRealtime.self).pointee.xruns.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
    return 0
}

private func jackSampleRate(_ rate: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    argument.assumingMemoryBound(to: JackClientRealtime.self).pointee.rateChanges.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
    return 0
}

private func jackFreewheel(_ starting: Int32, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    rt.pointee.freewheeling.store(starting != 0, ordering: .relaxed)
    rt.pointee.freewheelChanges.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
}

/// Reports latency: a queue adds none of its own, so its output ports capture
/// nothing earlier than now ([0, 0]) and its input ports deliver to nobody later.
private func jackLatency(_ mode: jack_latency_callback_mode_t, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    var none = jack_latency_range_t(min: 0, max: 0)
    let ours = rt.pointee.isOutput ? JackCaptureLatency : JackPlaybackLatency
    guard mode == ours, rt.pointee.portsReady.load(ordering: .acquiring) else { return }
    for p in 0..<rt.pointee.portCount { jack_port_set_latency_range(rt.pointee.ports[p], mode, &none) }
}

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
        var status = jack_status_t(0)
        let limit = Int(jack_client_name_size()) - 1
        let clientName = String(name.prefix(max(limit, 1)))
        guard let client = jaq_jack_client_open(clientName, JackNoStartServer, &status, driver.serverName) else {
            let environment = getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) } ?? ""
            let server = driver.serverName ?? environment
            let which = server.isEmpty ? "the default JACK server" : "JACK server \"\(server)\""
            throw QueueError.invalidDevice("cannot open a client on \(which): \(JackError(status))")
        }
        if JackCycleClock.serverIsFreewheeling(client) {
            jack_client_close(client)
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
            jack_client_close(client)
            Self.free(rt)
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
                HostClock.sleep(seconds: 0.001)
            }
            if rt.pointee.cyclesRun.load(ordering: .relaxed) == 0 && !rt.pointee.shutDown.load(ordering: .acquiring) {
                jack_deactivate(client)
                jack_client_close(client)
                Self.free(rt)
                // Long enough for the server to have let go of this client's name.
                throw ClientSetupFailure(error: .invalidDevice("the JACK server ran no cycle of client \(clientName)"), retryAfter: 0.25)
            }
        }
        let flags = UInt(direction == .output ? JackPortIsOutput.rawValue : JackPortIsInput.rawValue)
        for (i, short) in layout.names.enumerated() {
            ports[i] = jack_port_register(client, short, jaq_jack_default_audio_type(), flags, 0)
            if ports[i] == nil {
                jack_deactivate(client)
                jack_client_close(client)
                Self.free(rt)
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
