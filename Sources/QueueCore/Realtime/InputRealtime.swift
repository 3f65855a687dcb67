import Synchronization

/// Frames lost because the capture ring was full: `count` frames were dropped
/// right after ring position `position`. Producer: process thread. Consumer: queue thread.
public struct CaptureGap: BitwiseCopyable, Sendable {
    public var position: Int
    public var count: Int
}

/// Everything the process thread touches for an input queue.
public struct InputRealtimeState: RealtimeCoreHolder, ~Copyable {
    public let channelCount: Int
    /// Captured frames at the device rate. Producer: process thread. Consumer: queue thread.
    public let ring: FrameRing
    public let core: UnsafeMutablePointer<RealtimeCore>
    /// Producer: process thread. Consumer: queue thread.
    public let gaps: EventRing<CaptureGap>
    public var meters: MeterBank
    /// Ring position at which the last stop took effect (all frames before it are final).
    public let stopPosition = Atomic<Int>(0)
    /// The queue thread wants waking once the ring holds this many frames (set by it,
    /// reset to .max by the realtime side when it wakes it). Gaps and commands always wake.
    public let wakeThreshold = Atomic<Int>(0)
    /// Direct capture (DirectCapture.swift): a `LendCode`; who owns `lent`.
    let lendState = Atomic<Int>(LendCode.idle)
    /// Gaps recorded so far (stored by the process thread after each is queued).
    let gapsRecorded = Atomic<Int>(0)
    /// The buffer lent while `lendState` is `.lent` (or given back: `.returned`).
    var lent = LentBuffer(planes: nil, planeStride: 0, capacity: 0, filled: 0,
                          ringPosition: 0, gapsSeen: 0)

    // Realtime-owned.
    /// Frames written to the ring after `ring.writeIndex` but not yet published: the
    /// cycles after an unconfirmed jump in frame time, held until it is judged so that a
    /// gap can still go before them.
    var heldFrames = 0
    /// A gap that could not be queued because the gap ring was full; merged into the next.
    var pendingGap = CaptureGap(position: 0, count: 0)
    /// Whether the lent buffer was found usable (the ring had nothing new); realtime-owned.
    var lendAccepted = false

    public init(channelCount: Int, ringFrames: Int, meterWindowFrames: Int) {
        self.channelCount = channelCount
        // Touched when the queue first starts (InputQueueEngine): a ring resized before that
        // (CaptureBufferSeconds) costs nothing.
        ring = FrameRing(channelCount: channelCount, minimumCapacity: ringFrames, touched: false)
        // Input queues hold the cycles after a jump in frame time back while it is judged: 3 cycles.
        core = RealtimeCore.make(cyclesToConfirm: 3)
        gaps = EventRing(minimumCapacity: 256)
        meters = MeterBank(channelCount: channelCount, windowFrames: meterWindowFrames)
    }

    deinit { RealtimeCore.free(core) }
}
