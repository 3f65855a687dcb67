import AudioToolbox
import FoundationEssentials
import Glibc
import Sync
import Synchronization

/// Writes a take to disk on its own thread, straight from the input queue's buffers.
///
/// The queue records non-interleaved: a buffer holds one plane per track. Its input callback
/// hands each filled buffer to this writer (the filled list) and enqueues a free one in its
/// place (the free list, last in first out, so that buffers the queue has not needed yet
/// cost no memory). The writer writes each track's slice of a plane straight to its file,
/// then returns the buffer to the free list, or to the queue if the queue ran short of
/// buffers. Nothing is copied between the queue and the file writes, and nothing grows while
/// recording: every buffer is allocated before the start, and when the disk falls so far
/// behind that none is free, the queue's capture ring takes up the slack and then loses
/// frames, which the queue reports (kAudioQueueErr_RecordUnderrun) as a jump in the buffers'
/// start times; the take gets silence there, every track alike, and the frame is reported.
/// In freewheel the server waits for the queue instead, so a bounce runs at the disk's speed.
///
/// Frames are addressed by queue time. Track c is read `skip[c]` frames late (latency
/// compensation); the take starts at queue time `takeStart` and every file gets the same take
/// frames [0, end). Headers are kept up to date (crash-safe) and flushed to disk once a second.
final class TakeWriter: @unchecked Sendable {
    let format: AudioTakeFile.Format
    let channelCount: Int
    let rate: Double
    /// The current take's files (the writer thread swaps in the next take's: `nextTake`).
    private(set) var files: [TakeFile]
    let skip: [Int64]
    let maxSkip: Int64
    let minSkip: Int64
    /// Frames of one buffer.
    let bufferFrames: Int
    /// Buffers allocated up front, and how many the queue keeps enqueued.
    let bufferCount: Int
    let enqueuedCount: Int

    /// Seconds of audio kept while waiting for the start, more than the main loop's polling
    /// can lag behind the frame a trigger names.
    static let triggerSlackSeconds = 2.0
    /// Seconds between writes to the files (the sync to disk is once a second).
    static let flushInterval = 0.5

    /// The queue's buffers that are not enqueued (input callback and writer).
    private struct Lists {
        var filled: [HeldBuffer]
        var free: [AudioQueueBufferRef]
        /// Buffers the queue is short of: the callback found no free one to enqueue.
        var deficit = 0
        /// The queue still takes buffers.
        var enqueueing = true
    }
    private let lists: Locked<Lists>
    /// Posted when buffers, files or the end arrive for the writer.
    private let wake = Semaphore()
    /// Posted by the writer when it took the next take's files, closed a take, or finished.
    private let progress = Semaphore()
    /// The writer posted `mainLoopWake` for the current take's last frame written (once a take):
    /// the main loop sees it at once.
    private var completionPosted = false
    private var queue: AudioQueueRef?

    // Shared with the main thread.
    let state = Locked(State())
    struct State {
        /// Queue time of take frame 0 (nil while waiting for the start).
        var takeStart: Int64?
        /// The Broadcast Wave chunk of each file (WAV, RF64), set with `takeStart`: written
        /// before the take's first frame.
        var broadcast: [AudioTakeFile.BroadcastWave]?
        /// Take frames to write (nil: until stopped).
        var end: Int64?
        /// No more buffers will come.
        var inputFinished = false
        var error: String?
        /// Frames the queue lost (RecordUnderrun): where in the take, and how many.
        var losses = TakeLosses()
        var finished = false
        var preroll: Int64 = 0
        /// A take that starts on a known frame (`--at`, `--in`): the queue starts on it (less the
        /// pre-roll), so every frame from queue time 0 on may be the take's; none is let go while
        /// the main loop has not yet seen the start. (In freewheel seconds of audio pass between
        /// two of its looks: the queue then waits for buffers, and the server for the queue.)
        var keepsFromQueueStart = false
        /// A tape machine (`--multi`): a complete take does not end the writer; it waits for
        /// the next take's files (`nextFiles`), or the end of input.
        var takesFollow = false
        /// The next take's files, handed over by `nextTake`; taken once the current take is complete.
        var nextFiles: [TakeFile]?
        /// Takes completed and closed so far (`takesFollow`).
        var takesClosed = 0
        /// The last closed take's losses and clips, as they were when it was closed (`takesFollow`).
        var closedLosses: TakeLosses?
    }

