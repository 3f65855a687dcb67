import AudioToolbox
import FoundationEssentials
import Glibc
import JackControl

/// The main loop of a `jaq record` session, and the end of its take.
extension RecordSession {
    /// What one pass of the loop found.
    enum Pass {
        /// Wait a moment and look again.
        case wait
        /// Look again now (a take ended and the next was armed, or an error was set).
        case again
        /// The take is over.
        case stop
    }

    /// Runs the takes until they end (as asked, by a failure, or by a signal), writes what was
    /// captured, reports it; returns the exit status.
    func run() -> Int32 {
        while true {
            switch pass() {
            case .wait:
                // A live display redraws 12 times a second; a take waiting for its start or
                // watching a transport or a clock is looked at 10 times a second; a take with a
                // source missing or coming back, 4 times; a take that only runs, once a second
                // (each look costs the queue's properties and locks): its sources' connection
                // changes, the server's end, the writer's news and signals wake the loop at once.
                // The sources are looked at right at the take's end.
                let quick = showMeters ? 0.02 : trigger.phase == .armed || followsTransport || masterClock != nil ? 0.1
                    : sourceWatch?.needsQuickLooks ?? true ? 0.25 : 1
                // The wait for the take's end is timed from the clock after the look's own work
                // (a display's redraw may take a while): the look at the end must not come late.
                let now = sourceWatch?.nextDueFrame == nil && captureEnd == nil ? nil : Optional(QueueClock.frame(queue))
                let toLook = now.flatMap { sourceWatch?.secondsToDueLook(now: $0, rate: deviceRate) }
                let toCaptureEnd = now.flatMap { secondsToCaptureEnd(now: $0) }
                let pace = min(quick, toLook.map { $0 + 0.001 } ?? 1, toCaptureEnd.map { $0 + 0.001 } ?? 1)
                // The writer posts when the take's last frame is written (or it failed, or
                // finished), the signal handler on a signal: the look that ends the take comes
                // then, not at the next pace.
                mainLoopWake.wait(timeout: pace)
            case .again: continue
            case .stop: return finish()
            }
        }
    }

    /// One look at the take: its writer, the server, the sources, the clock, signals, triggers.
    /// The device's clock and the queue's start are read once for the whole look.
    func pass() -> Pass {
        let (takeStart, end, error) = writer.state.withLock { ($0.takeStart, $0.end, $0.error) }
        if takeStart != nil && discontinuitiesAtTakeStart == nil {
            discontinuitiesAtTakeStart = RecordCommand.discontinuities(queue)
        }
        let clock = QueueClock.now(queue)
        // The writer's error, the server gone, the take's end (a tape machine's next take).
        let look = TakeMachine.Look(writerError: error, serverAlive: clock.alive,
                                    framesWritten: writer.framesWritten, end: end, signal: interruption.signal)
        switch machine.look(look) {
        case .stop: return .stop
        case .nextTake(let end): return nextTake(afterEnd: end)
        case .carryOn: break
        }
        let origin = startedOrigin()
        if watchSources(takeStart: takeStart, end: end, origin: origin, now: clock.frame) { return .stop }
        followClock()
        if let signal = interruption.signal {
            machine.signalled(isInterrupt: signal == SIGINT)
            return .stop
        }
        // A queue the server never runs (seen on a loaded netjack2 master) must not leave jaq
        // waiting for ever: say so and stop, 10 s after the start frame.
        if startWatch.hasTimedOut(deviceNow: clock.frame, started: origin != nil) {
            writer.state.withLock { $0.error = $0.error ?? "the JACK server ran no cycles for jaq-record within 10 s of its start" }
            return .again
        }
        // Triggers are looked at once the queue runs: queue time 0 is its real start frame.
        if let origin { stepTrigger(origin: origin) }
        // After the trigger's step: a take it began has its end now, and the loop's next wait
        // is timed to the capture of its last frame.
        let (startNow, endNow) = takeStart != nil && end != nil ? (takeStart, end) : writer.state.withLock { ($0.takeStart, $0.end) }
        flushAtCaptureEnd(takeStart: startNow, end: endNow, origin: origin, now: clock.frame)
        showProgress(armed: takeStart == nil)
        return .wait
    }

