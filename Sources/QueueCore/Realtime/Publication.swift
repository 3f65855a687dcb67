import Synchronization

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

extension RealtimePublication {
    /// Realtime: publishes a cycle: the mode, queue time at its end, the cycle, and the time
    /// base (device frame `baseFrame` is queue time `baseQueueFrames`), as one group.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    func publishCycle(mode: Int, queueFrames: Int64, cycleFrame: Int64, cycleFrameCount: Int,
                      baseFrame: Int64, baseQueueFrames: Int64) {
        self.mode.store(mode, ordering: .relaxed)
        time.write(PublishedTime(mode: mode, queueFrames: queueFrames, cycleFrame: cycleFrame, cycleFrameCount: cycleFrameCount,
                                 baseFrame: baseFrame, baseQueueFrames: baseQueueFrames))
    }

    /// Realtime: publishes a new mode (commands applied between cycles).
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    func publishMode(_ mode: Int) {
        self.mode.store(mode, ordering: .relaxed)
        var t = time.writerValue()
        guard t.mode != mode else { return }
        t.mode = mode
        time.write(t)
    }

    /// Realtime: pauses queue time at `queueFrames`, where the last cycle ended.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    func publishPause(queueFrames: Int64) {
        mode.store(ModeCode.paused, ordering: .relaxed)
        var t = time.writerValue()
        t.mode = ModeCode.paused
        t.baseFrame = t.cycleEndFrame
        t.baseQueueFrames = queueFrames
        time.write(t)
    }

    /// Realtime: the device frame to publish with `queueFrames` for a cycle in which the queue
    /// does not run, so that queue time does not advance. A paused queue's time 0 moves later
    /// with the pause (it resumes where it was): the cycle's frame. A stopped queue's time 0
    /// stays on the frame where its last run began, so that kAudioQueueProperty_StartDeviceFrame
    /// still names that frame after the stop (and stays 0 before the first start).
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    func idleBaseFrame(mode: Int, frameTime: Int64, queueFrames: Int64) -> Int64 {
        guard mode == ModeCode.stopped else { return frameTime }
        return time.writerValue().originFrame + queueFrames
    }
}
