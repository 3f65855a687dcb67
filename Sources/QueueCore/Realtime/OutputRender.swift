import Glibc
import Synchronization

// An output queue's realtime side: the JACK cycle renders the ring into the ports.
// No locks, no allocation, no reference counting, no waiting, no C calls in the kernels.

/// What the realtime entry of an output queue holds: plain state, no classes.
typealias OutputRealtimeContext = RealtimeContext<OutputRealtimeState>

/// The realtime entry of output queues (installed on the device).
let outputRealtimeEntry: RealtimeEntry = { context, frameTime, frameCount, ports, mayWait, freewheeling in
    let c = context.assumingMemoryBound(to: OutputRealtimeContext.self)
    if mayWait { waitForOutputData(c, frameTime: frameTime, frames: Int(frameCount)) }
    c.pointee.cycleEnded(renderOutputCycle(c.pointee.state, frameTime: frameTime, frameCount: Int(frameCount), ports: ports,
                                           freewheeling: freewheeling))
}

/// Not realtime (freewheel, ManualDriver): waits until the ring holds the cycle's
/// frames, the end of stream is set, a command arrives, or the queue thread has
/// nothing more to give.
private func waitForOutputData(_ c: UnsafeMutablePointer<OutputRealtimeContext>, frameTime: Int64, frames: Int) {
    let s = c.pointee.state
    c.pointee.demandPosition.store(s.pointee.ring.readIndex.load(ordering: .relaxed) + frames, ordering: .sequentiallyConsistent)
    defer { c.pointee.demandPosition.store(0, ordering: .relaxed) }
    c.pointee.waitForQueueThread { outputCycleNeedsNoWait(c, frameTime: frameTime, frames: frames) }
}

/// True when a cycle of `frames` frames from `frameTime` has nothing to wait for: the ring
/// holds its frames, the end of stream is set, a command is pending, the queue will not play
/// in it, or the queue thread has nothing more to give (no data to convert, no callback out).
func outputCycleNeedsNoWait(_ c: UnsafeMutablePointer<OutputRealtimeContext>, frameTime: Int64, frames: Int) -> Bool {
    let s = c.pointee.state
    let core = s.pointee.core
    let mode = core.pointee.mode
    let willPlay = mode == ModeCode.running
        || (mode == ModeCode.armed && (core.pointee.armedFrame == .min || core.pointee.armedFrame - frameTime < Int64(frames)))
    let commandPending = core.pointee.commands.peek() != nil
    return commandPending || !willPlay || s.pointee.endOfStream != .max
        || s.pointee.ring.readableFrames() >= frames
        || !c.pointee.producerBusy.load(ordering: .acquiring)
}