    /// The tape machine's step from a take that reached its `end` to the next: new files, the
    /// closed take reported and handed to --on-take-end, the trigger armed again.
    func nextTake(afterEnd end: Int64) -> Pass {
        let next: [TakeFile]
        do {
            (next, takeNumber) = try command.createFiles(format: takeFormat, tracks: sources, rate: fileRate, firstTake: takeNumber + 1)
        } catch {
            machine.cannotGoOn("\(error)")
            return .stop
        }
        guard writer.nextTake(next) else {
            command.removeFiles(next)
            // A writer's error is said at the end; else it did not answer.
            machine.cannotGoOn(writer.state.withLock({ $0.error }) == nil ? "the writer did not close the take" : nil)
            return .stop
        }
        let closed = files.map(\.path)
        files = next
        // A take the writer could not close (the disk refused its last header): said at the
        // loop's top; its command does not run, and the next take's files go.
        guard writer.state.withLock({ $0.error }) == nil else { return .again }
        // The closed take's counts, as the writer left them when it closed it.
        let done = writer.state.withLock { $0.closedLosses } ?? TakeLosses()
        reportLosses(done)
        Log.info("\(machine.nextTakeArmed()): \(TimeSpec.clock(end, rate: fileRate)) (\(end) frames) in "
                 + closed.joined(separator: ", ") + (done.clippedSamples > 0 ? "; \(done.clippedSamples) samples clipped" : ""))
        hooks.run(closed)
        targets = files.map { $0.path }.joined(separator: ", ")
        trigger.rearm(transportChanges: session.transportChanges().count)
        armedAnnounced = false
        discontinuitiesAtTakeStart = nil
        networkGaps = []
        rollFrame = .max
        place = nil
        sourceWatch?.end = nil
        captureEnd = nil
        flushedAtCaptureEnd = false
        return .again
    }

    /// Looks at the sources up to the take's last frame (its tracks' last, latency compensation
    /// counted): a source leaving after it leaves a complete take. True if the take must end.
    func watchSources(takeStart: Int64?, end: Int64?, origin: Int64?, now: Int64) -> Bool {
        if let start = takeStart, let end, let origin {
            sourceWatch?.end = deviceFrame(afterTake: start, end: end, origin: origin)
        }
        guard let watched = sourceWatch?.poll(now: now), !watched.isEmpty else { return false }
        guard let lost = SourceWatch.report(watched, takeTime: takeTime, fileFrames: toQueueFrames, deviceRate: deviceRate) else { return false }
        // Every port goes when the whole server does: that is the server gone (asked again:
        // the server may have gone since the look began).
        machine.sourceLost(device: lost, serverAlive: QueueClock.serverIsAlive(queue))
        return true
    }

    /// The take's end is known and its last frame captured (the device clock two cycles past
    /// it, latency compensation counted, and past the time a network gap may still be found with
    /// `--clock`): the queue delivers its partly filled buffer now (AudioQueueFlush; capture goes
    /// on into the next), so the writer completes the take at once, not when that buffer fills
    /// (up to `bufferFrames` later: a third of a second that `jaq record -d` ran on). Done once per
    /// take; if a late cycle kept a frame back, the take completes as before, when the buffer fills.
    /// A take at another rate than the server's (`--rate`) is not flushed: its last frames are
    /// still in the resampler's filter, which a running queue keeps whole.
    func flushAtCaptureEnd(takeStart: Int64?, end: Int64?, origin: Int64?, now: Int64) {
        guard let start = takeStart, let end, let origin, fileRate == deviceRate else { return }
        let gapHold = masterClock != nil ? Int64(RecordCommand.networkGapSeconds * deviceRate) : 0
        let captured = deviceFrame(afterTake: start, end: end, origin: origin) + 2 * periodFrames + gapHold
        if captured != captureEnd {
            captureEnd = captured
            flushedAtCaptureEnd = false
        }
        guard !flushedAtCaptureEnd, now >= captured, writer.framesWritten < end else { return }
        flushedAtCaptureEnd = true
        AudioQueueFlush(queue)
    }

    /// Seconds until the take's last frame is surely captured (`flushAtCaptureEnd`), nil when
    /// that is unknown or done: the loop sleeps no longer.
    func secondsToCaptureEnd(now: Int64) -> Double? {
        guard let captureEnd, !flushedAtCaptureEnd else { return nil }
        return max(0, Double(captureEnd - now) / deviceRate)
    }

