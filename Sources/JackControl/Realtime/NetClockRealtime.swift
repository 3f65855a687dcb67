import CJack
import QueueCore
import Synchronization

// What libjack runs on the netjack2 clock clients' process threads: the generator writes the
// clock of the cycle's frames, the reader checks every sample against the clock it locked on
// and pushes gaps and jumps into its event ring. No locks, no allocation, no waiting.

// MARK: - The generator

struct NetClockGeneratorRealtime: ~Copyable {
    let client: OpaquePointer
    let port: OpaquePointer
    let cycles = Atomic<Int>(0)
    let shutDown = Atomic<Bool>(false)

}

/// The server shut the generator down: only a flag.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
func netClockShutdown(_ argument: UnsafeMutableRawPointer?) {
    argument?.assumingMemoryBound(to: NetClockGeneratorRealtime.self).pointee.shutDown.store(true, ordering: .relaxed)
}

/// The generator's process trampoline: the port's buffer and the cycle's first frame from
/// libjack (C, which the `@_noLocks` checker cannot see into), then the kernel.
func netClockGeneratorProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let rt = argument.assumingMemoryBound(to: NetClockGeneratorRealtime.self)
    let buffer = jack_port_get_buffer(rt.pointee.port, frameCount).assumingMemoryBound(to: Float.self)
    fillNetClock(buffer, count: Int(frameCount), firstFrame: jack_last_frame_time(rt.pointee.client))
    rt.pointee.cycles.wrappingAdd(1, ordering: .relaxed)
    return 0
}

/// Writes the clock of frames `firstFrame…` into `buffer`.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
func fillNetClock(_ buffer: UnsafeMutablePointer<Float>, count: Int, firstFrame: UInt32) {
    for i in 0..<count { buffer[i] = NetClockCode.sample(firstFrame &+ UInt32(truncatingIfNeeded: i)) }
}

// MARK: - The reader

/// One event in the reader's ring: a gap (`value` frames) or a jump (`value` the offset change).
struct NetClockRawEvent: BitwiseCopyable {
    var isJump = false
    var frame: UInt32 = 0
    var value = 0
}

/// The reader's realtime state: plain memory, allocated before activation, freed after close.
struct NetClockReaderRealtime: ~Copyable {
    static let ringCapacity = 256
    /// Cycles of one unbroken clock before the reader locks on it.
    static let lockCycles = 4
    /// Cycles of a new unbroken clock (about a third of a second at 256 frames, 48 kHz) before the
    /// reader takes it as a jump rather than frames netjack2 filled from other cycles.
    static let jumpCycles = 64

    let client: OpaquePointer
    let port: OpaquePointer
    /// Gaps and jumps: produced by the process thread, consumed by `events()` (the engine's
    /// single-producer, single-consumer ring).
    let ring = EventRing<NetClockRawEvent>(minimumCapacity: ringCapacity)
    let lostEvents = Atomic<Int>(0)
    /// Bit 32 set once locked; the low 32 bits are the offset (master − local).
    let published = Atomic<UInt64>(0)
    let readableCycles = Atomic<Int>(0)
    let unreadableCycles = Atomic<Int>(0)
    /// Unreadable cycles that were not silence (a signal, but no clock).
    let signalCycles = Atomic<Int>(0)
    let openGapStart = Atomic<Int>(0)
    let openGapFrames = Atomic<Int>(0)

    // The process thread's own.
    var locked = false
    var offset: UInt32 = 0
    var candidate: UInt32 = 0
    var candidateCycles = 0
    var gapOpen = false
    var gapStart: UInt32 = 0
    var gapFrames = 0

    init(client: OpaquePointer, port: OpaquePointer) {
        self.client = client
        self.port = port
    }
}

/// The reader's process trampoline: the port's samples and the cycle's frame from libjack,
/// then the kernel.
func netClockReaderProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let rt = argument.assumingMemoryBound(to: NetClockReaderRealtime.self)
    let samples = UnsafePointer(jack_port_get_buffer(rt.pointee.port, frameCount).assumingMemoryBound(to: Float.self))
    readNetClockCycle(rt, samples: samples, count: Int(frameCount), localFrame: jack_last_frame_time(rt.pointee.client))
    return 0
}

