import AudioToolbox
import FoundationEssentials
import Glibc
import Synchronization

/// One output file of a take: a track (or all tracks, interleaved).
struct TakeFile {
    let take: AudioTakeFile
    let channels: [Int]  // queue channels it holds, in order
    var path: String { take.path }
}

/// What a take lost and clipped: frames the queue lost (RecordUnderrun: where in the take, and
/// how many; a disk that cannot keep up shows there too, as the queue runs out of buffers),
/// samples at full scale.
struct TakeLosses {
    var lostEvents: [(takeFrame: Int64, frames: Int64)] = []
    var clippedSamples: Int64 = 0
}

/// A filled buffer of the input queue, held by the writer until every track has written it.
struct HeldBuffer {
    let buffer: AudioQueueBufferRef
    /// Queue time of the buffer's first frame.
    let queueFrame: Int64
    let frames: Int
    var end: Int64 { queueFrame + Int64(frames) }
}

extension Array {
    /// Removes and returns the first element, nil when empty. The writer's lists of buffers
    /// are Arrays whose capacity (every buffer the take has) is reserved when they are made:
    /// appending never reallocates, and taking the first moves at most that many plain values.
    mutating func takeFirst() -> Element? { isEmpty ? nil : removeFirst() }
}