    /// The master clock's news (`--clock`): its gaps silence the network's tracks; a jump before
    /// the start moves the start with it (or ends the take when it cannot), a jump later is said.
    func followClock() {
        guard let masterClock else { return }
        for event in masterClock.reader.events() {
            switch event {
            case .gap(let frame, let frames): clockGap(at: frame, frames: frames)
            case .jump(let frame, let by):
                let device = masterClock.reader.deviceFrame(frame)
                guard startAt != nil, let start = takeStartDevice, device < start else {
                    Log.error("the clock on \(masterClock.reader.source) jumped by \(by) frames at \(takeTime(device)) (take frame \(takeFrame(device)), JACK frame \(device)): "
                              + "the master's frames moved against this server's (a cycle one server skipped, or a restart); "
                              + "the take goes on, on this server's frames")
                    continue
                }
                // The master's frames moved against ours (a cycle one server skipped): the
                // start follows the clock while the queue, already running, has not reached it.
                let moved = start - Int64(by)
                let origin = startedOrigin() ?? requestedOrigin
                if moved - prerollDevice >= origin, QueueClock.frame(queue) + Int64(0.1 * deviceRate) < moved - prerollDevice {
                    takeStartDevice = moved
                    if trigger.phase != .armed { beginTake(atDevice: moved, origin: origin) }
                    Log.info("the clock on \(masterClock.reader.source) jumped by \(by) frames before the start (JACK frame \(device)): "
                             + "master frame \(command.at!) is now JACK frame \(moved) here")
                } else {
                    writer.state.withLock { [at = command.at!] in
                        $0.error = $0.error ?? "the clock on \(masterClock.reader.source) jumped by \(by) frames before the start "
                            + "(JACK frame \(device)), further than the take can follow (its queue runs "
                            + "\(MasterClock.startMarginSeconds) s ahead of the start): master frame \(at) no longer names a known frame here"
                    }
                }
            }
        }
    }

    /// The trigger's step (queue time 0 at device frame `origin`): the take's start, or its
    /// stop on the transport's, or what the armed take waits for.
    func stepTrigger(origin: Int64) {
        switch trigger.step(observation(session: session, enterPressed: enterPressed)) {
        case .start(let frame)?:
            let startDevice: Int64
            switch trigger.start {
            case .now:
                Log.info("recording \(trackCount) from JACK frame \(origin) to \(targets)")
                startDevice = origin
            case .frame, .delay:
                if frame - prerollDevice < origin {
                    Log.info("frame \(frame - prerollDevice) has passed: the take starts at frame \(origin), when recording began")
                }
                startDevice = startAt != nil ? takeStartDevice ?? frame : frame
            case .transport:
                if frame < origin {
                    Log.info("the transport rolled at JACK frame \(frame), before recording began: the take starts at JACK frame \(origin)")
                }
                Log.info("transport rolling at JACK frame \(frame) (transport frame \(session.lastTransportRollPosition())): recording")
                rollFrame = max(frame, origin)
                startDevice = max(frame, origin)
            case .enter:
                Log.info("recording from JACK frame \(frame)")
                startDevice = startAt != nil ? takeStartDevice ?? frame : frame
            }
            beginTake(atDevice: startDevice, origin: origin,
                      transportRoll: trigger.start == .transport ? (frame, Int64(session.lastTransportRollPosition())) : nil)
            if let place {
                Log.info("time reference: \(place.description)" + (files.contains { $0.take.carriesBroadcastWave } ? ""
                    : " (not stored: \(takeFormat.name) files carry no Broadcast Wave chunk; wav and rf64 takes do)"))
            }
        case .stop(let frame)?:
            reportRelocations(origin: origin)
            // The take ends on the frame the transport stopped.
            Log.info("transport stopped at JACK frame \(frame)")
            machine.transportStopped()
            writer.state.withLock { [toQueueFrames] state in
                if let start = state.takeStart { state.end = max(0, toQueueFrames(frame - origin) - start) }
            }
            writer.poke()
        case nil:
            if trigger.start == .transport, trigger.phase == .running { reportRelocations(origin: origin) }
            // Armed: the relocations of a transport that moves before the roll are not the take's.
            if trigger.start == .transport, trigger.phase == .armed { _ = session.transportRelocations() }
            if trigger.start == .transport, trigger.phase == .armed, !armedAnnounced {
                armedAnnounced = true
                Log.info("waiting for JACK transport to roll (\(trackCount) armed)")
            }
        }
    }