    // Writer thread only (here and in TakeWriter+Files.swift).
    var held: [HeldBuffer]
    var expectedQueueFrame: Int64?
    var written: Int64 = 0
    /// Take frames every file has disk space reserved for.
    var reserved: Int64 = 0
    private var nextSync = Deadline.after(seconds: 1)
    private var nextFlush = Deadline.after(seconds: TakeWriter.flushInterval)
    /// A multichannel file's frames, interleaved for the write (--interleaved).
    let scratch: UnsafeMutableRawBufferPointer
    /// Frames the scratch buffers hold.
    static let scratchFrames = 4096
    /// Silence, for frames the queue lost.
    let zeros: UnsafeMutableRawBufferPointer

    /// Frames kept back from the files while the end is not known and may be found by
    /// polling (the transport stopping): a late-noticed stop can still cut on its frame.
    let holdBack: Int64
    /// Frames kept back from the files until the take ends, so that a gap found after its
    /// frames were captured (the network's: `--clock`) is silenced before they are written.
    let muteHold: Int64
    /// Queue frames to write as silence, and on which channels (network gaps).
    let mutes = Locked<[(frames: Range<Int64>, channels: Set<Int>)]>([])

    /// The number of buffers of `bufferFrames` frames to allocate for `bufferSeconds` of
    /// disk slack plus what the writer keeps (pre-roll, latency skew, trigger slack).
    static func bufferCount(bufferSeconds: Double, rate: Double, bufferFrames: Int, preroll: Double, maxSkip: Int64,
                            stopsByTrigger: Bool, enqueued: Int) -> Int {
        let kept = preroll + triggerSlackSeconds + (stopsByTrigger ? triggerSlackSeconds : 0) + flushInterval
        let frames = (bufferSeconds + kept) * rate + Double(maxSkip)
        return Int((frames / Double(bufferFrames)).rounded(.up)) + enqueued + 2
    }

