import Glibc

/// What a queue engine's lock guards, reachable only inside `lock.withLock { state in … }`, so
/// the compiler keeps the guard. (Outside it: the fields of the `QueueBuffer` objects the
/// state holds, guarded by the same lock by convention.) A direction's own part is in
/// `output` or `input`; the other direction leaves it as it is.
struct EngineState {
    /// Seconds Reset, Stop(true) and an input queue's Flush wait for the queue thread.
    var controlTimeout = 10.0
    /// Listener dispatch, set by the API layer.
    var eventSink: (@Sendable (QueueEvent) -> Void)?
    /// Called once, when the queue has been disposed of.
    var onDisposed: (@Sendable () -> Void)?
    /// The sequence number of the last command sent to the realtime side.
    var commandSequence = 0
    /// The realtime side's start and finish counts as the queue thread last saw them.
    var seenStartCount = 0
    var seenFinishCount = 0
    /// Discontinuities (xruns, lost recorded frames, rate changes) so far.
    var discontinuities = 0
    /// The device rate the queue's converter and ring were made for.
    var converterRate: Double {
        didSet { converterMismatch = false }
    }
    /// The server changed its rate away from `converterRate`.
    var converterMismatch = false

    /// Run state, IsRunning, resets, disposal and invalidation: which call is legal when, and
    /// what it makes the engine do, is decided there.
    var life: QueueLifecycle
    /// The run state.
    var runState: QueueRunState { life.state }
    /// IsRunning.
    var isRunning: Bool { life.isRunning }
    /// Dispose has run or is running.
    var disposed: Bool { life.disposed }
    /// The JACK server went away.
    var invalidated: Bool { life.invalidated }

    /// The queue's buffers by handle (what AllocateBuffer made and FreeBuffer has not freed).
    var buffers: [UnsafeMutableRawPointer: QueueBuffer] = [:]
    /// Enqueued buffers not taken up yet, oldest first.
    var fifo: [QueueBuffer] = []

    /// Resets the queue thread is asked to carry out.
    var resetTickets = QueueTickets()
    /// Frames an output queue's Prime made ready (0 once started, reset or stopped).
    var primedFrames = 0
    /// The client's name as the device last reported it.
    var clientName: String

    // What the queue connects to (each connection pass holds `connectionLock` too).
    /// CurrentDevice: "system", a port, a regular expression, or "".
    var currentTarget: String
    /// What the ports are connected to when it is not `currentTarget` itself.
    var connectionTarget: String?
    /// The device ports connected now.
    var connectedPorts: [String] = []
    /// What the ports are connected to now.
    var effectiveTarget: String { connectionTarget ?? currentTarget }

    // Callbacks and listener calls (`QueueEngine.deliver`).
    /// Jobs posted to the queue thread, oldest first.
    var deliveries: [@Sendable () -> Void] = []
    /// Delivered and not finished (posted or running).
    var callbacksInFlight = 0
    /// Running now, and on which threads.
    var callbacksRunning = 0
    var callbackThreads: [pthread_t] = []

    /// True if the calling thread is running one of the queue's callbacks.
    var isRunningCallbackOnThisThread: Bool {
        callbackThreads.contains { pthread_equal($0, pthread_self()) != 0 }
    }

    /// An output queue's part (an input queue leaves it as it is).
    var output = OutputEngineState()
    /// An input queue's part (an output queue leaves it as it is).
    var input = InputEngineState()

    init(direction: DeviceDirection, converterRate: Double, clientName: String, target: String) {
        life = QueueLifecycle(direction: direction)
        self.converterRate = converterRate
        self.clientName = clientName
        currentTarget = target
    }
}

/// What only an input queue's lock guards (`EngineState.input`).
struct InputEngineState {
    /// Queue-rate frames delivered (and lost) since the timeline began.
    var queueFrames: Double = 0
    var flushTickets = QueueTickets()
    var underrun = RecordUnderrunInfo(eventCount: 0, framesLost: 0, lastLossSampleTime: 0)
    var resamplerHasInput = false
}

/// What only an output queue's lock guards (`EngineState.output`).
struct OutputEngineState {
    /// Buffers whose frames are all in the decode ring, oldest first: each goes back to its
    /// callback once the ring has played it (`QueueBuffer.ringEnd`), not when it was copied,
    /// so that a program which stops after its last callback still hears what was enqueued.
    var awaitingPlayout: [QueueBuffer] = []
    /// Queue-rate frames written into the stream (data and gaps) since the timeline began.
    var streamFrames: Int64 = 0
    /// Realtime starvation (device frames) counted when the timeline began.
    var lostBaseline = 0
    /// Queue time at which the last enqueued buffer is expected to end, and start.
    var predictedEnd: Int64 = 0
    var lastStart: Int64?
    var endOfStreamSent = false
    var priming = false
    var primeTarget = 0
    var primeTickets = QueueTickets()
    /// Flush: the resampler's tail goes into the ring before anything enqueued later.
    var drainPending = false
    var resamplerHasInput = false
}
