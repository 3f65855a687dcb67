import Testing
@testable import QueueCore

/// The queue lifecycle without threads: every run state × every event, for both directions,
/// against tables written from the Audio Queue Services reference and the engine's behaviour.
@Suite struct QueueLifecycleTests {
    typealias Action = LifecycleAction

    /// What an event does from one run state: the new run state and the actions, or the error.
    enum Outcome: Equatable, CustomStringConvertible {
        case to(QueueRunState, [Action])
        case fails(QueueError)
        var description: String {
            switch self {
            case .to(let state, let actions): "\(state) \(actions)"
            case .fails(let error): "fails \(error)"
            }
        }
    }

    static let runStates: [QueueRunState] = [.stopped, .starting, .running, .paused, .stopping]
    static let directions: [DeviceDirection] = [.output, .input]

    /// The events the API and the engine's threads deliver (one of each shape).
    static let start = LifecycleEvent.start(deviceRate: 48000, converterRate: 48000, realtimePaused: false)
    static let resume = LifecycleEvent.start(deviceRate: 48000, converterRate: 48000, realtimePaused: true)
    static let startAtWrongRate = LifecycleEvent.start(deviceRate: 44100, converterRate: 48000, realtimePaused: false)
    static let wrongRate = QueueError.cannotStart("the JACK server runs at 44100 Hz, the queue was made for 48000 Hz")
    static let apiEvents: [LifecycleEvent] = [
        start, resume, startAtWrongRate, .pause,
        .stop(immediate: true, hasQueuedData: false), .stop(immediate: true, hasQueuedData: true),
        .stop(immediate: false, hasQueuedData: false), .stop(immediate: false, hasQueuedData: true),
        .reset, .flush, .prime, .use, .nearestStartTime(primed: false), .nearestStartTime(primed: true),
        .reconfigure("rename a stopped queue"),
    ]
    static let allEvents: [LifecycleEvent] = apiEvents + [
        .enqueue, .dispose(immediate: true), .dispose(immediate: false), .disposeNow, .tornDown, .halted,
        .resetFinished, .queueDiscarded, .resetDeliveryPosted, .resetDeliveryRan, .realtimeStarted,
        .realtimeFinished, .realtimeObserved, .captureDelivered, .deviceGone, .invalidationDelivered,
    ]

    /// A lifecycle in `state`, reached the way a queue gets there.
    static func lifecycle(_ direction: DeviceDirection, in state: QueueRunState) -> QueueLifecycle {
        var life = QueueLifecycle(direction: direction)
        let path: [LifecycleEvent] = switch state {
        case .stopped: []
        case .starting: [start]
        case .running: [start, .realtimeStarted]
        case .paused: [start, .realtimeStarted, .pause]
        case .stopping: [start, .realtimeStarted, .stop(immediate: false, hasQueuedData: false)]
        }
        for event in path { _ = try! life.handle(event) }
        #expect(life.state == state)
        return life
    }

    static func outcome(of event: LifecycleEvent, on life: inout QueueLifecycle) -> Outcome {
        do {
            let actions = try life.handle(event)
            return .to(life.state, actions)
        } catch {
            return .fails(error)
        }
    }