/// Renders one JACK cycle of an output queue into its ports.
///
/// Starts on exactly the requested device frame (inside the period if need be),
/// plays the ring with volume (ramped), pan and per-buffer parameter events,
/// fills with silence when stopped, paused or starved, and stops by itself at
/// the end of stream. Realtime: no locks, no allocation, no waiting.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
public func renderOutputCycle(
    _ s: UnsafeMutablePointer<OutputRealtimeState>, frameTime: Int64, frameCount n: Int,
    ports: UnsafePointer<UnsafeMutablePointer<Float>>, freewheeling: Bool = false
) -> UInt32 {
    var outcome: UInt32 = 0
    let c = s.pointee.core
    let portCount = s.pointee.portCount

    if applyOutputCommands(s) { outcome |= realtimeWakeQueueThread }
    // What earlier cycles rendered has gone out: played.
    if publishPlayed(s, upTo: s.pointee.ring.readIndex.load(ordering: .relaxed)) { outcome |= realtimeWakeQueueThread }

    // Parameters requested by control threads.
    let panRequest = s.pointee.requestedPan.load(ordering: .relaxed)
    if panRequest != s.pointee.lastPanRequest {
        s.pointee.lastPanRequest = panRequest
        s.pointee.pan = min(max(Float(bitPattern: panRequest), -1), 1)
    }
    let volumeRequest = s.pointee.requestedVolume.load(ordering: .relaxed)
    if volumeRequest != s.pointee.lastVolumeRequest {
        s.pointee.lastVolumeRequest = volumeRequest
        startVolumeChange(s, to: Float(bitPattern: volumeRequest))
    }

    // Cycles the server skipped (an xrun left this client out): the frames they would have
    // played are dropped from the ring, so the queue stays on time (and aligned with others).
    // A jump in frame time is judged over the next cycles (see CycleSkipTracker); meanwhile
    // cycles play on the continuous timeline.
    // In freewheel the server skips no client's cycle: a jump is only its clock's.
    let verdict = judgeCycle(&c.pointee.skips, frameTime: frameTime, frameCount: n,
                             tracking: c.pointee.mode == ModeCode.running && !freewheeling)
    let frameTime = verdict.frame
    let missed = verdict.confirmedLoss
    if missed > 0 && c.pointee.mode == ModeCode.running {
        c.pointee.queueFrames += missed
        let read = s.pointee.ring.readIndex.load(ordering: .relaxed)
        var available = s.pointee.ring.writeIndex.load(ordering: .acquiring) - read
        if s.pointee.endOfStream != .max { available = min(available, s.pointee.endOfStream - read) }
        let dropped = min(Int(missed), max(available, 0))
        s.pointee.ring.readIndex.store(read + dropped, ordering: .releasing)
        c.pointee.publication.lostFrames.wrappingAdd(Int(missed), ordering: .relaxed)
        outcome |= realtimeWakeQueueThread

    }

    // Where in this cycle audio starts (not yet: silence).
    guard let offset = startOffset(c, frameTime: frameTime, frameCount: n, outcome: &outcome) else {
        silence(ports, portCount, from: 0, count: n)
        s.pointee.cycleOutputFrames = n
        return outcome
    }

    guard c.pointee.mode == ModeCode.running else {
        publishIdleCycle(c, frameTime: frameTime, frameCount: n)
        silence(ports, portCount, from: 0, count: n)
        s.pointee.cycleOutputFrames = 0
        return outcome
    }
    s.pointee.cycleOutputFrames = n

    silence(ports, portCount, from: 0, count: offset)
    let queueFramesAtCycleStart = c.pointee.queueFrames - Int64(offset)
    let wanted = n - offset
    let read = s.pointee.ring.readIndex.load(ordering: .relaxed)
    var available = s.pointee.ring.writeIndex.load(ordering: .acquiring) - read
    let atEnd = s.pointee.endOfStream != .max
    if atEnd { available = min(available, s.pointee.endOfStream - read) }
    let count = min(wanted, max(available, 0))

    renderFrames(s, ports: ports, from: offset, count: count, readIndex: read)
    s.pointee.ring.readIndex.store(read + count, ordering: .releasing)
    // Wake the queue thread only once there is the room it waits for.
    if count > 0 && s.pointee.ring.writableFrames() >= s.pointee.wakeThreshold.load(ordering: .relaxed) {
        s.pointee.wakeThreshold.store(.max, ordering: .relaxed)
        outcome |= realtimeWakeQueueThread
    }

    if atEnd && read + count >= s.pointee.endOfStream {
        // Played out: the queue stops by itself after its last frame.
        silence(ports, portCount, from: offset + count, count: wanted - count)
        s.pointee.cycleOutputFrames = offset + count
        c.pointee.queueFrames += Int64(count)
        c.pointee.mode = ModeCode.stopped
        s.pointee.endOfStream = .max
        // The stream's last frames are in this cycle's port buffers: nothing more is to play.
        _ = publishPlayed(s, upTo: read + count)
        c.pointee.publication.finishCount.wrappingAdd(1, ordering: .releasing)
        outcome |= realtimeWakeQueueThread
    } else {
        if count < wanted {
            silence(ports, portCount, from: offset + count, count: wanted - count)
            c.pointee.publication.lostFrames.wrappingAdd(wanted - count, ordering: .relaxed)
        }
        c.pointee.queueFrames += Int64(wanted)
    }

    if s.pointee.meters.enabled.load(ordering: .relaxed) {
        meterPorts(s, ports: ports, frameCount: n)
    }
    publishCycle(c, frameTime: frameTime, frameCount: n, queueFramesAtCycleStart: queueFramesAtCycleStart)
    return outcome
}

/// Publishes that the ring has been played up to `position`; true if the queue thread asked
/// to be woken by then (a buffer it holds until played can go back to its callback).
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func publishPlayed(_ s: UnsafeMutablePointer<OutputRealtimeState>, upTo position: Int) -> Bool {
    s.pointee.playedIndex.store(position, ordering: .sequentiallyConsistent)
    guard position >= s.pointee.returnWakePosition.load(ordering: .sequentiallyConsistent) else { return false }
    s.pointee.returnWakePosition.store(.max, ordering: .relaxed)
    return true
}

/// Applies the commands control threads queued to an output queue; true if any was applied.
/// Realtime (called by each cycle), or on a control thread when no cycle can run.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
public func applyOutputCommands(_ s: UnsafeMutablePointer<OutputRealtimeState>) -> Bool {
    applyCommands(OutputSide(s: s))
}

/// An output queue's steps in the shared realtime core.
struct OutputSide: RealtimeSide {
    let s: UnsafeMutablePointer<OutputRealtimeState>

    var core: UnsafeMutablePointer<RealtimeCore> { @inline(__always) get { s.pointee.core } }

    @inline(__always) func willHalt() {}

    @inline(__always) func didStop() { s.pointee.endOfStream = .max }

    @inline(__always) func applyRingCommand(_ command: RealtimeCommand) {
        switch command.kind {
        case .discard:
            let read = s.pointee.ring.readIndex.load(ordering: .relaxed)
            if command.position > read { s.pointee.ring.readIndex.store(command.position, ordering: .releasing) }
            while let event = s.pointee.parameterEvents.peek(), event.position < command.position {
                _ = s.pointee.parameterEvents.pop()
            }
        case .endOfStream:
            s.pointee.endOfStream = command.position
        case .start, .pause, .stop, .reclaim:
            break
        }
    }
}