/// One cycle of the reader: lock on an unbroken clock, then check every sample against it.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
func readNetClockCycle(_ rt: UnsafeMutablePointer<NetClockReaderRealtime>, samples: UnsafePointer<Float>, count: Int,
                       localFrame: UInt32) {
    let first = NetClockCode.firstFrame(samples, count: count)
    if first != nil {
        rt.pointee.readableCycles.wrappingAdd(1, ordering: .relaxed)
    } else {
        rt.pointee.unreadableCycles.wrappingAdd(1, ordering: .relaxed)
        for i in 0..<count where samples[i] != 0 {
            rt.pointee.signalCycles.wrappingAdd(1, ordering: .relaxed)
            break
        }
    }
    // This cycle's own offset (when it is an unbroken clock), counted while it holds.
    if let first {
        let offset = first &- localFrame
        if rt.pointee.candidateCycles > 0 && offset == rt.pointee.candidate {
            rt.pointee.candidateCycles += 1
        } else {
            rt.pointee.candidate = offset
            rt.pointee.candidateCycles = 1
        }
    } else {
        rt.pointee.candidateCycles = 0
    }
    guard rt.pointee.locked else {
        if rt.pointee.candidateCycles >= NetClockReaderRealtime.lockCycles {
            rt.pointee.locked = true
            rt.pointee.offset = rt.pointee.candidate
            rt.pointee.published.store(1 << 32 | UInt64(rt.pointee.candidate), ordering: .releasing)
        }
        return
    }
    // Locked: every sample must carry local frame + offset.
    var bad = 0
    var firstBad = -1
    let base = localFrame &+ rt.pointee.offset
    for i in 0..<count where samples[i] != NetClockCode.sample(base &+ UInt32(truncatingIfNeeded: i)) {
        bad += 1
        if firstBad < 0 { firstBad = i }
    }
    if bad == 0 {
        if rt.pointee.gapOpen {
            pushNetClockEvent(rt, NetClockRawEvent(isJump: false, frame: rt.pointee.gapStart, value: rt.pointee.gapFrames))
            rt.pointee.gapOpen = false
            rt.pointee.openGapFrames.store(0, ordering: .releasing)
        }
        return
    }
    if rt.pointee.gapOpen {
        rt.pointee.gapFrames += bad
    } else {
        rt.pointee.gapOpen = true
        rt.pointee.gapStart = localFrame &+ UInt32(truncatingIfNeeded: firstBad)
        rt.pointee.gapFrames = bad
        rt.pointee.openGapStart.store(Int(rt.pointee.gapStart), ordering: .relaxed)
    }
    rt.pointee.openGapFrames.store(rt.pointee.gapFrames, ordering: .releasing)
    // A new clock that holds is a jump, from where the old one broke.
    if rt.pointee.candidateCycles >= NetClockReaderRealtime.jumpCycles && rt.pointee.candidate != rt.pointee.offset {
        let change = Int32(bitPattern: rt.pointee.candidate &- rt.pointee.offset)
        pushNetClockEvent(rt, NetClockRawEvent(isJump: true, frame: rt.pointee.gapStart, value: Int(change)))
        rt.pointee.offset = rt.pointee.candidate
        rt.pointee.published.store(1 << 32 | UInt64(rt.pointee.candidate), ordering: .releasing)
        rt.pointee.gapOpen = false
        rt.pointee.openGapFrames.store(0, ordering: .releasing)
    }
}

/// Pushes an event (the ring's producer side, the process thread); counts it lost when full.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func pushNetClockEvent(_ rt: UnsafeMutablePointer<NetClockReaderRealtime>, _ event: NetClockRawEvent) {
    if !rt.pointee.ring.push(event) { rt.pointee.lostEvents.wrappingAdd(1, ordering: .relaxed) }
}
