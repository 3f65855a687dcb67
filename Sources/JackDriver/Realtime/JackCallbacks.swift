import CJack
import Glibc
import JackCommon
import QueueCore
import Synchronization

// What libjack runs on a queue client's threads (the process thread, and the notification
// thread for shutdown, xruns, rate and freewheel changes): the client's realtime view and its
// callbacks. Nothing here locks, allocates, logs or waits; the notifications only set flags and
// post the event watcher's semaphore.
//
// `@_noLocks` (release builds) covers the process cycle's kernels, `beginJackCycle` and
// `endJackCycle`. The callbacks themselves call libjack or libc (jack_port_get_buffer,
// sem_post through `JackEventWatcher.shared`, setpriority, jack_port_set_latency_range), which
// the checker cannot see into, so it refuses them: they are kept to those calls and atomics.

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
/// Not `@_noLocks` itself: the checker refuses calls into libjack (C, "not available in this
/// module"), and the engine's entry, a C function pointer, may wait for the queue thread in
/// freewheel (`mayWait`), by design. What it does besides is in the kernels below.
func jackProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
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
    if let cycle = beginJackCycle(rt, frameCount: n, lastFrameTime: jack_last_frame_time(rt.pointee.client)) {
        cycle.record.pointee.entry(cycle.record.pointee.context, cycle.frame, Int32(n), UnsafePointer(rt.pointee.buffers),
                                   cycle.freewheeling, cycle.freewheeling)
    }
    endJackCycle(rt)
    return 0
}

/// Enters a cycle (the handshake that lets `setProcessor(nil)` wait it out) and advances the
/// shared device time: the engine's entry to run with the cycle's 64-bit frame, or nil when
/// there is none (an output client's ports are then silenced).
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
func beginJackCycle(_ rt: UnsafeMutablePointer<JackClientRealtime>, frameCount n: Int, lastFrameTime: UInt32)
    -> (record: UnsafeMutablePointer<ProcessorRecord>, frame: Int64, freewheeling: Bool)? {
    rt.pointee.inCycle.store(1, ordering: .sequentiallyConsistent)
    guard let raw = rt.pointee.processor.load(ordering: .sequentiallyConsistent) else {
        if rt.pointee.isOutput {
            for p in 0..<rt.pointee.portCount { rt.pointee.buffers[p].update(repeating: 0, count: n) }
        }
        return nil
    }
    let reference = rt.pointee.frameReference.pointee.load(ordering: .relaxed)
    let frame = extendFrameTime(lastFrameTime, reference: reference)
    if frame > reference {
        _ = rt.pointee.frameReference.pointee.compareExchange(expected: reference, desired: frame, ordering: .relaxed)
    }
    return (raw.assumingMemoryBound(to: ProcessorRecord.self), frame, rt.pointee.freewheeling.load(ordering: .relaxed))
}

/// Leaves the cycle `beginJackCycle` entered, and counts it.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
func endJackCycle(_ rt: UnsafeMutablePointer<JackClientRealtime>) {
    rt.pointee.inCycle.store(0, ordering: .sequentiallyConsistent)
    rt.pointee.cyclesRun.wrappingAdd(1, ordering: .relaxed)
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
func jackThreadInit(_ argument: UnsafeMutableRawPointer?) {
    guard sched_getscheduler(0) == SCHED_OTHER else { return }
    // PRIO_PROCESS with who 0 is the calling thread on Linux (nice is per thread).
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, -10)
    _ = jaq_thread_set_slice(processThreadSliceNanoseconds)
}

/// The scheduling slice a non-realtime process thread asks for (`jaq_thread_set_slice`): a
/// tenth of a 256-frame cycle at 48 kHz, well above what a cycle of jaq's needs (the kernel
/// allows 0.1 to 100 ms).
let processThreadSliceNanoseconds: UInt64 = 500_000

/// Shutdown: like a signal handler, only flags (the client's, and the process's for JackClients) and a semaphore post.
func jackShutdown(_ code: jack_status_t, _ reason: UnsafePointer<CChar>?, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    rt.pointee.shutdownStatus.store(UInt32(code.rawValue), ordering: .relaxed)
    rt.pointee.shutDown.store(true, ordering: .releasing)
    JackClients.serverWentAway()
    JackEventWatcher.shared.signal.post()
}

func jackXrun(_ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    argument.assumingMemoryBound(to: JackClientRealtime.self).pointee.xruns.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
    return 0
}

func jackSampleRate(_ rate: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    argument.assumingMemoryBound(to: JackClientRealtime.self).pointee.rateChanges.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
    return 0
}

func jackFreewheel(_ starting: Int32, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    rt.pointee.freewheeling.store(starting != 0, ordering: .relaxed)
    rt.pointee.freewheelChanges.wrappingAdd(1, ordering: .relaxed)
    JackEventWatcher.shared.signal.post()
}

/// Reports latency: a queue adds none of its own, so its output ports capture
/// nothing earlier than now ([0, 0]) and its input ports deliver to nobody later.
func jackLatency(_ mode: jack_latency_callback_mode_t, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let rt = argument.assumingMemoryBound(to: JackClientRealtime.self)
    var none = jack_latency_range_t(min: 0, max: 0)
    let ours = rt.pointee.isOutput ? JackCaptureLatency : JackPlaybackLatency
    guard mode == ours, rt.pointee.portsReady.load(ordering: .acquiring) else { return }
    for p in 0..<rt.pointee.portCount { jack_port_set_latency_range(rt.pointee.ports[p], mode, &none) }
}
