import Glibc
import Synchronization

/// A command from a control thread to the realtime side of a queue.
/// Producer: control threads (serialized by the queue's lock). Consumer: the process thread.
public struct RealtimeCommand: BitwiseCopyable, Sendable {
    public enum Kind: UInt8, BitwiseCopyable, Sendable {
        /// Start (or resume) at device frame `frame`; `Int64.min` means as soon as possible.
        case start
        /// Stop taking or giving frames; queue time is kept.
        case pause
        /// Stop now; the next start begins a new queue timeline at 0.
        case stop
        /// Output: drop ring frames up to ring position `position` (Reset, Stop).
        case discard
        /// Output: stop once the ring has played up to `position` (Stop(false)).
        case endOfStream
        /// Input: give back the head buffer lent for direct capture (nothing else: a lent
        /// buffer goes back before any command is applied).
        case reclaim
    }

    public var kind: Kind
    public var frame: Int64
    public var position: Int
    public var sequence: Int

    public init(_ kind: Kind, frame: Int64 = .min, position: Int = 0, sequence: Int = 0) {
        self.kind = kind
        self.frame = frame
        self.position = position
        self.sequence = sequence
    }
}

/// What the realtime side is doing, as published to control threads.
public enum RealtimeMode: Int, Sendable {
    case stopped = 0
    /// Started for a device frame that has not come yet.
    case armed = 1
    case running = 2
    case paused = 3

}

/// Realtime mode codes (the raw values of `RealtimeMode`), as plain integers the
/// checker can see through.
enum ModeCode {
    @_transparent static var stopped: Int { 0 }
    @_transparent static var armed: Int { 1 }
    @_transparent static var running: Int { 2 }
    @_transparent static var paused: Int { 3 }
}

/// A realtime kernel's result bit: post the queue thread's semaphore after the
/// cycle (ring space or data, or a state change).
@_transparent public var realtimeWakeQueueThread: UInt32 { 1 }

/// What the realtime side of every queue holds, output or input: the commands it takes,
/// what it publishes, and the queue's realtime-owned run state. Allocated with the
/// direction's state (`OutputRealtimeState`, `InputRealtimeState`), out of line so that the
/// shared kernels below reach it through one pointer.
public struct RealtimeCore: ~Copyable {
    /// Producer: control threads (under the queue lock). Consumer: process thread.
    public let commands = EventRing<RealtimeCommand>(minimumCapacity: 64)
    public let publication = RealtimePublication()

    // Realtime-owned.
    /// A `RealtimeMode` raw value (ModeCode).
    var mode = 0
    var armedFrame: Int64 = .min
    var queueFrames: Int64 = 0
    /// Cycles the server skipped, judged over a few cycles (see `judgeCycle`).
    var skips: CycleSkipTracker

    init(cyclesToConfirm: Int) { skips = CycleSkipTracker(cyclesToConfirm: cyclesToConfirm) }

    /// A new core, on the heap (freed with `free`).
    static func make(cyclesToConfirm: Int) -> UnsafeMutablePointer<RealtimeCore> {
        let core = UnsafeMutablePointer<RealtimeCore>.allocate(capacity: 1)
        core.initialize(to: RealtimeCore(cyclesToConfirm: cyclesToConfirm))
        return core
    }

    static func free(_ core: UnsafeMutablePointer<RealtimeCore>) {
        core.deinitialize(count: 1)
        core.deallocate()
    }
}

/// A direction's realtime state (`OutputRealtimeState`, `InputRealtimeState`): it holds a core.
public protocol RealtimeCoreHolder: ~Copyable {
    /// The parts every queue's realtime side has (commands, publication, run state).
    var core: UnsafeMutablePointer<RealtimeCore> { get }
}

extension RealtimeCoreHolder where Self: ~Copyable {
    /// Producer: control threads (under the queue lock). Consumer: process thread.
    public var commands: EventRing<RealtimeCommand> { _read { yield core.pointee.commands } }
    /// Producer: process thread. Consumers: any thread.
    public var publication: RealtimePublication { _read { yield core.pointee.publication } }
}

