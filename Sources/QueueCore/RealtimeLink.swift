import Synchronization

/// How the direction-independent engine reaches one direction's realtime state: the
/// publication, the command ring, the ring's fill and the meters. Each engine's context
/// pointer lasts as long as the engine; a ring swap replaces the state behind it.
///
/// Thread safety: any non-realtime thread; what it touches is atomics and SPSC rings whose
/// producer side the engine's lock serializes.
protocol RealtimeLink: Sendable {
    /// The realtime side's published time, counts and mode.
    func withPublication<T>(_ body: (borrowing RealtimePublication) -> T) -> T
    /// Pushes a command to the realtime side (lock held); false if the command ring is full.
    func push(_ command: RealtimeCommand) -> Bool
    /// Applies queued commands on this thread when no cycle can run (lock not held).
    func applyCommandsDirectly()
    /// Frames in the ring: decoded and not yet played (output), or captured and not yet
    /// delivered (input).
    var bufferedFrames: Int { get }
    /// The level meters the realtime side fills.
    func withMeters<T>(_ body: (borrowing MeterBank) -> T) -> T
    /// Frees the realtime state and the context, once the device no longer calls the entry.
    func release()
}

/// Frees a realtime context and the state it points at (`state`, read from the context).
func releaseRealtime<Context: ~Copyable, State: ~Copyable>(_ context: UnsafeMutablePointer<Context>,
                                                            state: UnsafeMutablePointer<State>) {
    state.deinitialize(count: 1)
    state.deallocate()
    context.deinitialize(count: 1)
    context.deallocate()
}

/// Requests control threads file for the queue thread, and how far it has carried them out:
/// Reset (both directions), Prime (output), Flush (input). Guarded by the engine's lock.
struct QueueTickets {
    private(set) var requested = 0
    private(set) var done = 0

    /// Files a request; returns its ticket.
    mutating func request() -> Int {
        requested += 1
        return requested
    }

    /// The newest request not carried out yet, if any.
    var pending: Int? { requested > done ? requested : nil }

    /// Every request up to `ticket` has been carried out.
    mutating func complete(_ ticket: Int) { done = max(done, ticket) }

    func isDone(_ ticket: Int) -> Bool { done >= ticket }

    /// No request is waiting.
    var isIdle: Bool { requested == done }
}

/// Applies queued commands to an input queue's realtime state when no cycle can run
/// (`RealtimeLink.applyCommandsDirectly`): a control thread, never a JACK one. It allocates
/// (the zero-frame cycle's port list, the commands set aside), so it lives outside Realtime/.
func applyInputCommandsDirectly(_ s: UnsafeMutablePointer<InputRealtimeState>) {
    let none = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)
    defer { none.deallocate() }
    let frame = s.pointee.publication.time.read()?.cycleFrame ?? 0
    // A zero-frame cycle applies commands; a start stays armed until a real cycle.
    var pendingStart: RealtimeCommand?
    var others: [RealtimeCommand] = []
    while let command = s.pointee.commands.pop() {
        if command.kind == .start { pendingStart = command } else { others.append(command); pendingStart = nil }
    }
    for command in others { _ = s.pointee.commands.push(command) }
    _ = captureInputCycle(s, frameTime: frame, frameCount: 0, ports: none)
    if let pendingStart { _ = s.pointee.commands.push(pendingStart) }
}
