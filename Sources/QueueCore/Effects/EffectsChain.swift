import Synchronization

/// What an output queue does to its audio between decoding and the sample-rate converter,
/// at the queue's rate, on the queue thread: a pre-effects processing tap, the time/pitch
/// unit, a post-effects tap. Its output waits in `pending` until the decode ring has room.
///
/// Thread safety: configuration (enable, algorithm, taps) from API threads while the queue is
/// stopped, under `lock`, which the queue thread holds while processing; rate, pitch and bypass
/// are atomics any thread may set; the time map is read by API threads under its own lock.
final class EffectsChain: @unchecked Sendable {
    let channelCount: Int
    let sampleRate: Double
    let lock = ConditionLock()

    // Under `lock`.
    private(set) var timePitchEnabled = false
    private(set) var algorithm = TimePitchAlgorithm.spectral
    private var timePitch: TimePitchStage?
    private(set) var tap: ProcessingTap?
    /// The stretcher was bypassed for the last frames (switching resets it).
    private var wasBypassed = false

    /// kAudioQueueParam_PlayRate, kAudioQueueParam_Pitch, kAudioQueueProperty_TimePitchBypass.
    private let rateBits = Atomic<UInt32>(Float(1).bitPattern)
    private let centsBits = Atomic<UInt32>(Float(0).bitPattern)
    private let bypassed = Atomic<Bool>(false)
    /// Anything to do: time/pitch enabled or a tap installed (read by the queue thread per chunk).
    private let active = Atomic<Bool>(false)

    // Queue thread only.
    /// Processed frames waiting for room in the decode ring.
    let pending: PlanarFIFO
    private let stageA: PlanarFIFO
    private let stageB: PlanarFIFO
    /// Runs of `pending`: frames and the play rate they were made at (for the time map).
    private var pendingRuns: [(frames: Int, rate: Double)] = []
    /// Something went in since the last drain.
    private(set) var hasInput = false
    /// Source frames (queue time) pushed since the timeline began, and the queue time of
    /// the frames through a post-effects tap (its frames times the rate they were made at).
    private var sourcePushed = 0.0
    private var postTapTime = 0.0
    /// Set by `beginTimeline` (under the engine's lock, which must not wait for `lock`: a tap
    /// callback holding `lock` may take the engine's); the queue thread restarts the counts.
    private let timelineRestart = Atomic<Bool>(false)

    /// Output frames (queue rate) released to the ring and the queue time they stand for.
    private let timeMap = Locked(TimeMap())

    init(channelCount: Int, sampleRate: Double) {
        self.channelCount = channelCount
        self.sampleRate = sampleRate
        pending = PlanarFIFO(channelCount: channelCount)
        stageA = PlanarFIFO(channelCount: channelCount)
        stageB = PlanarFIFO(channelCount: channelCount)
    }

    var isActive: Bool { active.load(ordering: .acquiring) }

    var playRate: Float {
        get { Float(bitPattern: rateBits.load(ordering: .relaxed)) }
        set { rateBits.store(min(max(newValue, 0.5), 2).bitPattern, ordering: .relaxed) }
    }

    var pitch: Float {
        get { Float(bitPattern: centsBits.load(ordering: .relaxed)) }
        set { centsBits.store(min(max(newValue, -2400), 2400).bitPattern, ordering: .relaxed) }
    }

    var bypass: Bool {
        get { bypassed.load(ordering: .relaxed) }
        set { bypassed.store(newValue, ordering: .relaxed) }
    }

    /// Inserts or removes the time/pitch unit (lock held by the caller's `configure`).
    func setTimePitch(enabled: Bool, algorithm: TimePitchAlgorithm) throws {
        let stage = enabled ? try TimePitchStage(sampleRate: sampleRate, channelCount: channelCount, algorithm: algorithm) : nil
        lock.withLock {
            timePitchEnabled = enabled
            self.algorithm = algorithm
            timePitch = stage
            updateActive()
        }
    }

    /// Installs a tap; `.tooManyTaps` if there is one.
    func install(_ newTap: ProcessingTap) throws {
        try lock.withLock {
            guard tap == nil else { throw QueueError.tooManyTaps }
            tap = newTap
            updateActive()
        }
    }

    /// Removes `oldTap`; false if it is not this chain's.
    func remove(_ oldTap: ProcessingTap) -> Bool {
        lock.withLock {
            guard tap === oldTap else { return false }
            tap = nil
            updateActive()
            return true
        }
    }

    private func updateActive() {
        active.store(timePitchEnabled || tap != nil, ordering: .releasing)
    }

    /// Processes `frames` decoded frames into `pending`.
    func push(_ input: UnsafePointer<UnsafePointer<Float>>, frames: Int) {
        guard frames > 0 else { return }
        lock.withLock {
            restartTimelineIfAsked()
            hasInput = true
            let rate = Double(playRate)
            let stretching = timePitch != nil && !bypass
            let effectiveRate = stretching ? rate : 1
            let before = pending.count
            var current = input
            var count = frames
            if let tap, tap.flags.contains(.preEffects) {
                stageA.clear()
                tap.process(current, frames: count, queueTime: (sourcePushed, frames), into: stageA)
                current = stageA.head()
                count = stageA.count
            }
            if let timePitch {
                if stretching == wasBypassed { timePitch.reset() }
                wasBypassed = !stretching
                if stretching {
                    timePitch.set(rate: rate, cents: Double(pitch))
                    stageB.clear()
                    timePitch.process(current, frames: count, into: stageB)
                    current = stageB.head()
                    count = stageB.count
                }
            }
            if let tap, tap.flags.contains(.postEffects) {
                runPostTap(tap, current, frames: count, rate: effectiveRate)
            } else {
                pending.append(current, frames: count)
            }
            sourcePushed += Double(frames)
            addRun(pending.count - before, rate: effectiveRate)
        }
    }

