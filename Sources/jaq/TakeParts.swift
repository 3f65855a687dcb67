import AudioToolbox
import Foundation
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

/// A first-in first-out list of fixed capacity that never reallocates.
struct FixedQueue<Element> {
    private var slots: [Element?]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) { slots = Array(repeating: nil, count: max(capacity, 1)) }

    var capacity: Int { slots.count }
    var isEmpty: Bool { count == 0 }
    var first: Element? { count > 0 ? slots[head] : nil }
    var last: Element? { count > 0 ? slots[(head + count - 1) % slots.count] : nil }

    /// The i-th element from the front.
    subscript(i: Int) -> Element { slots[(head + i) % slots.count]! }

    /// False (and nothing added) when full.
    mutating func append(_ element: Element) -> Bool {
        guard count < slots.count else { return false }
        slots[(head + count) % slots.count] = element
        count += 1
        return true
    }

    mutating func removeFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = slots[head]
        slots[head] = nil
        head = (head + 1) % slots.count
        count -= 1
        return element
    }
}
