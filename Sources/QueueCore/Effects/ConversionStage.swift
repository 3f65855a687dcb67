/// One step of an output queue's conversion on the queue thread (never on the JACK thread):
/// planar Float32 in, planar Float32 appended to a `PlanarFIFO`, with a tail to drain at the
/// end of a stream. The time/pitch unit is one; the engine's Resampler keeps its own
/// ring-sized interface (OutputQueueEngine.writeToRing).
protocol ConversionStage: AnyObject {
    /// Takes `frames` frames of `input` (one pointer per channel) and appends what it produces to `output`.
    func process(_ input: UnsafePointer<UnsafePointer<Float>>, frames: Int, into output: PlanarFIFO)
    /// The end of a continuous stream (Flush, Stop(false)): appends what the stage still holds,
    /// then starts afresh.
    func drain(into output: PlanarFIFO)
    /// Forgets everything held (Reset, Stop(true)).
    func reset()
}

/// A growable planar Float32 first-in first-out buffer of a queue thread.
final class PlanarFIFO {
    let channelCount: Int
    private(set) var capacity: Int
    private var planes: [UnsafeMutablePointer<Float>]
    private let table: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private let viewTable: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private var start = 0
    /// Frames held.
    private(set) var count = 0

    init(channelCount: Int, capacity: Int = 4096) {
        self.channelCount = channelCount
        self.capacity = capacity
        planes = (0..<channelCount).map { _ in
            let plane = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
            plane.initialize(repeating: 0, count: capacity)
            return plane
        }
        table = .allocate(capacity: max(channelCount, 1))
        viewTable = .allocate(capacity: max(channelCount, 1))
    }

    deinit {
        planes.forEach { $0.deallocate() }
        table.deallocate()
        viewTable.deallocate()
    }

    /// Pointers to room for `frames` more frames after what is held (valid until the next call).
    func tail(reserving frames: Int) -> UnsafePointer<UnsafeMutablePointer<Float>> {
        if start + count + frames > capacity {
            // Move what is held to the front; grow if that is not enough.
            let needed = count + frames
            let newCapacity = needed > capacity ? max(needed, capacity * 2) : capacity
            for c in 0..<channelCount {
                if newCapacity != capacity {
                    let grown = UnsafeMutablePointer<Float>.allocate(capacity: newCapacity)
                    grown.initialize(repeating: 0, count: newCapacity)
                    grown.update(from: planes[c] + start, count: count)
                    planes[c].deallocate()
                    planes[c] = grown
                } else if start > 0 {
                    planes[c].update(from: planes[c] + start, count: count)
                }
            }
            capacity = newCapacity
            start = 0
        }
        for c in 0..<channelCount { table[c] = planes[c] + start + count }
        return UnsafePointer(table)
    }

    /// Counts `frames` frames written through `tail(reserving:)` as held.
    func commit(_ frames: Int) { count += frames }

    /// Appends `frames` frames of `source` starting at frame `offset`.
    func append(_ source: UnsafePointer<UnsafePointer<Float>>, offset: Int = 0, frames: Int) {
        guard frames > 0 else { return }
        let destination = tail(reserving: frames)
        for c in 0..<channelCount { destination[c].update(from: source[c] + offset, count: frames) }
        commit(frames)
    }

    /// Appends `frames` frames of silence.
    func appendSilence(_ frames: Int) {
        guard frames > 0 else { return }
        let destination = tail(reserving: frames)
        for c in 0..<channelCount { destination[c].update(repeating: 0, count: frames) }
        commit(frames)
    }

    /// The oldest frames held, one pointer per channel (valid until the next mutation).
    func head(offset: Int = 0) -> UnsafePointer<UnsafePointer<Float>> {
        for c in 0..<channelCount { table[c] = planes[c] + start + offset }
        return UnsafeRawPointer(table).assumingMemoryBound(to: UnsafePointer<Float>.self)
    }

    /// Mutable pointers to the oldest frames held (in-place processing; valid until the next mutation).
    func mutableHead() -> UnsafePointer<UnsafeMutablePointer<Float>> {
        for c in 0..<channelCount { table[c] = planes[c] + start }
        return UnsafePointer(table)
    }

    /// Drops the `frames` oldest frames.
    func consume(_ frames: Int) {
        let n = min(frames, count)
        start += n
        count -= n
        if count == 0 { start = 0 }
    }

    /// Drops the `frames` newest frames.
    func dropLast(_ frames: Int) { count -= min(frames, count) }

    func clear() {
        start = 0
        count = 0
    }

    /// `source`'s channel pointers advanced by `offset` frames (valid until the next call).
    func offsetView(_ source: UnsafePointer<UnsafePointer<Float>>, by offset: Int) -> UnsafePointer<UnsafePointer<Float>> {
        for c in 0..<channelCount { viewTable[c] = UnsafeMutablePointer(mutating: source[c] + offset) }
        return UnsafeRawPointer(viewTable).assumingMemoryBound(to: UnsafePointer<Float>.self)
    }
}