    /// Queue-rate frames processed but not yet in the ring: pending, and owed by the stretcher.
    var heldFrames: Int {
        lock.withLock { pending.count + (timePitch?.owedFrames ?? 0) }
    }

    /// Drains the stages into `pending` (Flush, Stop(false)); `endOfStream` when the queue is stopping.
    func drain(endOfStream: Bool) {
        lock.withLock {
            restartTimelineIfAsked()
            guard hasInput else { return }
            let before = pending.count
            let rate = timePitch != nil && !bypass ? Double(playRate) : 1
            if let tap, tap.flags.contains(.preEffects) {
                stageA.clear()
                tap.drain(endOfStream: endOfStream, queueTime: (sourcePushed, 0), into: stageA)
                if stageA.count > 0, let timePitch, !bypass {
                    stageB.clear()
                    timePitch.process(stageA.head(), frames: stageA.count, into: stageB)
                    pending.append(stageB.head(), frames: stageB.count)
                } else {
                    pending.append(stageA.head(), frames: stageA.count)
                }
            }
            if let timePitch {
                stageB.clear()
                timePitch.drain(into: stageB)
                if let tap, tap.flags.contains(.postEffects) {
                    runPostTap(tap, stageB.head(), frames: stageB.count, rate: rate)
                } else {
                    pending.append(stageB.head(), frames: stageB.count)
                }
            }
            if let tap, tap.flags.contains(.postEffects) {
                tap.drain(endOfStream: endOfStream, queueTime: (postTapTime, 0), into: pending)
            }
            addRun(pending.count - before, rate: rate)
            hasInput = false
        }
    }

    /// Drops everything held (Reset, Stop(true)).
    func reset() {
        lock.withLock {
            pending.clear()
            pendingRuns.removeAll()
            stageA.clear()
            stageB.clear()
            timePitch?.reset()
            tap?.reset()
            hasInput = false
        }
    }

    /// A new timeline (Stop): queue time starts again at 0.
    func beginTimeline() {
        timelineRestart.store(true, ordering: .releasing)
        timeMap.withLock { $0 = TimeMap() }
    }

    private func restartTimelineIfAsked() {
        guard timelineRestart.exchange(false, ordering: .acquiringAndReleasing) else { return }
        sourcePushed = 0
        postTapTime = 0
    }

    /// A post-effects tap over `frames` frames made at `rate`: they cover `frames × rate` frames of queue time.
    private func runPostTap(_ tap: ProcessingTap, _ input: UnsafePointer<UnsafePointer<Float>>, frames: Int, rate: Double) {
        let covered = Double(frames) * rate
        tap.process(input, frames: frames, queueTime: (postTapTime, Int(covered.rounded())), into: pending)
        postTapTime += covered
    }

    private func addRun(_ frames: Int, rate: Double) {
        guard frames > 0 else { return }
        if let last = pendingRuns.last, last.rate == rate {
            pendingRuns[pendingRuns.count - 1].frames += frames
        } else {
            pendingRuns.append((frames, rate))
        }
    }

    /// Counts `frames` pending frames as written to the ring, and drops them from `pending`.
    func released(_ frames: Int) {
        var left = frames
        var segments: [(frames: Int, rate: Double)] = []
        while left > 0, !pendingRuns.isEmpty {
            let take = min(left, pendingRuns[0].frames)
            segments.append((take, pendingRuns[0].rate))
            pendingRuns[0].frames -= take
            if pendingRuns[0].frames == 0 { pendingRuns.removeFirst() }
            left -= take
        }
        pending.consume(frames)
        timeMap.withLock { map in for segment in segments { map.add(frames: segment.frames, rate: segment.rate) } }
    }

    /// The queue time (source frames) of the frame `outputFrames` queue-rate frames into the timeline.
    func queueTime(forOutputFrames outputFrames: Double) -> Double {
        timeMap.withLock { $0.sourceTime(forOutput: outputFrames) }
    }
}

/// Output frames against the queue time they play: a piecewise-linear map, one segment per rate.
struct TimeMap {
    private var segments: [(output: Double, source: Double, rate: Double)] = [(0, 0, 1)]
    private var endOutput = 0.0
    private var endSource = 0.0

    /// `frames` more output frames made at `rate` (source frames per output frame).
    mutating func add(frames: Int, rate: Double) {
        if segments[segments.count - 1].rate != rate {
            segments.append((endOutput, endSource, rate))
        }
        endOutput += Double(frames)
        endSource += Double(frames) * rate
    }

    func sourceTime(forOutput output: Double) -> Double {
        var low = 0
        var high = segments.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if segments[middle].output <= output { low = middle } else { high = middle - 1 }
        }
        let segment = segments[low]
        return segment.source + (output - segment.output) * segment.rate
    }
}
