/// An audio queue buffer as the engine sees it: memory the API layer
/// allocated (an AudioQueueBuffer and its data), identified by `handle`.
public final class QueueBuffer: @unchecked Sendable {
    /// Who holds the buffer now.
    enum Ownership { case application, enqueued, returning }

    /// The API layer's identity for this buffer (its AudioQueueBufferRef).
    public let handle: UnsafeMutableRawPointer
    /// The audio data.
    public let data: UnsafeMutableRawPointer
    public let byteCapacity: Int
    /// Packet descriptions the buffer holds (AudioQueueAllocateBufferWithPacketDescriptions);
    /// 0 for a buffer allocated without. An input queue delivers a compressed buffer once it
    /// holds this many packets, as it does once the next packet does not fit its bytes.
    public let packetCapacity: Int

    // Guarded by the owning engine's lock.
    var ownership = Ownership.application
    /// Callbacks running with this buffer: until they return, only they may free it.
    var callbacksHolding = 0
    // Output: what was enqueued.
    var frameCount = 0
    var trimStart = 0
    var trimEnd = 0
    var requestedStart: Int64?
    var parameters: [ParameterChange] = []
    /// Output: frames (queue rate, after trim) already taken into the ring; -1 before the start gap.
    var consumedFrames = -1
    /// Output: the decode ring's position just past the buffer's last frame, once all of it
    /// is in the ring; the buffer goes back to its callback when the ring has played that far.
    var ringEnd = 0
    /// Output: AudioQueueFlush came after this buffer; the resampler's tail follows it.
    var drainsDecoderAfter = false
    /// Compressed queues: the packets of the buffer (output: as enqueued; input: as filled).
    public internal(set) var packets: [PacketDescription] = []
    // Input: bytes filled so far and the queue time of the first frame.
    var filledBytes = 0
    var firstQueueFrame: Double = 0
    /// Input, direct capture: the data's pages were faulted in before its first lend, so that
    /// the realtime side never takes a page fault on them (queue thread).
    var pagesFaultedIn = false

    public init(handle: UnsafeMutableRawPointer, data: UnsafeMutableRawPointer, byteCapacity: Int, packetCapacity: Int = 0) {
        self.handle = handle
        self.data = data
        self.byteCapacity = byteCapacity
        self.packetCapacity = packetCapacity
    }
}

/// A parameter value a buffer carries (EnqueueBufferWithParameters).
public struct ParameterChange: Sendable, Equatable {
    public enum Parameter: Sendable, Equatable {
        case volume, pan
        /// kAudioQueueParam_PlayRate and kAudioQueueParam_Pitch: the time/pitch unit's, from the buffer's first frame.
        case playRate, pitch
        /// kAudioQueueParam_VolumeRampTime (seconds): the ramp of volume changes from the buffer's first frame.
        case volumeRampTime
    }
    public var parameter: Parameter
    public var value: Float
    public init(_ parameter: Parameter, _ value: Float) {
        self.parameter = parameter
        self.value = value
    }
}

/// A time stamp in queue time: frames at the queue's rate since it started,
/// and the host time (CLOCK_MONOTONIC ns) of that frame.
public struct QueueTimeStamp: Sendable, Equatable {
    public var sampleTime: Double
    public var hostTime: UInt64
    public init(sampleTime: Double, hostTime: UInt64) {
        self.sampleTime = sampleTime
        self.hostTime = hostTime
    }
}

/// Where a queue runs its callbacks and property listeners.
public enum CallbackExecutor: Sendable {
    /// The queue's own thread (a NULL run loop).
    case queueThread
    /// Something else (a CFRunLoop, a DispatchQueue): `post` schedules the work.
    case custom(@Sendable (_ work: @escaping @Sendable () -> Void) -> Void)
}

/// Something a property listener hears of.
public enum QueueEvent: Sendable, Equatable {
    /// IsRunning changed to the value given.
    case isRunningChanged(Bool)
    /// Recorded frames were lost because no buffer was free (kAudioQueueErr_RecordUnderrun).
    case recordUnderrun
    /// The device (connection) changed.
    case currentDeviceChanged
    /// The number of device channels (connected ports) changed (kAudioQueueDeviceProperty_NumberChannels).
    case deviceChannelsChanged
    /// The device's sample rate changed (kAudioQueueDeviceProperty_SampleRate).
    case deviceSampleRateChanged
    /// The codec refused data (kAudioQueueProperty_ConverterError): its error code.
    case converterError(Int32)
}