/// A direction's realtime state as the shared kernels see it: its core, and the steps in
/// which output and input differ. Implemented by a pointer to the direction's state
/// (`OutputSide`, `InputSide`); specialized and inlined into the kernels.
protocol RealtimeSide {
    var core: UnsafeMutablePointer<RealtimeCore> { get }
    /// A pause or stop is about to take effect while the queue may hold frames in flight.
    func willHalt()
    /// A stop took effect.
    func didStop()
    /// `.discard` or `.endOfStream`: commands about the ring.
    func applyRingCommand(_ command: RealtimeCommand)
}

/// Applies the commands control threads queued; true if any was applied.
/// Realtime (called by each cycle), or on a control thread when no cycle can run.
/// (Generic, so not marked `@_noLocks` itself: it is checked, specialized, in the kernels.)
@inline(__always)
func applyCommands<Side: RealtimeSide>(_ side: Side) -> Bool {
    let c = side.core
    var lastSequence = -1
    while let command = c.pointee.commands.pop() {
        lastSequence = command.sequence
        switch command.kind {
        case .start:
            if c.pointee.mode == ModeCode.stopped { c.pointee.queueFrames = 0 }
            if c.pointee.mode != ModeCode.running {
                c.pointee.mode = ModeCode.armed
                c.pointee.armedFrame = command.frame
            }
        case .pause:
            if c.pointee.mode == ModeCode.running || c.pointee.mode == ModeCode.armed {
                side.willHalt()
                c.pointee.mode = ModeCode.paused
                // Queue time stops where the last cycle ended.
                c.pointee.publication.publishPause(queueFrames: c.pointee.queueFrames)
            }
        case .stop:
            side.willHalt()
            c.pointee.mode = ModeCode.stopped
            side.didStop()
        case .discard, .endOfStream, .reclaim:
            side.applyRingCommand(command)
        }
    }
    guard lastSequence >= 0 else { return false }
    c.pointee.publication.publishMode(c.pointee.mode)
    c.pointee.publication.appliedSequence.store(lastSequence, ordering: .releasing)
    return true
}

/// Where audio starts in this cycle: the frame offset in it (0 while running), or nil if the
/// queue is armed for a later cycle (this one is published with queue time running up to the
/// start frame, negative before it). An armed queue whose frame has come starts running,
/// and the start is published.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func startOffset(_ c: UnsafeMutablePointer<RealtimeCore>, frameTime: Int64, frameCount n: Int, outcome: inout UInt32) -> Int? {
    guard c.pointee.mode == ModeCode.armed else { return 0 }
    let start = c.pointee.armedFrame
    if start != .min && start - frameTime >= Int64(n) {
        publishCycle(c, frameTime: frameTime, frameCount: n, queueFramesAtCycleStart: c.pointee.queueFrames - (start - frameTime))
        return nil
    }
    let offset = start == .min ? 0 : Int(max(0, start - frameTime))
    c.pointee.mode = ModeCode.running
    c.pointee.publication.startFrame.store(frameTime + Int64(offset), ordering: .relaxed)
    c.pointee.publication.startCount.wrappingAdd(1, ordering: .releasing)
    outcome |= realtimeWakeQueueThread
    return offset
}

/// Publishes a cycle in which the queue does not run: queue time stands still.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func publishIdleCycle(_ c: UnsafeMutablePointer<RealtimeCore>, frameTime: Int64, frameCount: Int) {
    let queueFrames = c.pointee.queueFrames
    publishCycle(c, frameTime: frameTime, frameCount: frameCount, queueFramesAtCycleStart: queueFrames,
                 baseFrame: c.pointee.publication.idleBaseFrame(mode: c.pointee.mode, frameTime: frameTime, queueFrames: queueFrames))
}

