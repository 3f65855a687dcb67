/// Planar Float32 scratch buffers of a queue thread (decoding, resampling):
/// `channelCount` planes of `capacity` frames, and a pointer table for offsets.
final class PlaneBuffers {
    let channelCount: Int
    let capacity: Int
    let planes: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// A second table for views at an offset (`view(at:)`).
    private let offsetTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    init(channelCount: Int, capacity: Int) {
        self.channelCount = channelCount
        self.capacity = capacity
        planes = .allocate(capacity: channelCount)
        offsetTable = .allocate(capacity: channelCount)
        for c in 0..<channelCount {
            planes[c] = .allocate(capacity: capacity)
            planes[c].initialize(repeating: 0, count: capacity)
        }
    }

    deinit {
        for c in 0..<channelCount { planes[c].deallocate() }
        planes.deallocate()
        offsetTable.deallocate()
    }

    /// The planes, read-only.
    var readable: UnsafePointer<UnsafePointer<Float>> {
        UnsafeRawPointer(planes).assumingMemoryBound(to: UnsafePointer<Float>.self)
    }

    /// The planes starting at frame `offset` (valid until the next call).
    func view(at offset: Int) -> UnsafeMutablePointer<UnsafeMutablePointer<Float>> {
        for c in 0..<channelCount { offsetTable[c] = planes[c] + offset }
        return offsetTable
    }

    /// Read-only planes starting at frame `offset` (valid until the next call).
    func readableView(at offset: Int) -> UnsafePointer<UnsafePointer<Float>> {
        UnsafeRawPointer(view(at: offset)).assumingMemoryBound(to: UnsafePointer<Float>.self)
    }

    func silence(count: Int) {
        for c in 0..<channelCount { planes[c].update(repeating: 0, count: count) }
    }
}
