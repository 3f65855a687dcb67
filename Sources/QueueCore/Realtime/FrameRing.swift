import Glibc
import Synchronization

/// A single-producer/single-consumer ring of planar Float32 frames: one plane
/// per channel, `capacity` frames each, never reallocated.
///
/// Output queues: the queue thread produces decoded frames, the JACK process
/// thread consumes them. Input queues: the JACK process thread produces
/// captured frames, the queue thread consumes them. The indices count frames
/// since the ring was made and never wrap (Int is 64 bits).
public struct FrameRing: ~Copyable {
    public let channelCount: Int
    /// Frames per plane: a power of two.
    public let capacity: Int
    @usableFromInline let mask: Int
    /// `channelCount` planes of `capacity` floats, plane c at `storage + c * capacity`.
    public let storage: UnsafeMutablePointer<Float>
    /// Frames written so far; stored by the producer only.
    public let writeIndex = Atomic<Int>(0)
    /// Frames read so far; stored by the consumer only.
    public let readIndex = Atomic<Int>(0)

    /// Makes a ring of at least `minimumCapacity` frames (rounded up to a power of two).
    /// - Parameter touched: write the storage now, so that the realtime side never takes a
    ///   page fault on it; a big ring made untouched is `touch()`ed before it is used.
    public init(channelCount: Int, minimumCapacity: Int, touched: Bool = true) {
        var capacity = 16
        while capacity < minimumCapacity { capacity <<= 1 }
        self.channelCount = channelCount
        self.capacity = capacity
        self.mask = capacity - 1
        let bytes = channelCount * capacity * MemoryLayout<Float>.stride
        if bytes >= Self.mappedBytes, let mapping = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
           mapping != MAP_FAILED {
            // Small pages, not huge ones (MADV_HUGEPAGE): a huge page's first fault costs 0.1 ms
            // when the kernel has a free 2 MiB block at hand and up to 5 ms when it has not (a
            // virtual machine whose host backs memory on first touch, after other programs'
            // page cache), and a 64-track take's 16 MiB ring then took up to 37 ms to fault in,
            // against 5 ms every time in small pages (Docs/benchmarks.md).
            storage = mapping.bindMemory(to: Float.self, capacity: channelCount * capacity)
            mappedByteCount = bytes
        } else {
            storage = .allocate(capacity: channelCount * capacity)
            mappedByteCount = 0
        }
        if touched { touch() }
    }

    /// Rings of this many bytes or more are mapped on their own (zero pages, faulted in by
    /// one `madvise` call) rather than taken from the heap.
    static let mappedBytes = 2 << 20
    /// Bytes of the ring's own mapping; 0: its storage is from the heap.
    let mappedByteCount: Int

    /// Faults the storage's pages in, so that the realtime side never takes a page fault on
    /// them; a ring not yet used holds zeros after it. Not realtime: only while neither side
    /// uses the ring. A mapped ring is populated by the kernel in one call, no trap per page
    /// (16 MiB: 5 ms here, against 14–21 ms writing zeros page by page); a heap one, or a
    /// kernel without MADV_POPULATE_WRITE (Linux < 5.14), is written with zeros.
    public func touch() {
        if mappedByteCount > 0 && madvise(storage, mappedByteCount, MADV_POPULATE_WRITE) == 0 { return }
        storage.initialize(repeating: 0, count: channelCount * capacity)
    }

    deinit {
        if mappedByteCount > 0 { munmap(storage, mappedByteCount) } else { storage.deallocate() }
    }


    /// Producer: writes `count` frames of silence and publishes them.
    public func writeSilence(count: Int) {
        let start = writeIndex.load(ordering: .relaxed)
        let first = min(count, capacity - (start & mask))
        for c in 0..<channelCount {
            let plane = self.plane(c)
            (plane + (start & mask)).update(repeating: 0, count: first)
            if first < count { plane.update(repeating: 0, count: count - first) }
        }
        writeIndex.store(start + count, ordering: .releasing)
    }

    /// Consumer: copies `count` frames (the caller checked `readableFrames()`) into
    /// `channelCount` destination planes at `offset`, and releases them.
    public func read(into destinations: UnsafePointer<UnsafeMutablePointer<Float>>, offset: Int, count: Int) {
        let start = readIndex.load(ordering: .relaxed)
        let first = min(count, capacity - (start & mask))
        for c in 0..<channelCount {
            let plane = self.plane(c)
            let destination = destinations[c] + offset
            destination.update(from: plane + (start & mask), count: first)
            if first < count { (destination + first).update(from: plane, count: count - first) }
        }
        readIndex.store(start + count, ordering: .releasing)
    }
}

extension FrameRing {
    /// The plane of channel `channel`.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public func plane(_ channel: Int) -> UnsafeMutablePointer<Float> { storage + channel * capacity }

    /// Frames the consumer may read now.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public func readableFrames() -> Int {
        writeIndex.load(ordering: .acquiring) - readIndex.load(ordering: .relaxed)
    }

    /// Frames the producer may write now.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public func writableFrames() -> Int {
        capacity - (writeIndex.load(ordering: .relaxed) - readIndex.load(ordering: .acquiring))
    }

    /// Producer: copies `count` frames from `channelCount` source planes (offset `from`)
    /// into the ring and publishes them. The caller checked `writableFrames()`.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public func write(_ sources: UnsafePointer<UnsafePointer<Float>>, offset from: Int, count: Int) {
        writeUnpublished(sources, offset: from, count: count, after: 0)
        publish(count)
    }

    /// Producer: copies `count` frames after `held` frames already written past
    /// `writeIndex` but not published; publishes nothing. The caller checked that
    /// `writableFrames() - held` covers them.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public func writeUnpublished(_ sources: UnsafePointer<UnsafePointer<Float>>, offset from: Int, count: Int, after held: Int) {
        let start = writeIndex.load(ordering: .relaxed) + held
        let first = min(count, capacity - (start & mask))
        for c in 0..<channelCount {
            let plane = self.plane(c)
            let source = sources[c] + from
            UnsafeMutableRawPointer(plane + (start & mask)).copyMemory(from: source, byteCount: first * 4)
            if first < count {
                UnsafeMutableRawPointer(plane).copyMemory(from: source + first, byteCount: (count - first) * 4)
            }
        }
    }

    /// Producer: publishes `count` frames written with `writeUnpublished`.
    #if JAQ_CHECK_NOLOCKS
    @_noLocks
    #endif
    @inline(__always)
    public func publish(_ count: Int) {
        writeIndex.store(writeIndex.load(ordering: .relaxed) + count, ordering: .releasing)
    }
}