#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
private func silence(_ ports: UnsafePointer<UnsafeMutablePointer<Float>>, _ portCount: Int, from: Int, count: Int) {
    guard count > 0 else { return }
    for p in 0..<portCount { (ports[p] + from).update(repeating: 0, count: count) }
}

#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
private func startVolumeChange(_ s: UnsafeMutablePointer<OutputRealtimeState>, to target: Float) {
    let clamped = min(max(target, 0), 1)
    let rampFrames = s.pointee.volumeRampFrames.load(ordering: .relaxed)
    if rampFrames > 0 && clamped != s.pointee.volume {
        s.pointee.volumeTarget = clamped
        s.pointee.volumeStep = (clamped - s.pointee.volume) / Float(rampFrames)
        s.pointee.rampRemaining = rampFrames
    } else {
        s.pointee.volume = clamped
        s.pointee.volumeTarget = clamped
        s.pointee.rampRemaining = 0
    }
}

/// Balance gains: unity at centre, one side fades linearly to 0 towards the other.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
private func balanceGains(_ pan: Float) -> (left: Float, right: Float) {
    let p = min(max(pan, -1), 1)
    return (min(1, 1 - p), min(1, 1 + p))
}

/// Plays `count` ring frames from `readIndex` into the ports at `from`, applying
/// parameter events exactly at their positions, the volume ramp and pan.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
private func renderFrames(
    _ s: UnsafeMutablePointer<OutputRealtimeState>, ports: UnsafePointer<UnsafeMutablePointer<Float>>,
    from: Int, count: Int, readIndex: Int
) {
    let capacity = s.pointee.ring.capacity
    let mask = capacity - 1
    let channels = s.pointee.channelCount
    let portCount = s.pointee.portCount
    var done = 0
    while done < count {
        let position = readIndex + done
        // Events due at or before this frame.
        while let event = s.pointee.parameterEvents.peek(), event.position <= position {
            _ = s.pointee.parameterEvents.pop()
            // The event's value becomes the parameter's value (what GetParameter reports),
            // unless a control thread set a newer one meanwhile.
            let bits = event.value.bitPattern
            switch event.kind {
            case .volume:
                startVolumeChange(s, to: event.value)
                if s.pointee.requestedVolume.compareExchange(
                    expected: s.pointee.lastVolumeRequest, desired: bits, ordering: .relaxed).exchanged {
                    s.pointee.lastVolumeRequest = bits
                }
            case .pan:
                s.pointee.pan = min(max(event.value, -1), 1)
                if s.pointee.requestedPan.compareExchange(
                    expected: s.pointee.lastPanRequest, desired: bits, ordering: .relaxed).exchanged {
                    s.pointee.lastPanRequest = bits
                }
            case .volumeRampFrames:
                // What GetParameter(VolumeRampTime) reports from here on, as if set then.
                s.pointee.volumeRampFrames.store(Int(event.value), ordering: .relaxed)
            }
        }
        var chunk = count - done
        if let event = s.pointee.parameterEvents.peek(), event.position < position + chunk {
            chunk = event.position - position
        }
        chunk = min(chunk, capacity - (position & mask))  // up to the ring's wrap
        let ramping = s.pointee.rampRemaining > 0
        if ramping { chunk = min(chunk, s.pointee.rampRemaining) }

        let (left, right) = balanceGains(s.pointee.pan)
        let volume = s.pointee.volume
        let step = s.pointee.volumeStep
        for p in 0..<portCount {
            let plane = s.pointee.ring.plane(channels == 1 ? 0 : p) + (position & mask)
            let out = ports[p] + from + done
            var panGain: Float = 1
            if portCount == 2 { panGain = p == 0 ? left : right }
            if ramping {
                for i in 0..<chunk { out[i] = plane[i] * (volume + step * Float(i + 1)) * panGain }
            } else {
                let gain = volume * panGain
                if gain == 1 {
                    UnsafeMutableRawPointer(out).copyMemory(from: plane, byteCount: chunk * 4)
                } else {
                    for i in 0..<chunk { out[i] = plane[i] * gain }
                }
            }
        }
        if ramping {
            s.pointee.rampRemaining -= chunk
            s.pointee.volume = s.pointee.rampRemaining == 0 ? s.pointee.volumeTarget : volume + step * Float(chunk)
        }
        done += chunk
    }
}

#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
private func meterPorts(
    _ s: UnsafeMutablePointer<OutputRealtimeState>, ports: UnsafePointer<UnsafeMutablePointer<Float>>, frameCount: Int
) {
    if s.pointee.channelCount == 1 {
        // A mono queue is metered on the louder of its two ports.
        let (left, right) = balanceGains(s.pointee.pan)
        s.pointee.meters.accumulate(0, ports[left >= right ? 0 : 1], count: frameCount)
    } else {
        for c in 0..<s.pointee.channelCount { s.pointee.meters.accumulate(c, ports[c], count: frameCount) }
    }
    s.pointee.meters.endCycle(frames: frameCount)
}
