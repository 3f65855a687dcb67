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

/// A queue's time as the realtime side publishes it: read as one group (a `SeqLock`),
/// so that the time base, the mode and the cycle always belong together.
public struct PublishedTime: BitwiseCopyable, Sendable, Equatable {
    /// `RealtimeMode` raw value.
    public var mode = 0
    /// Queue time at the end of the last cycle, in device frames (0 at start, pauses excluded).
    public var queueFrames: Int64 = 0
    /// Device frame at which the last cycle began.
    public var cycleFrame: Int64 = 0
    /// Frames of the last cycle.
    public var cycleFrameCount = 0
    /// The time base: device frame `baseFrame` is queue time `baseQueueFrames`.
    public var baseFrame: Int64 = 0
    public var baseQueueFrames: Int64 = 0

    public init() {}

    /// The device frame at which the last cycle ended.
    @inline(__always)
    public var cycleEndFrame: Int64 { cycleFrame + Int64(cycleFrameCount) }

    /// The device frame at which queue time 0 falls (start frame, moved by pauses).
    @inline(__always)
    public var originFrame: Int64 { baseFrame - baseQueueFrames }

    /// The queue time (device frames) of device frame `frame`. Paused and stopped queues
    /// do not advance.
    public func queueFrames(atDeviceFrame frame: Int64) -> Int64 {
        let advancing = mode == RealtimeMode.running.rawValue || mode == RealtimeMode.armed.rawValue
        return advancing ? baseQueueFrames + (frame - baseFrame) : baseQueueFrames
    }

    /// The device frame of queue time `queueFrames` (device frames), on the time base.
    public func deviceFrame(forQueueFrames queueFrames: Int64) -> Int64 {
        baseFrame + (queueFrames - baseQueueFrames)
    }
}

/// Time and state the realtime side publishes once per cycle.
/// Producer: the process thread (or a control thread while no cycle can run). Consumers: any thread.
public struct RealtimePublication: ~Copyable {
    /// `RealtimeMode` raw value, for readers that need only the mode (also in `time`).
    public let mode = Atomic<Int>(0)
    /// Incremented each time the queue really starts (its first frame is played or recorded).
    public let startCount = Atomic<Int>(0)
    /// Device frame of the most recent real start.
    public let startFrame = Atomic<Int64>(0)
    /// Incremented each time the realtime side stops by itself (end of stream).
    public let finishCount = Atomic<Int>(0)
    /// Sequence of the last command applied (a barrier for Stop/Reset).
    public let appliedSequence = Atomic<Int>(0)
    /// Output: frames of silence played while running because the ring was empty.
    /// Input: frames captured while the ring was full, hence lost.
    public let lostFrames = Atomic<Int>(0)
    /// The time base, mode and last cycle, written together; nil to readers before the first cycle.
    public let time = SeqLock(PublishedTime())

    public init() {}

    /// The queue time (device frames) of device frame `frame`, from the last published base;
    /// nil before the first cycle. Paused and stopped queues do not advance.
    public func queueFrames(atDeviceFrame frame: Int64) -> Int64? {
        time.read()?.queueFrames(atDeviceFrame: frame)
    }
}

/// Per-channel level meters the realtime side fills: mean square and peak over
/// the last completed window (about 50 ms), as Float bit patterns; readers take
/// the square root (no math library calls on the realtime side).
/// Producer: the process thread. Consumers: any thread (GetProperty).
public struct MeterBank: ~Copyable {
    public let channelCount: Int
    let average: UnsafeMutablePointer<Atomic<UInt32>>
    let peak: UnsafeMutablePointer<Atomic<UInt32>>
    /// Realtime-owned accumulators.
    let sumSquares: UnsafeMutablePointer<Double>
    let runningPeak: UnsafeMutablePointer<Float>
    var accumulatedFrames = 0
    let windowFrames: Int
    /// Set by control threads; the realtime side meters only when enabled.
    public let enabled = Atomic<Bool>(false)

    public init(channelCount: Int, windowFrames: Int) {
        self.channelCount = channelCount
        self.windowFrames = max(windowFrames, 1)
        average = .allocate(capacity: channelCount)
        peak = .allocate(capacity: channelCount)
        sumSquares = .allocate(capacity: channelCount)
        runningPeak = .allocate(capacity: channelCount)
        for c in 0..<channelCount {
            (average + c).initialize(to: Atomic(0))
            (peak + c).initialize(to: Atomic(0))
        }
        sumSquares.initialize(repeating: 0, count: channelCount)
        runningPeak.initialize(repeating: 0, count: channelCount)
    }

    deinit {
        average.deinitialize(count: channelCount)
        peak.deinitialize(count: channelCount)
        average.deallocate()
        peak.deallocate()
        sumSquares.deallocate()
        runningPeak.deallocate()
    }

    /// The last window's (RMS, peak) of `channel`, linear 0...1 for full scale.
    public func level(_ channel: Int) -> (average: Float, peak: Float) {
        (Float(bitPattern: average[channel].load(ordering: .relaxed)).squareRoot(),
         Float(bitPattern: peak[channel].load(ordering: .relaxed)))
    }

    /// Clears the published levels (when metering is switched on, or the queue stops).
    public func clear() {
        for c in 0..<channelCount {
            average[c].store(0, ordering: .relaxed)
            peak[c].store(0, ordering: .relaxed)
        }
    }
}
