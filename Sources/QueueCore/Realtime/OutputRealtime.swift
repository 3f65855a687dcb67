import Synchronization

/// A parameter change carried by an enqueued buffer, applied when the ring
/// plays position `position` (the buffer's first frame).
/// Producer: the queue thread. Consumer: the process thread.
public struct ParameterEvent: BitwiseCopyable, Sendable {
    public enum Kind: UInt8, BitwiseCopyable, Sendable {
        case volume, pan
        /// The ramp time of later volume changes; `value` is in device frames.
        case volumeRampFrames
    }
    public var kind: Kind
    public var value: Float
    public var position: Int
}

/// Everything the process thread touches for an output queue: allocated before
/// the JACK client is activated, freed after it is closed.
public struct OutputRealtimeState: RealtimeCoreHolder, ~Copyable {
    /// Channels of the queue's format (ring planes).
    public let channelCount: Int
    /// JACK ports: one per channel, two (left, right) for a mono queue so pan can place it.
    public let portCount: Int
    /// Decoded frames at the device rate. Producer: queue thread. Consumer: process thread.
    public let ring: FrameRing
    public let core: UnsafeMutablePointer<RealtimeCore>
    /// Producer: queue thread. Consumer: process thread.
    public let parameterEvents: EventRing<ParameterEvent>
    public var meters: MeterBank

    /// Volume (0...1) and pan (-1...1) requests from control threads, as Float bits,
    /// and the ramp time in frames applied to later volume changes.
    public let requestedVolume = Atomic<UInt32>(Float(1).bitPattern)
    public let requestedPan = Atomic<UInt32>(Float(0).bitPattern)
    public let volumeRampFrames = Atomic<Int>(0)
    /// The queue thread wants waking once the ring has this much room (set by it, reset
    /// to .max by the realtime side when it wakes it). Commands and state changes always wake.
    public let wakeThreshold = Atomic<Int>(0)
    /// Ring position up to which frames have been played: rendered in a cycle that is over
    /// (its port buffers went out), or in the cycle that ended the stream. Producer: process
    /// thread. Consumer: queue thread, which returns buffers played this far.
    public let playedIndex = Atomic<Int>(0)
    /// The queue thread wants waking once `playedIndex` reaches this position: the end of the
    /// oldest buffer it holds until played (set by it, reset to .max by the realtime side
    /// when it wakes it).
    public let returnWakePosition = Atomic<Int>(.max)

    // Realtime-owned.
    var endOfStream = Int.max
    /// Frames of the last cycle that are the queue's output: the whole cycle while it runs or
    /// waits for a scheduled start, up to the last frame of a stream that ended in it, none while
    /// stopped or paused. Offline rendering hands out these frames and no more (read after the
    /// cycle, on the thread that ran it).
    var cycleOutputFrames = 0
    var volume: Float = 1
    var volumeTarget: Float = 1
    var volumeStep: Float = 0
    var rampRemaining = 0
    var lastVolumeRequest: UInt32 = Float(1).bitPattern
    var pan: Float = 0
    var lastPanRequest: UInt32 = Float(0).bitPattern

    public init(channelCount: Int, ringFrames: Int, meterWindowFrames: Int) {
        self.channelCount = channelCount
        self.portCount = channelCount == 1 ? 2 : channelCount
        ring = FrameRing(channelCount: channelCount, minimumCapacity: ringFrames)
        // Output queues play the cycles after a jump in frame time while it is judged: 2 cycles.
        core = RealtimeCore.make(cyclesToConfirm: 2)
        parameterEvents = EventRing(minimumCapacity: 1024)
        meters = MeterBank(channelCount: channelCount, windowFrames: meterWindowFrames)
    }

    deinit { RealtimeCore.free(core) }
}
