import Synchronization

// Direct capture (issue #29): on the plain path (native Float32 non-interleaved at the device
// rate, no tap, no encoder) the queue thread lends the realtime side its head buffer, and each
// cycle writes the ports straight into its planes: each sample is copied once, not port → ring
// → buffer. The realtime side gives the buffer back (publishes the frames it holds) when it is
// full, and before anything the plain path cannot do: a command (start, pause, stop, reclaim),
// a jump in frame time to judge, a start offset, a gap. See Docs/engine.md.

/// The head buffer lent to the realtime side. Written by the queue thread while
/// `lendState` is `LendCode.idle`; then by the realtime side until it stores `.returned`.
struct LentBuffer: BitwiseCopyable {
    /// Channel 0's plane; plane c at `planes + c * planeStride`.
    var planes: UnsafeMutablePointer<Float>?
    /// Floats between planes: the buffer's capacity in frames.
    var planeStride: Int
    var capacity: Int
    /// Frames the buffer holds (the realtime side adds to it).
    var filled: Int
    /// The ring's write position the queue thread drained to: the lend is taken only if the
    /// ring has had nothing since, so that no frame goes past one still in the ring.
    var ringPosition: Int
    /// `InputRealtimeState.gapsRecorded` when the queue thread found no gap left to handle.
    var gapsSeen: Int
}

/// `InputRealtimeState.lendState` values.
enum LendCode {
    /// The queue thread owns the head buffer.
    @_transparent static var idle: Int { 0 }
    /// Lent: the realtime side may write into it.
    @_transparent static var lent: Int { 1 }
    /// Given back: `lent.filled` is final; the queue thread takes it and stores `.idle`.
    @_transparent static var returned: Int { 2 }
}

/// Gives a lent buffer back (if one is lent); true if it did. Realtime.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func returnLentBuffer(_ s: UnsafeMutablePointer<InputRealtimeState>) -> Bool {
    guard s.pointee.lendState.load(ordering: .acquiring) == LendCode.lent else { return false }
    s.pointee.lendAccepted = false
    s.pointee.lendState.store(LendCode.returned, ordering: .releasing)
    return true
}

/// Writes up to `count` frames of the ports (from `offset`) straight into the lent buffer,
/// if one is lent and may be used; returns the frames written. Gives it back when full (or
/// at once if the ring or the gaps moved since it was lent), and then sets `returned`.
/// Realtime: no locks, no allocation.
#if JAQ_CHECK_NOLOCKS
@_noLocks
#endif
@inline(__always)
func captureIntoLentBuffer(
    _ s: UnsafeMutablePointer<InputRealtimeState>, ports: UnsafePointer<UnsafeMutablePointer<Float>>,
    offset: Int, count: Int, returned: inout Bool
) -> Int {
    guard s.pointee.lendState.load(ordering: .acquiring) == LendCode.lent else { return 0 }
    if !s.pointee.lendAccepted {
        let lent = s.pointee.lent
        guard s.pointee.ring.writeIndex.load(ordering: .relaxed) == lent.ringPosition,
              s.pointee.gapsRecorded.load(ordering: .relaxed) == lent.gapsSeen,
              s.pointee.pendingGap.count == 0, s.pointee.heldFrames == 0 else {
            returned = returnLentBuffer(s)
            return 0
        }
        s.pointee.lendAccepted = true
    }
    let lent = s.pointee.lent
    guard let planes = lent.planes else { return 0 }
    let written = min(count, lent.capacity - lent.filled)
    let bytes = written &* MemoryLayout<Float>.size
    var destination = planes + lent.filled
    for c in 0..<s.pointee.channelCount {
        let source: UnsafeMutablePointer<Float> = ports[c] + offset
        UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: bytes)
        destination += lent.planeStride
    }
    s.pointee.lent.filled = lent.filled + written
    if lent.filled + written == lent.capacity { returned = returnLentBuffer(s) }
    return written
}
