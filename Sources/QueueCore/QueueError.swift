/// Errors of the queue engine. The AudioToolbox layer maps each case to
/// Apple's result code (kAudioQueueErr_*), in one place.
public enum QueueError: Error, Equatable, Sendable {
    /// A NULL pointer or an out-of-range argument (kAudio_ParamError).
    case invalidParameter(String)
    /// The format can't be played or recorded (kAudioFormatUnsupportedDataFormatError).
    case unsupportedFormat(String)
    /// The buffer belongs to another queue or was freed (kAudioQueueErr_InvalidBuffer).
    case invalidBuffer
    /// An output buffer with no data (kAudioQueueErr_BufferEmpty).
    case bufferEmpty
    /// The buffer is enqueued and can't be freed (kAudioQueueErr_BufferInQueue).
    case bufferInQueue
    /// Enqueue of a buffer that is already enqueued (kAudioQueueErr_BufferEnqueuedTwice).
    case bufferEnqueuedTwice
    /// Enqueue during Reset, Stop or Dispose (kAudioQueueErr_EnqueueDuringReset).
    case enqueueDuringReset
    /// The call needs the other kind of queue (kAudioQueueErr_InvalidQueueType).
    case invalidQueueType
    /// The call is not allowed in the queue's current state (kAudioQueueErr_InvalidRunState).
    case invalidRunState(String)
    /// The device (JACK server or port) could not be found (kAudioQueueErr_InvalidDevice).
    case invalidDevice(String)
    /// The queue can't start (kAudioQueueErr_CannotStart).
    case cannotStart(String)
    /// The JACK server went away (kAudioQueueErr_QueueInvalidated).
    case queueInvalidated
    /// The queue is being disposed of asynchronously (kAudioQueueErr_DisposalPending).
    case disposalPending
    /// Prime could not decode the frames asked for in time (kAudioQueueErr_PrimeTimedOut).
    case primeTimedOut
    /// A property value that is not valid (kAudioQueueErr_InvalidPropertyValue).
    case invalidPropertyValue(String)
    /// A control call (Reset, Stop, Flush) waited `seconds` for the queue thread, which a
    /// callback holds (kAudioQueueErr_InvalidRunState).
    case queueThreadTimedOut(String, Double)
    /// The call needs offline rendering mode and the queue is not in it, or the other way
    /// round (kAudioQueueErr_InvalidOfflineMode).
    case invalidOfflineMode(String)
    /// A buffer start time earlier than the end of the one enqueued before it.
    case nonAscendingStartTime
    /// A second processing tap on one queue (kAudioQueueErr_TooManyTaps).
    case tooManyTaps
    /// A tap function called outside its tap's callback (kAudioQueueErr_InvalidTapContext).
    case invalidTapContext
    /// A tap function the tap's kind of queue does not allow (kAudioQueueErr_InvalidTapType).
    case invalidTapType
}

extension QueueError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidParameter(let why): "invalid parameter: \(why)"
        case .unsupportedFormat(let why): "unsupported format: \(why)"
        case .invalidBuffer: "the buffer does not belong to this queue"
        case .bufferEmpty: "the buffer holds no audio data"
        case .bufferInQueue: "the buffer is enqueued"
        case .bufferEnqueuedTwice: "the buffer is enqueued already"
        case .enqueueDuringReset: "enqueue during reset, stop or dispose"
        case .invalidQueueType: "not allowed on this kind of queue"
        case .invalidRunState(let why): "invalid run state: \(why)"
        case .invalidDevice(let why): "invalid device: \(why)"
        case .cannotStart(let why): "cannot start: \(why)"
        case .queueInvalidated: "the JACK server went away"
        case .disposalPending: "the queue is being disposed of"
        case .primeTimedOut: "prime timed out"
        case .invalidPropertyValue(let why): "invalid property value: \(why)"
        case .tooManyTaps: "the queue has a processing tap already"
        case .invalidTapContext: "only the tap's callback may call this"
        case .invalidTapType: "not allowed on this kind of tap"
        case .nonAscendingStartTime: "buffer start times must ascend"
        case .invalidOfflineMode(let why): "invalid offline mode: \(why)"
        case .queueThreadTimedOut(let call, let seconds):
            "\(call) waited \(seconds) s for the queue thread, which a callback holds"
        }
    }
}
