import CJack
import QueueCore
import Synchronization

// What libjack runs on a JackSession's process thread: the transport watched cycle by cycle
// (with `watchTransport`), or nothing (a client that runs cycles only so the server reports its
// clock). No locks, no allocation, no waiting: atomics, and the relocations in the engine's
// single-producer, single-consumer ring.

/// The process callback of a control client that runs cycles only so the server reports its clock.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
func idleProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 { 0 }

/// The transport as seen by a process callback, cycle by cycle.
///
/// "Rolling" here is JACK's Rolling state with one hysteresis: `JackTransportStarting` keeps
/// the previous value. jack2 passes through Starting both on the way from Stopped to Rolling
/// (not rolling yet: frames do not advance) and when the transport is relocated while it
/// rolls (a DAW's loop or a locate while playing): that is not a stop, and a take following
/// the transport goes on through it.
struct TransportWatch: ~Copyable {
    let client: OpaquePointer
    let rolling = Atomic<Bool>(false)
    let changes = Atomic<Int>(0)
    /// Frame time of the cycle in which the last change was seen.
    let lastChangeFrame = Atomic<Int>(0)
    /// Frame time of the cycle in which the transport started to roll (a roll and a stop
    /// between two looks at `changes` leave it here). When this client's cycles ran late and
    /// it first saw the transport already some frames into the roll, this is the frame the
    /// transport position says the roll began on, not the later one the client saw.
    let lastRollFrame = Atomic<Int>(0)
    /// The transport frame (position) the last roll started from.
    let lastRollPosition = Atomic<Int>(0)
    /// Frame time of the cycle in which the transport last stopped (a stop and a roll between
    /// two looks at `changes` leave it here).
    let lastStopFrame = Atomic<Int>(0)
    /// Relocations while rolling: (frame time, transport frame) of the first Rolling cycle
    /// after the position jumped. Producer: the process thread; consumer:
    /// `transportRelocations`, which drains it. Those that find it full are counted lost.
    static let relocationCapacity = 64
    let relocations = EventRing<RawRelocation>(minimumCapacity: relocationCapacity)
    let relocationsLost = Atomic<Int>(0)
    // The process thread's own view of the previous cycle it ran.
    var initialized = false
    var previousState = JackTransportStopped
    var previousCycleFrame: UInt32 = 0
    var previousPosition: UInt32 = 0
    /// Starting while rolling was seen: a relocation to publish at the next Rolling cycle.
    var relocating = false

    init(client: OpaquePointer) {
        self.client = client
    }
}

/// A relocation in the ring: the cycle's frame time and the transport frame it plays from.
struct RawRelocation: BitwiseCopyable {
    var frame: UInt32
    var position: UInt32
}

/// The process trampoline of a client that follows the transport: the transport's state and
/// position and the cycle's frame from libjack (C, which the `@_noLocks` checker cannot see
/// into), then the kernel.
func transportProcess(_ frameCount: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let watch = argument.assumingMemoryBound(to: TransportWatch.self)
    var position = jack_position_t()
    let state = jack_transport_query(watch.pointee.client, &position)
    watchTransportCycle(watch, state: state, position: position.frame, cycleFrame: jack_last_frame_time(watch.pointee.client))
    return 0
}

/// One cycle of the transport watch: rolling or not, the roll and stop frames, relocations.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
func watchTransportCycle(_ watch: UnsafeMutablePointer<TransportWatch>, state: jack_transport_state_t,
                         position: UInt32, cycleFrame: UInt32) {
    defer {
        watch.pointee.previousState = state
        watch.pointee.previousCycleFrame = cycleFrame
        watch.pointee.previousPosition = position
    }
    let wasRolling = watch.pointee.rolling.load(ordering: .relaxed)
    // Starting keeps the previous value (see TransportWatch).
    let rolling = state == JackTransportRolling || (state == JackTransportStarting && wasRolling)
    if !watch.pointee.initialized {
        watch.pointee.initialized = true
        watch.pointee.rolling.store(rolling, ordering: .relaxed)
        return
    }
    if rolling != wasRolling {
        var frame = cycleFrame
        if rolling {
            // The transport advances one period per cycle from the position it rolled from:
            // if this client's cycles ran late and it sees the roll some frames in, the roll
            // began that many frames before this cycle (never before the last cycle it saw
            // stopped, from which it took that position).
            let into = position &- watch.pointee.previousPosition
            let late = state == JackTransportRolling && into > 0 && into < cycleFrame &- watch.pointee.previousCycleFrame
            if late { frame = cycleFrame &- into }
            watch.pointee.lastRollFrame.store(Int(frame), ordering: .relaxed)
            watch.pointee.lastRollPosition.store(Int(late ? watch.pointee.previousPosition : position), ordering: .relaxed)
        } else {
            watch.pointee.lastStopFrame.store(Int(frame), ordering: .relaxed)
        }
        watch.pointee.relocating = false
        watch.pointee.lastChangeFrame.store(Int(frame), ordering: .relaxed)
        watch.pointee.rolling.store(rolling, ordering: .relaxed)
        watch.pointee.changes.wrappingAdd(1, ordering: .releasing)
    } else if rolling, state == JackTransportStarting {
        // Relocated while rolling: published once it rolls again, from where it rolls.
        watch.pointee.relocating = true
    } else if rolling {
        // Rolling on: the position is where the last cycle's was plus the frames since, unless
        // it was relocated (through Starting, or between two cycles this client saw).
        let expected = watch.pointee.previousPosition &+ (cycleFrame &- watch.pointee.previousCycleFrame)
        if watch.pointee.relocating || watch.pointee.previousState != JackTransportRolling || position != expected {
            // After Starting at X: rolling again from X, some frames before this cycle if this
            // client's cycles ran late (as for the roll above).
            var frame = cycleFrame
            var resumed = position
            let into = position &- watch.pointee.previousPosition
            if watch.pointee.previousState == JackTransportStarting, into > 0, into < cycleFrame &- watch.pointee.previousCycleFrame {
                frame = cycleFrame &- into
                resumed = watch.pointee.previousPosition
            }
            watch.pointee.relocating = false
            if !watch.pointee.relocations.push(RawRelocation(frame: frame, position: resumed)) {
                watch.pointee.relocationsLost.wrappingAdd(1, ordering: .relaxed)
            }
        }
    }
}
