import QueueCore

/// The objects of one kind alive in this process, keyed by the opaque reference the C API
/// hands out (an `AudioQueueRef`, `AudioQueueProcessingTapRef`, `AudioConverterRef`). The table
/// holds the strong reference, so a reference that was disposed, or never was one, finds
/// nothing: the caller turns that into a result code instead of dereferencing it.
///
/// Thread safety: any thread; one lock, never taken on the realtime path.
struct LiveObjects<Object>: Sendable {
    private let live = Locked<[UnsafeMutableRawPointer: Object]>([:])

    func add(_ object: Object, as ref: OpaquePointer) {
        live.withLock { $0[UnsafeMutableRawPointer(ref)] = object }
    }

    func remove(_ ref: OpaquePointer) {
        _ = live.withLock { $0.removeValue(forKey: UnsafeMutableRawPointer(ref)) }
    }

    /// The object behind `ref`, nil for one that is not alive.
    func object(_ ref: OpaquePointer) -> Object? {
        live.withLock { $0[UnsafeMutableRawPointer(ref)] }
    }

    /// Forgets the objects `isGone` picks.
    func removeAll(where isGone: (Object) -> Bool) {
        live.withLock { $0 = $0.filter { !isGone($0.value) } }
    }
}