    /// The live display on a terminal; a status line every 5 s for a pipe or a log.
    func showProgress(armed: Bool) {
        // Nothing is shown (--quiet, or no terminal and no status line due): no look at the queue.
        let statusDue = !stdoutIsTerminal && !quiet && !armed && Date().timeIntervalSince(lastStatus) >= 5
        guard display.enabled || statusDue else { return }
        var xruns: UInt32 = 0
        var size = UInt32(4)
        AudioQueueGetProperty(queue, kAudioQueueProperty_DiscontinuityCount, &xruns, &size)
        var meters = [AudioQueueLevelMeterState](repeating: .init(mAveragePower: -120, mPeakPower: -120), count: sources.count)
        if showMeters {
            var meterSize = UInt32(sources.count * MemoryLayout<AudioQueueLevelMeterState>.size)
            AudioQueueGetProperty(queue, kAudioQueueProperty_CurrentLevelMeterDB, &meters, &meterSize)
        }
        let dropped = writer.state.withLock { $0.losses.lostEvents.reduce(0) { $0 + $1.frames } }
        display.update(written: writer.framesWritten, meters: meters, bufferFill: writer.bufferFill,
                       xruns: Int(xruns), dropped: dropped, armed: armed)
        if statusDue {
            lastStatus = Date()
            print("recording \(TimeSpec.clock(writer.framesWritten, rate: fileRate)), buffer \(Int(writer.bufferFill * 100))%, xruns \(xruns), dropped \(dropped)")
            fflush(nil)  // a log line for a pipe, a file or journald: now, not at exit
        }
    }

    /// Stops the queue, writes everything captured up to now, says how the take ended, keeps or
    /// removes its files, runs --on-take-end; returns the exit status.
    func finish() -> Int32 {
        // The queue's ports go with it: the session is told of no more connection changes
        // (64 of them cost its notification thread 3 ms). Not when a signal or the server's end
        // stopped the take: a libjack call while the server goes away may never return, and
        // the take's last frames come first.
        if interruption.signal == nil, QueueClock.serverIsAlive(queue) { sourceWatch?.stopWatchingConnections() }
        recorder.running.store(false, ordering: .relaxed)
        writer.stopEnqueueing()
        AudioQueueStop(queue, true)
        if let masterClock {
            // Gaps found by now are silenced before the last frames are written.
            for event in masterClock.reader.events() { if case .gap(let frame, let frames) = event { clockGap(at: frame, frames: frames) } }
            if let open = masterClock.reader.openGap { clockGap(at: open.frame, frames: open.frames, open: true) }
        }
        writer.finishInput()
        writer.waitUntilFinished()
        let final = writer.state.withLock { $0 }
        let frames = writer.framesWritten
        reportLosses(final.losses)
        let complete = "the take is complete up to \(TimeSpec.clock(frames, rate: fileRate)) (\(frames) frames in every file)"
        let paths = files.map(\.path).joined(separator: ", ")
        let ending = machine.ending(writerError: final.error, frames: frames, takeBegan: final.takeStart != nil)
        switch ending.line {
        case .failed(let error): Log.error("\(error); \(complete)")
        case .deviceLost(let port):
            Log.error("\(port) went away: the JACK server lost its audio device (on a netjack2 slave: the master left); \(complete): \(paths)")
        case .serverGone: Log.error("the JACK server went away; \(complete): \(paths)")
        case .recorded(let reason):
            Log.info("\(reason): \(TimeSpec.clock(frames, rate: fileRate)) (\(frames) frames) in \(paths)"
                     + (final.losses.clippedSamples > 0 ? "; \(final.losses.clippedSamples) samples clipped" : ""))
        case .none: break
        }
        if ending.removesFiles {
            command.removeFiles(files)
            let takesBefore = final.takesClosed
            Log.info(takesBefore > 0 ? "\(takesBefore) take\(takesBefore == 1 ? "" : "s") recorded; the next had not started: its files are removed"
                                     : "nothing was recorded; no files kept")
        } else {
            hooks.run(files.map(\.path))
        }
        hooks.waitForAll()
        return machine.exitStatus
    }
}