    /// - Parameter stopsByTrigger: the end may come from a trigger noticed late (the transport).
    /// - Parameter muteSeconds: how late a gap may be found and still be silenced (0: none is).
    init(format: AudioTakeFile.Format, channelCount: Int, rate: Double, files: [TakeFile], skip: [Int64], bufferFrames: Int,
         bufferCount: Int, enqueuedCount: Int, stopsByTrigger: Bool = false, muteSeconds: Double = 0) {
        holdBack = stopsByTrigger ? Int64(TakeWriter.triggerSlackSeconds * rate) : 0
        muteHold = Int64(muteSeconds * rate)
        self.format = format
        self.channelCount = channelCount
        self.rate = rate
        self.files = files
        self.skip = skip
        maxSkip = skip.max() ?? 0
        minSkip = skip.min() ?? 0
        self.bufferFrames = bufferFrames
        self.bufferCount = bufferCount
        self.enqueuedCount = enqueuedCount
        var free: [AudioQueueBufferRef] = []
        free.reserveCapacity(bufferCount)
        var filled: [HeldBuffer] = []
        filled.reserveCapacity(bufferCount)
        lists = Locked(Lists(filled: filled, free: free))
        held = []
        held.reserveCapacity(bufferCount)
        let widest = files.map(\.channels.count).max() ?? 1
        scratch = .allocate(byteCount: Self.scratchFrames * widest * max(format.bytesPerSample, 4), alignment: 16)
        zeros = .allocate(byteCount: 64 << 10, alignment: 16)
        zeros.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit {
        scratch.deallocate()
        zeros.deallocate()
    }

    /// Allocates every buffer and enqueues `enqueuedCount` of them; the error code if the
    /// queue refused.
    func allocateBuffers(on queue: AudioQueueRef) -> OSStatus {
        self.queue = queue
        let bytes = UInt32(bufferFrames * channelCount * format.bytesPerSample)
        for i in 0..<bufferCount {
            var buffer: AudioQueueBufferRef?
            let status = AudioQueueAllocateBuffer(queue, bytes, &buffer)
            guard status == noErr, let buffer else { return status == noErr ? kAudio_MemFullError : status }
            if i < enqueuedCount {
                let enqueued = AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
                if enqueued != noErr { return enqueued }
            } else {
                lists.withLock { $0.free.append(buffer) }
            }
        }
        // The free list is a stack: the buffers at its bottom are used only if the disk falls behind.
        lists.withLock { $0.free.reverse() }
        return noErr
    }

    func start() {
        QueueThread(name: "jaq-writer") { [self] in self.run() }.detach()
    }

    /// From the input callback: a filled buffer, and the free buffer to enqueue in its place
    /// (nil if none is free: the writer enqueues the next it frees).
    func deliver(_ buffer: AudioQueueBufferRef, queueFrame: Int64) -> AudioQueueBufferRef? {
        let frames = Int(buffer.pointee.mAudioDataByteSize) / (channelCount * format.bytesPerSample)
        let (next, pressing): (AudioQueueBufferRef?, Bool) = lists.withLock { lists in
            if frames > 0 {
                // The list has room for every buffer there is: it is never full.
                lists.filled.append(HeldBuffer(buffer: buffer, queueFrame: queueFrame, frames: frames))
            } else {
                lists.free.append(buffer)
            }
            guard lists.enqueueing else { return (nil, true) }
            let next = lists.free.popLast()
            if next == nil { lists.deficit += 1 }
            // Half the buffers out of the queue (filled or held), or the queue short of one:
            // the writer writes now to free some.
            let out = bufferCount - enqueuedCount - lists.free.count + lists.deficit
            return (next, lists.deficit > 0 || out * 2 >= bufferCount)
        }
        // The writer takes a buffer at its next write anyway (every `flushInterval`); it is
        // woken for one only when it must act now: buffers running short, the queue stopping,
        // or the take's last frame here. (A wake-up per buffer cost a take about 1 ms per
        // 10 s: issue #29.)
        let last = queueFrame + Int64(frames)
        if pressing || state.withLock({ state in
            guard let end = state.end, let start = state.takeStart else { return false }
            return last - start - maxSkip >= end
        }) {
            wake.post()
        }
        return next
    }

    /// Frames the tracks of `channels` hold at queue frames `frames` are written as silence
    /// (a network gap: netjack2 filled them from other cycles), if not written yet.
    func mute(queueFrames frames: Range<Int64>, channels: Set<Int>) {
        guard !frames.isEmpty, !channels.isEmpty else { return }
        mutes.withLock { $0.append((frames, channels)) }
    }

    /// The queue takes no more buffers (it is stopping).
    func stopEnqueueing() { lists.withLock { $0.enqueueing = false } }

    /// A buffer the writer is done with: to the queue if it is short of one, else to the free list.
    func release(_ buffer: AudioQueueBufferRef) {
        let enqueue: Bool = lists.withLock { lists in
            if lists.enqueueing && lists.deficit > 0 {
                lists.deficit -= 1
                return true
            }
            lists.free.append(buffer)
            return false
        }
        if enqueue, let queue, AudioQueueEnqueueBuffer(queue, buffer, 0, nil) != noErr {
            lists.withLock { $0.free.append(buffer) }
        }
    }

    /// How much of the buffering is in use (0...1): buffers filled and not yet written.
    var bufferFill: Double {
        let free = lists.withLock { $0.free.count }
        return Double(max(0, bufferCount - enqueuedCount - free)) / Double(max(1, bufferCount - enqueuedCount))
    }

    /// Take frames written to every file so far.
    var framesWritten: Int64 { writtenAtomic.load(ordering: .relaxed) }
    let writtenAtomic = Atomic<Int64>(0)

    /// Hands over the next take's files (`takesFollow`): once the current take is complete,
    /// the writer closes its files and waits for the next start with these, keeping the
    /// frames captured since (the next take's pre-roll). Returns once it has.
    /// - Returns: false if the writer did not take them within `timeout` seconds (they are
    ///   the caller's again); once it has taken them it is waited for, however long it takes
    ///   to close the take (a slow disk's `syncfs`).
    func nextTake(_ next: [TakeFile], timeout: Double = 30) -> Bool {
        let closed = state.withLock { state -> Int in
            state.nextFiles = next
            return state.takesClosed
        }
        wake.post()
        let deadline = Deadline.after(seconds: timeout)
        while true {
            let (taken, done) = state.withLock { ($0.nextFiles == nil, $0.takesClosed > closed) }
            if done { return true }
            if !taken && deadline.hasPassed {
                // Not taken: take them back, unless the writer took them meanwhile.
                let gaveUp = state.withLock { state -> Bool in
                    guard state.nextFiles != nil else { return false }
                    state.nextFiles = nil
                    return true
                }
                if gaveUp { return false }
            }
            // Taken: the take's close is waited for, however long it takes.
            progress.wait(until: taken ? .after(seconds: 1) : deadline)
        }
    }

    /// The take's start, end or error changed (`state`): the writer looks at once.
    func poke() { wake.post() }

    func finishInput() {
        state.withLock { $0.inputFinished = true }
        wake.post()
    }

    /// Waits until everything delivered is on disk and the files are closed.
    func waitUntilFinished(timeout: Double = 120) {
        let deadline = Deadline.after(seconds: timeout)
        while !state.withLock({ $0.finished }) && progress.wait(until: deadline) {}
    }

    private func run() {
        while true {
            // Buffers, files, the take's start and end and the end of input post `wake`; the
            // clock is needed only for the next write and the next sync. (A wait of 0.1 s here
            // woke the writer 10 times a second for nothing: issue #29.)
            _ = wake.wait(until: state.withLock({ $0.error }) == nil ? min(nextFlush, nextSync) : .after(seconds: 0.1))
            let inputDone = state.withLock { $0.inputFinished }
            takeFilled()
            let (error, end, takeStart) = state.withLock { ($0.error, $0.end, $0.takeStart) }
            if error != nil {
                // Nothing more is written: buffers go straight back.
                while let buffer = held.takeFirst() { release(buffer.buffer) }
                if inputDone && lists.withLock({ $0.filled.isEmpty }) { break }
                continue
            }
            // Files are written in half-second batches (fewer, larger writes per track), at once
            // when the take's last frame has arrived, and whenever half the buffers are held.
            let last = held.last?.end ?? expectedQueueFrame ?? 0
            let endArrived = end.map { end in takeStart.map { last - $0 - maxSkip >= end } ?? false } ?? false
            let heldFrames = (0..<held.count).reduce(0) { $0 + held[$1].frames }
            let kept = keptFrames() + Int(TakeWriter.flushInterval * rate)
            // A write or a sync due within half a write's interval is done now, with the other:
            // the two clocks meet on one wake-up a second, not three (issue #29).
            let soon = TakeWriter.flushInterval / 2
            if nextFlush.remaining < soon || endArrived || heldFrames >= kept || held.count * 2 >= bufferCount {
                nextFlush = .after(seconds: TakeWriter.flushInterval)
                flushTake(final: false)
            }
            if state.withLock({ $0.error }) == nil, nextSync.remaining < soon {
                nextSync = .after(seconds: 1)
                makeDurable()
            }
            let complete = end.map { written >= $0 } ?? false
            if complete, !completionPosted {
                completionPosted = true
                mainLoopWake.post()
            }
            // The next take's files: taken (and cleared) under the lock, so `nextTake` knows they are the writer's.
            if complete, let next = state.withLock({ state -> [TakeFile]? in
                guard state.takesFollow, let next = state.nextFiles else { return nil }
                state.nextFiles = nil
                return next
            }) {
                closeTake(then: next)
                progress.post()
                continue
            }
            if (inputDone && lists.withLock({ $0.filled.isEmpty })) || (complete && !state.withLock({ $0.takesFollow })) { break }
        }
        if state.withLock({ $0.error }) == nil { flushTake(final: true) }
        for file in files {
            do { try file.take.close() } catch { if state.withLock({ $0.error }) == nil { fail(error) } }
        }
        while let buffer = held.takeFirst() { release(buffer.buffer) }
        state.withLock { $0.finished = true }
        progress.post()
        mainLoopWake.post()
    }

    /// Closes the complete take's files and makes `next` the files of a take waiting for its
    /// start: the frames held past the take's end stay (the next pre-roll), the counts start over.
    private func closeTake(then next: [TakeFile]) {
        makeDurable()
        for file in files {
            do { try file.take.close() } catch { fail(error) }
        }
        files = next
        written = 0
        writtenAtomic.store(0, ordering: .relaxed)
        reserved = 0
        completionPosted = false
        state.withLock {
            $0.closedLosses = $0.losses
            $0.losses = TakeLosses()
            $0.takeStart = nil
            $0.end = nil
            $0.broadcast = nil
            $0.keepsFromQueueStart = false
            $0.takesClosed += 1
        }
    }

    /// Moves the filled list's buffers to the held ones, noting frames the queue lost before each.
    private func takeFilled() {
        while let buffer = lists.withLock({ $0.filled.takeFirst() }) {
            if let expected = expectedQueueFrame, buffer.queueFrame > expected {
                let lost = buffer.queueFrame - expected
                state.withLock { state in
                    state.losses.lostEvents.append((max(0, expected - (state.takeStart ?? expected) - minSkip), lost))
                }
            }
            expectedQueueFrame = buffer.end
            held.append(buffer)
        }
    }

    /// Frames the writer keeps before the take starts: the pre-roll, the latency skew, and
    /// the last seconds (a start found by polling lies in the past).
    private func keptFrames() -> Int {
        Int(state.withLock { $0.preroll } + maxSkip + holdBack + Int64(TakeWriter.triggerSlackSeconds * rate))
    }

    /// Once a second: headers brought up to date and the files flushed to the disk.
    private func makeDurable() {
        do { try AudioTakeFile.makeDurable(files.map(\.take)) } catch { fail(error) }
    }
}
