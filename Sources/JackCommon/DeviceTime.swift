import Synchronization

/// Device time: JACK's 32-bit frame time extended to 64 bits, the one place the wrap is handled.
package enum DeviceTime {
    /// The reference the clients of the default server share: `JackDriver.shared`'s queues
    /// advance it, the control clients (`JackSession`, `NetClockReader`) extend their frames
    /// with it, so a frame means the same to both. `Int64.min` until the first cycle.
    /// (Unsafe to the compiler: a pointer; its one value is an atomic.)
    nonisolated(unsafe) package static let sharedReference: UnsafeMutablePointer<Atomic<Int64>> = makeReference()

    /// A new reference, not yet set (`Int64.min`). Allocated once, never freed: the process
    /// threads of every client that shares it read and advance it.
    package static func makeReference() -> UnsafeMutablePointer<Atomic<Int64>> {
        let pointer = UnsafeMutablePointer<Atomic<Int64>>.allocate(capacity: 1)
        pointer.initialize(to: Atomic(Int64.min))
        return pointer
    }
}

/// Extends a 32-bit JACK frame time to 64 bits: the value congruent to `frames`
/// (mod 2^32) nearest to `reference`. Clients of one process share the reference,
/// and times within ±2^31 frames (12 h at 48 kHz) of now map the same way in
/// every process.
@inlinable @inline(__always)
package func extendFrameTime(_ frames: UInt32, reference: Int64) -> Int64 {
    if reference == .min { return Int64(frames) }
    let delta = Int32(bitPattern: frames &- UInt32(truncatingIfNeeded: reference))
    return reference + Int64(delta)
}
