import Glibc

/// A processing tap (AudioQueueProcessingTapNew): a client callback that sees, and unless it
/// siphons replaces, an output queue's audio before or after the time/pitch unit. It runs on
/// the queue thread, never on the JACK thread, in chunks of at most `maximumFrames` frames of
/// planar Float32 at the queue's rate.
public final class ProcessingTap: @unchecked Sendable {
    /// kAudioQueueProcessingTap_* flags.
    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// kAudioQueueProcessingTap_PreEffects
        public static let preEffects = Flags(rawValue: 1 << 0)
        /// kAudioQueueProcessingTap_PostEffects
        public static let postEffects = Flags(rawValue: 1 << 1)
        /// kAudioQueueProcessingTap_Siphon
        public static let siphon = Flags(rawValue: 1 << 2)
        /// kAudioQueueProcessingTap_StartOfStream
        public static let startOfStream = Flags(rawValue: 1 << 8)
        /// kAudioQueueProcessingTap_EndOfStream
        public static let endOfStream = Flags(rawValue: 1 << 9)
    }

    /// One call of the tap: what the queue asks for and where the tap's output goes.
    public struct Call {
        /// Frames the queue asks for.
        public let frameCount: Int
        /// The tap's continuous sample time: frames through the tap since its stream began.
        public let sampleTime: Double
        /// The creation flags, with StartOfStream on the first call of a stream.
        public let flags: Flags
        /// A siphon's copy of the audio (nil for other taps, which call `sourceAudio`).
        public let siphonSource: UnsafePointer<UnsafeMutablePointer<Float>>?
        /// Set by the callback: one pointer per channel to its output (nil: silence).
        public let output: UnsafeMutablePointer<UnsafePointer<Float>?>
    }

    /// The client's callback: returns the frames it put out and its flags.
    public typealias Callback = (Call) -> (frameCount: Int, flags: Flags)

    public let flags: Flags
    public let channelCount: Int
    /// The most frames one call asks for (outMaxFrames).
    public let maximumFrames: Int
    /// On a recording queue (GetQueueTime is for output queues' taps).
    public let isInput: Bool
    private let callback: Callback
    private let scratch: PlanarFIFO

    // Queue thread only (and the callback, which runs on it).
    private let source: PlanarFIFO
    private let siphonCopy: PlanarFIFO
    private let outputTable: UnsafeMutablePointer<UnsafePointer<Float>?>
    private var sampleTime = 0.0
    private var startOfStream = true
    private var endingStream = false
    /// The thread inside the callback, if any (GetSourceAudio and GetQueueTime work only there).
    private var callingThread: pthread_t?
    /// Queue time (source frames) of the chunk being processed and the queue frames it covers.
    private var chunkQueueTime: (sampleTime: Double, frameCount: Int) = (0, 0)

    public init(flags: Flags, channelCount: Int, maximumFrames: Int, isInput: Bool = false, callback: @escaping Callback) {
        self.flags = flags
        self.isInput = isInput
        scratch = PlanarFIFO(channelCount: channelCount, capacity: maximumFrames)
        self.channelCount = channelCount
        self.maximumFrames = maximumFrames
        self.callback = callback
        source = PlanarFIFO(channelCount: channelCount, capacity: 2 * maximumFrames)
        siphonCopy = PlanarFIFO(channelCount: channelCount, capacity: maximumFrames)
        outputTable = .allocate(capacity: max(channelCount, 1))
    }

    deinit { outputTable.deallocate() }

    /// True on the thread running this tap's callback.
    public var isInCallback: Bool {
        guard let callingThread else { return false }
        return pthread_equal(callingThread, pthread_self()) != 0
    }

    /// AudioQueueProcessingTapGetSourceAudio: up to `frames` source frames, one pointer per
    /// channel (valid until the callback returns), the flags of the stream, and the sample time.
    /// Throws `.invalidTapContext` outside the callback and for siphons.
    public func sourceAudio(frames: Int) throws -> (planes: UnsafePointer<UnsafePointer<Float>>, frameCount: Int,
                                                    flags: Flags, sampleTime: Double) {
        guard isInCallback, !flags.contains(.siphon) else { throw QueueError.invalidTapContext }
        let count = min(max(frames, 0), source.count)
        let planes = source.head()
        // The memory stays put until the next append, after the callback.
        source.consume(count)
        var streamFlags: Flags = []
        if endingStream && source.count == 0 { streamFlags.insert(.endOfStream) }
        return (planes, count, streamFlags, sampleTime)
    }

    /// AudioQueueProcessingTapGetQueueTime: the queue time of the chunk being processed and
    /// the queue frames it covers (they differ from the tap's frames at a play rate other than 1).
    public func queueTime() throws -> (sampleTime: Double, frameCount: Int) {
        guard !isInput else { throw QueueError.invalidTapType }
        guard isInCallback else { throw QueueError.invalidTapContext }
        return chunkQueueTime
    }

    /// Checks creation flags: exactly one of PreEffects and PostEffects, and Siphon or not.
    static func validate(_ flags: Flags) throws {
        guard flags.contains(.preEffects) != flags.contains(.postEffects) else {
            throw QueueError.invalidParameter("a tap is either PreEffects or PostEffects")
        }
        guard flags.isSubset(of: [.preEffects, .postEffects, .siphon]) else {
            throw QueueError.invalidParameter("tap flags 0x\(String(flags.rawValue, radix: 16))")
        }
    }

    /// Runs the tap over `frames` frames and writes its output over them.
    func processInPlace(_ input: UnsafePointer<UnsafePointer<Float>>, _ output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
                        frames: Int) {
        scratch.clear()
        process(input, frames: frames, queueTime: (sampleTime, frames), into: scratch)
        let result = scratch.head()
        for c in 0..<channelCount { output[c].update(from: result[c], count: min(frames, scratch.count)) }
    }

    /// Runs the tap over `frames` frames of `input`, appending exactly `frames` frames to `output`.
    /// `queueTime` is the chunk's queue time and the queue frames it covers.
    func process(_ input: UnsafePointer<UnsafePointer<Float>>, frames: Int, queueTime: (Double, Int), into output: PlanarFIFO) {
        var offset = 0
        while offset < frames {
            let piece = min(maximumFrames, frames - offset)
            let share = frames == 0 ? 0 : queueTime.1 * piece / frames
            let time = (queueTime.0 + Double(queueTime.1) * Double(offset) / Double(frames), share)
            run(input, offset: offset, frames: piece, queueTime: time, into: output)
            offset += piece
        }
    }

    private func run(_ input: UnsafePointer<UnsafePointer<Float>>, offset: Int, frames: Int, queueTime: (Double, Int),
                     into output: PlanarFIFO) {
        var callFlags = flags
        if startOfStream { callFlags.insert(.startOfStream) }
        startOfStream = false
        chunkQueueTime = queueTime
        for c in 0..<channelCount { outputTable[c] = nil }
        if flags.contains(.siphon) {
            // The siphon sees a copy: whatever it writes, the queue plays the source.
            siphonCopy.clear()
            siphonCopy.append(input, offset: offset, frames: frames)
            callingThread = pthread_self()
            _ = callback(Call(frameCount: frames, sampleTime: sampleTime, flags: callFlags,
                              siphonSource: siphonCopy.mutableHead(), output: outputTable))
            callingThread = nil
            output.append(input, offset: offset, frames: frames)
        } else {
            source.append(input, offset: offset, frames: frames)
            callingThread = pthread_self()
            let result = callback(Call(frameCount: frames, sampleTime: sampleTime, flags: callFlags,
                                       siphonSource: nil, output: outputTable))
            callingThread = nil
            appendResult(frames: frames, produced: result.frameCount, into: output)
        }
        sampleTime += Double(frames)
    }

    /// The tap's output, exactly `frames` frames: what it gave, then silence (as Apple's queue does).
    private func appendResult(frames: Int, produced: Int, into output: PlanarFIFO) {
        let given = min(max(produced, 0), frames)
        if given > 0 {
            let destination = output.tail(reserving: given)
            for c in 0..<channelCount {
                if let plane = outputTable[c] {
                    destination[c].update(from: plane, count: given)
                } else {
                    destination[c].update(repeating: 0, count: given)
                }
            }
            output.commit(given)
        }
        output.appendSilence(frames - given)
    }

    /// The end of a continuous stream: a last call for what the tap has not taken (with
    /// EndOfStream from GetSourceAudio when the queue is stopping), then a new stream.
    func drain(endOfStream: Bool, queueTime: (Double, Int), into output: PlanarFIFO) {
        if !flags.contains(.siphon) && (source.count > 0 || endOfStream) {
            let frames = source.count
            endingStream = endOfStream
            chunkQueueTime = queueTime
            var callFlags = flags
            if startOfStream { callFlags.insert(.startOfStream) }
            for c in 0..<channelCount { outputTable[c] = nil }
            callingThread = pthread_self()
            let result = callback(Call(frameCount: frames, sampleTime: sampleTime, flags: callFlags,
                                       siphonSource: nil, output: outputTable))
            callingThread = nil
            endingStream = false
            appendResult(frames: frames, produced: result.frameCount, into: output)
        }
        reset()
    }

    /// A discontinuity: the next call starts a new stream.
    func reset() {
        source.clear()
        sampleTime = 0
        startOfStream = true
    }
}

extension QueueEngine {
    /// Taps are added and removed only while the queue is stopped (removed also once it is
    /// disposed of), never from the tap's own callback.
    func checkTapChange(removing tap: ProcessingTap? = nil) throws {
        if let tap, tap.isInCallback { throw QueueError.invalidTapContext }
        try lock.withLock {
            if tap != nil && ($0.disposed || $0.invalidated) { return }
            _ = try $0.life.handle(.reconfigure("taps change only while the queue is stopped"))
        }
    }
}