    /// Checks one table row: `expected[i]` is the outcome from `runStates[i]`.
    func check(_ event: LifecycleEvent, _ direction: DeviceDirection, _ expected: [Outcome],
               sourceLocation: SourceLocation = #_sourceLocation) {
        for (state, want) in zip(Self.runStates, expected) {
            var life = Self.lifecycle(direction, in: state)
            let before = life
            let got = Self.outcome(of: event, on: &life)
            #expect(got == want, "\(direction) \(state) + \(event)", sourceLocation: sourceLocation)
            if case .fails = got { #expect(life == before, "an error leaves the state alone", sourceLocation: sourceLocation) }
        }
    }

    func check(_ event: LifecycleEvent, _ expected: [Outcome], sourceLocation: SourceLocation = #_sourceLocation) {
        for direction in Self.directions { check(event, direction, expected, sourceLocation: sourceLocation) }
    }

    // Columns: stopped, starting, running, paused, stopping.

    @Test func start() {
        let go: [Action] = [.wakeQueueThread, .prepareToStart, .sendStart]
        check(Self.start, [.to(.starting, [.prepareTimeline] + go), .to(.starting, []), .to(.running, []),
                           .to(.starting, go), .to(.stopping, [])])
        // An output queue paused while playing out resumes, and still stops once played out.
        check(Self.resume, [.to(.starting, [.prepareTimeline] + go), .to(.starting, []), .to(.running, []),
                            .to(.starting, go), .to(.stopping, go)])
        check(Self.startAtWrongRate, Array(repeating: .fails(Self.wrongRate), count: 5))
    }

    @Test func pause() {
        let row: (Outcome) -> [Outcome] = { stopping in
            [.to(.stopped, []), .to(.paused, [.sendPause]), .to(.paused, [.sendPause]), .to(.paused, []), stopping]
        }
        check(.pause, .output, row(.to(.stopping, [.sendPause])))
        check(.pause, .input, row(.to(.stopping, [])))
    }

    @Test func stopImmediateHaltsFromEveryState() {
        for data in [false, true] {
            // The run state changes once the realtime side has stopped (`halted`).
            check(.stop(immediate: true, hasQueuedData: data), [.to(.stopped, [.halt]), .to(.starting, [.halt]),
                                                                .to(.running, [.halt]), .to(.paused, [.halt]),
                                                                .to(.stopping, [.halt])])
        }
    }

    @Test func stopAsynchronousPlaysOutOrDeliversWhatWasCaptured() {
        let playOut: [Outcome] = [.to(.stopping, [.beginPlayOut]), .to(.stopping, [.beginPlayOut]),
                                  .to(.stopping, [.beginPlayOut]), .to(.stopping, [])]
        // Output, stopped: with nothing queued a Stop(true); with data, play it once started.
        check(.stop(immediate: false, hasQueuedData: false), .output, [.to(.stopped, [.halt])] + playOut)
        check(.stop(immediate: false, hasQueuedData: true), .output, [.to(.stopped, [.beginPlayOut])] + playOut)
        // Input: capture ends now; a second Stop(false) stops at once.
        for data in [false, true] {
            check(.stop(immediate: false, hasQueuedData: data), .input,
                  [.to(.stopped, []), .to(.stopping, [.beginCaptureDrain]), .to(.stopping, [.beginCaptureDrain]),
                   .to(.stopping, [.beginCaptureDrain]), .to(.stopping, [.halt])])
        }
    }

    @Test func haltedAndInvalidationStopAndReportIsRunningOnlyIfItWasReported() {
        for event in [LifecycleEvent.halted, .invalidationDelivered] {
            check(event, [.to(.stopped, []), .to(.stopped, []), .to(.stopped, [.notifyIsRunning(false)]),
                          .to(.stopped, [.notifyIsRunning(false)]), .to(.stopped, [.notifyIsRunning(false)])])
        }
    }

    @Test func callsThatNeedOnlyAUsableQueue() {
        check(.reset, Self.runStates.map { .to($0, [.resetOnQueueThread]) })
        for event in [LifecycleEvent.flush, .prime, .use, .nearestStartTime(primed: true), .resetFinished,
                      .queueDiscarded, .resetDeliveryPosted, .resetDeliveryRan, .realtimeObserved] {
            check(event, Self.runStates.map { .to($0, []) })
        }
        let notPrimed = QueueError.invalidRunState("the queue is neither running nor primed")
        check(.nearestStartTime(primed: false), [.fails(notPrimed)] + Self.runStates.dropFirst().map { .to($0, []) })
        let rename = QueueError.invalidRunState("rename a stopped queue")
        check(.reconfigure("rename a stopped queue"), [.to(.stopped, [])] + Array(repeating: .fails(rename), count: 4))
    }

    @Test func enqueue() {
        check(.enqueue, .output, Self.runStates.dropLast().map { .to($0, []) } + [.fails(.enqueueDuringReset)])
        // An input queue being stopped with Stop(false) still takes buffers for what it captured.
        check(.enqueue, .input, Self.runStates.map { .to($0, []) })
    }

    @Test func dispose() {
        check(.dispose(immediate: true), Self.runStates.map { .to($0, [.tearDown]) })
        check(.disposeNow, Self.runStates.map { .to($0, [.tearDown]) })
        check(.dispose(immediate: false), .output,
              [.to(.stopped, [.tearDown]), .to(.stopping, [.beginPlayOut, .wakeQueueThread]),
               .to(.stopping, [.beginPlayOut, .wakeQueueThread]), .to(.paused, [.tearDown]),
               .to(.stopping, [.wakeQueueThread])])
        check(.dispose(immediate: false), .input,
              [.to(.stopped, [.tearDown]), .to(.stopping, [.beginCaptureDrain, .wakeQueueThread]),
               .to(.stopping, [.beginCaptureDrain, .wakeQueueThread]), .to(.paused, [.tearDown]),
               .to(.stopping, [.wakeQueueThread])])
        check(.tornDown, Self.runStates.map { _ in .to(.stopped, []) })
    }

    @Test func realtimeNews() {
        check(.realtimeStarted, [.to(.stopped, []), .to(.running, [.notifyIsRunning(true)]), .to(.running, []),
                                 .to(.paused, []), .to(.stopping, [])])
        check(.realtimeFinished, Self.runStates.dropLast().map { .to($0, []) }
              + [.to(.stopped, [.endTimeline, .notifyIsRunning(false)])])
        check(.captureDelivered, .input, Self.runStates.dropLast().map { .to($0, []) }
              + [.to(.stopped, [.resetOnQueueThread, .notifyIsRunning(false)])])
        check(.captureDelivered, .output, Self.runStates.map { .to($0, []) })
        check(.deviceGone, Self.runStates.map { .to($0, [.deliverInvalidation]) })
    }

    /// Disposed, disposing and invalidated queues refuse every call with Apple's codes, from every run state.
    @Test func disposedDisposingAndInvalidatedQueuesRefuseCalls() {
        let disposed = QueueError.invalidParameter("the queue was disposed of")
        for direction in Self.directions {
            for state in Self.runStates {
                var gone = Self.lifecycle(direction, in: state)
                _ = try! gone.handle(.disposeNow)
                var invalid = Self.lifecycle(direction, in: state)
                #expect(try! invalid.handle(.deviceGone) == [.deliverInvalidation])
                #expect(try! invalid.handle(.deviceGone) == [], "reported once")
                for event in Self.apiEvents {
                    var a = gone, b = invalid
                    #expect(Self.outcome(of: event, on: &a) == .fails(disposed), "\(direction) \(state) \(event)")
                    #expect(Self.outcome(of: event, on: &b) == .fails(.queueInvalidated), "\(direction) \(state) \(event)")
                }
                var a = gone, b = invalid
                #expect(Self.outcome(of: .enqueue, on: &a) == .fails(disposed))
                #expect(Self.outcome(of: .enqueue, on: &b) == .fails(.queueInvalidated))
                #expect(Self.outcome(of: .dispose(immediate: false), on: &a) == .to(state, []), "disposed once")
                #expect(Self.outcome(of: .dispose(immediate: true), on: &a) == .to(state, []), "disposed once")
                // An invalidated queue has nothing to play out: Dispose(false) disposes of it now.
                #expect(Self.outcome(of: .dispose(immediate: false), on: &b) == .to(state, [.tearDown]))
            }
        }
    }

    @Test func aPendingDisposalRefusesCallsThenDisposesOnceStopped() {
        for direction in Self.directions {
            for state in [QueueRunState.starting, .running, .stopping] {
                var life = Self.lifecycle(direction, in: state)
                _ = try! life.handle(.dispose(immediate: false))
                #expect(life.disposalPending && life.state == .stopping)
                for event in Self.apiEvents {
                    var copy = life
                    #expect(Self.outcome(of: event, on: &copy) == .fails(.disposalPending), "\(direction) \(state) \(event)")
                }
                var copy = life
                #expect(Self.outcome(of: .enqueue, on: &copy) == .fails(.enqueueDuringReset))
                #expect(Self.outcome(of: .dispose(immediate: false), on: &copy) == .to(.stopping, []))
                #expect(try! life.handle(.realtimeObserved) == [], "not before it has stopped")
                let end: LifecycleEvent = direction == .output ? .realtimeFinished : .captureDelivered
                _ = try! life.handle(end)
                #expect(life.state == .stopped)
                #expect(try! life.handle(.realtimeObserved) == [.disposeNow])
                #expect(try! life.handle(.disposeNow) == [.tearDown])
                #expect(!life.disposalPending && life.disposed)
                #expect(try! life.handle(.realtimeObserved) == [])
                _ = try! life.handle(.tornDown)
                #expect(life.isShutDown && !life.isRunning)
            }
        }
    }

    @Test func anOutputStopBeforeStartPlaysOutThenStops() throws {
        var life = QueueLifecycle(direction: .output)
        #expect(try life.handle(.stop(immediate: false, hasQueuedData: true)) == [.beginPlayOut])
        #expect(life.playOutPending && life.state == .stopped)
        #expect(try life.handle(Self.start) == [.prepareTimeline, .wakeQueueThread, .prepareToStart, .sendStart])
        #expect(life.state == .stopping)
        #expect(try life.handle(.realtimeStarted) == [.notifyIsRunning(true)])
        #expect(life.state == .stopping)
        #expect(try life.handle(.realtimeFinished) == [.endTimeline, .notifyIsRunning(false)])
        #expect(life.state == .stopped && !life.playOutPending && !life.isRunning)
    }

    @Test func anOutputPausedWhilePlayingOutResumesAndStillStops() throws {
        var life = Self.lifecycle(.output, in: .stopping)
        #expect(try life.handle(.pause) == [.sendPause])
        #expect(try life.handle(Self.resume) == [.wakeQueueThread, .prepareToStart, .sendStart])
        #expect(life.state == .stopping && life.playOutPending)
        // A reset drops what was to be played out.
        _ = try life.handle(.queueDiscarded)
        #expect(!life.playOutPending)
    }

    @Test func enqueueIsRefusedWhileAResetOrItsCallbacksRun() throws {
        for direction in Self.directions {
            var life = Self.lifecycle(direction, in: .running)
            #expect(try life.handle(.reset) == [.resetOnQueueThread])
            #expect(throws: QueueError.enqueueDuringReset) { try life.handle(.enqueue) }
            _ = try life.handle(.resetDeliveryPosted)
            _ = try life.handle(.resetFinished)
            #expect(throws: QueueError.enqueueDuringReset) { try life.handle(.enqueue) }
            _ = try life.handle(.resetDeliveryRan)
            #expect(try life.handle(.enqueue) == [])
            // Stop(true): refused from the halt until the buffers are back.
            #expect(try life.handle(.stop(immediate: true, hasQueuedData: false)) == [.halt])
            #expect(throws: QueueError.enqueueDuringReset) { try life.handle(.enqueue) }
            #expect(try life.handle(.halted) == [.notifyIsRunning(false)])
            _ = try life.handle(.resetFinished)
            #expect(try life.handle(.enqueue) == [])
            #expect(life.state == .stopped && !life.isRunning)
        }
    }

    @Test func aStartSeenOnlyAfterAStopIsNotReported() throws {
        var life = Self.lifecycle(.output, in: .starting)
        _ = try life.handle(.stop(immediate: true, hasQueuedData: false))
        #expect(try life.handle(.halted) == [])
        #expect(try life.handle(.realtimeStarted) == [])
        #expect(!life.isRunning)
    }

    @Test func anInputStopDeliversThenResets() throws {
        var life = Self.lifecycle(.input, in: .running)
        #expect(try life.handle(.stop(immediate: false, hasQueuedData: false)) == [.beginCaptureDrain])
        #expect(life.isDrainingCapture)
        #expect(try life.handle(.enqueue) == [])
        #expect(try life.handle(.captureDelivered) == [.resetOnQueueThread, .notifyIsRunning(false)])
        #expect(!life.isDrainingCapture && life.state == .stopped)
        #expect(throws: QueueError.enqueueDuringReset) { try life.handle(.enqueue) }
        _ = try life.handle(.resetFinished)
        #expect(try life.handle(.captureDelivered) == [], "once")
    }

    /// Every lifecycle reachable from a new queue (resets nested at most twice), every event:
    /// an error changes nothing, IsRunning listeners hear exactly the changes of IsRunning, and
    /// a queue that reports IsRunning is not stopped.
    @Test func everyReachableStateKeepsTheInvariants() {
        for direction in Self.directions {
            let seen = Self.reachable(direction)
            for life in seen {
                for event in Self.allEvents {
                    var next = life
                    guard let actions = try? next.handle(event) else {
                        #expect(next == life, "\(event) failed and changed \(life)")
                        continue
                    }
                    let notified = actions.compactMap { action -> Bool? in
                        if case .notifyIsRunning(let value) = action { return value } else { return nil }
                    }
                    // Disposal ends IsRunning unreported: no listener runs after Dispose.
                    let reported = life.isRunning == next.isRunning || event == .tornDown ? [] : [next.isRunning]
                    #expect(notified == reported, "\(life) + \(event)")
                    #expect(!next.isRunning || next.state != .stopped, "\(life) + \(event)")
                    if life.disposed { #expect(notified == [] || notified == [false], "\(life) + \(event)") }
                }
            }
            #expect(seen.count > 100, "explored \(seen.count) states")
        }
    }

    /// Every lifecycle reachable from a new queue of `direction`, resets nested at most twice.
    static func reachable(_ direction: DeviceDirection) -> Set<QueueLifecycle> {
        var seen: Set<QueueLifecycle> = [QueueLifecycle(direction: direction)]
        var frontier = Array(seen)
        while let life = frontier.popLast() {
            for event in allEvents {
                var next = life
                guard (try? next.handle(event)) != nil, next.resetDepth <= 2, next.resetDeliveriesPending <= 1,
                      !seen.contains(next) else { continue }
                seen.insert(next)
                frontier.append(next)
            }
        }
        return seen
    }
    /// Every run phase with every value of what it carries.
    static let runPhases: [RunPhase] = [false, true].flatMap { flag -> [RunPhase] in
        [.stopped(playOutArmed: flag), .starting(isRunning: flag), .running(isRunning: flag), .paused(isRunning: flag)]
            + [StopEnding.playingOut, .discarded, .deliveringCapture].map { .stopping($0, isRunning: flag) }
    }
    static let disposalPhases: [DisposalPhase] = [.none, .pending, .disposed, .tornDown]

    /// What the flags the lifecycle was once made of could say and a queue never is: IsRunning
    /// while stopped, disposed and still disposal-pending, exiting without being disposed of, a
    /// play-out pending beside a capture drain. No value of the parts says any of it.
    @Test func noValueOfThePartsIsAnIllegalCombination() {
        var count = 0
        for direction in Self.directions {
            for run in Self.runPhases {
                for disposal in Self.disposalPhases {
                    for invalidated in [false, true] {
                        let life = QueueLifecycle(direction: direction, run: run, disposal: disposal,
                                                  invalidated: invalidated, resets: ResetCounts())
                        #expect(!(life.isRunning && life.state == .stopped), "\(life)")
                        #expect(!(life.disposed && life.disposalPending), "\(life)")
                        #expect(!life.exiting || life.disposed, "\(life)")
                        #expect(!(life.playOutPending && life.isDrainingCapture), "\(life)")
                        #expect(!life.isDrainingCapture || life.state == .stopping, "\(life)")
                        count += 1
                    }
                }
            }
        }
        #expect(count == 2 * 14 * 4 * 2)
    }

    /// What depends on the direction is only ever reached in its direction: a play-out (armed or
    /// in progress, or discarded by a reset) only by output queues, a capture drain only by input ones.
    @Test func everyReachableStateKeepsItsDirection() {
        for direction in Self.directions {
            let seen = Self.reachable(direction)
            for life in seen {
                switch (direction, life.run) {
                case (.input, .stopped(playOutArmed: true)), (.input, .stopping(.playingOut, _)),
                     (.input, .stopping(.discarded, _)), (.output, .stopping(.deliveringCapture, _)):
                    Issue.record("\(direction) reached \(life.run)")
                default: break
                }
            }
            // Each direction reaches every run phase its own Stop(false) has.
            let phases = Set(seen.map(\.run))
            let own: [RunPhase] = direction == .output
                ? [.stopped(playOutArmed: true), .stopping(.playingOut, isRunning: true), .stopping(.discarded, isRunning: true)]
                : [.stopping(.deliveringCapture, isRunning: true), .stopping(.deliveringCapture, isRunning: false)]
            for phase in own { #expect(phases.contains(phase), "\(direction) never reaches \(phase)") }
        }
    }
}