/// Publishes a cycle: the mode, queue time at its end, and the time base (`baseFrame`, by
/// default the cycle's first frame, is queue time `queueFramesAtCycleStart`).
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func publishCycle(
    _ c: UnsafeMutablePointer<RealtimeCore>, frameTime: Int64, frameCount: Int, queueFramesAtCycleStart: Int64,
    baseFrame: Int64? = nil
) {
    c.pointee.publication.publishCycle(mode: c.pointee.mode, queueFrames: c.pointee.queueFrames,
                                       cycleFrame: frameTime, cycleFrameCount: frameCount,
                                       baseFrame: baseFrame ?? frameTime, baseQueueFrames: queueFramesAtCycleStart)
}

/// What the realtime entry of a queue holds (installed on the device): plain state, no classes.
struct RealtimeContext<State: ~Copyable>: ~Copyable {
    let state: UnsafeMutablePointer<State>
    /// The queue thread's semaphore (posted after a cycle that freed ring space or brought data).
    let queueWake: UnsafeMutablePointer<sem_t>
    /// Posted by the queue thread after it worked on the ring, so a waiting cycle continues.
    let realtimeWake: UnsafeMutablePointer<sem_t>
    /// Output: true while the queue thread has enqueued data to convert or a callback out
    /// that may enqueue more: a cycle that may wait then waits rather than starve.
    let producerBusy = Atomic<Bool>(false)
    /// Output: set by a cycle that waits for data (freewheel, ManualDriver): the ring position
    /// it needs to reach. Buffers that end before it count as played, so that they go back to
    /// their callbacks, which may enqueue what the cycle waits for. 0 when no cycle waits.
    let demandPosition = Atomic<Int>(0)

    init(state: UnsafeMutablePointer<State>, queueWake: UnsafeMutablePointer<sem_t>, realtimeWake: UnsafeMutablePointer<sem_t>) {
        self.state = state
        self.queueWake = queueWake
        self.realtimeWake = realtimeWake
    }

    /// Realtime: after a kernel ran, wakes the queue thread if its `outcome` asks for it.
    @inline(__always)
    func cycleEnded(_ outcome: UInt32) {
        if outcome & realtimeWakeQueueThread != 0 { sem_post(queueWake) }
    }

    /// Not realtime (freewheel, ManualDriver: cycles that may wait): wakes the queue thread
    /// and waits for it until `ready()`, checked before each wait, or `seconds` passed.
    /// `pump` runs before each check (an offline render runs the callbacks posted to its own
    /// thread's run loop there). Returns whether `ready()` held.
    @discardableResult
    func waitForQueueThread(seconds: Double = 5, pump: () -> Void = {}, until ready: () -> Bool) -> Bool {
        // The limit is kept by the clock, not by counting wake-ups: the semaphore keeps the posts
        // of every cycle that did not wait, and a burst of them would otherwise use up the five
        // seconds in microseconds, and the cycle would drop what it was waiting for.
        let giveUp = Deadline.after(seconds: seconds)
        while !giveUp.hasPassed {
            pump()
            if ready() { return true }
            sem_post(queueWake)
            _ = semaphoreWait(realtimeWake, until: .after(nanoseconds: 20_000_000))
        }
        return false
    }
}

/// Replaces a queue's realtime state with no cycle in progress (a ring resized while the
/// queue is stopped): detaches the realtime entry, puts `replacement` in `context`, attaches
/// `entry` again, and frees `old`. Not realtime: a control thread.
func swapRealtimeState<State: ~Copyable>(
    on device: AudioDevice, context: UnsafeMutablePointer<RealtimeContext<State>>,
    to replacement: consuming RealtimeContext<State>, entry: RealtimeEntry, freeing old: UnsafeMutablePointer<State>
) {
    device.setProcessor(nil)
    let oldContext = context.move()
    context.initialize(to: replacement)
    _ = consume oldContext
    device.setProcessor(RealtimeProcessor(context: UnsafeMutableRawPointer(context), entry: entry))
    old.deinitialize(count: 1)
    old.deallocate()
}
