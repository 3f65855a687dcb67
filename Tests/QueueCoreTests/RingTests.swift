import Testing
@testable import QueueCore

/// FrameRing and EventRing across their wrap-around: every layout of the indices against
/// the end of the storage, with chunk sizes that do not divide the capacity.
@Suite struct RingTests {
    /// Writes frames `first..<first+count` (channel c holds `frame * 10 + c`) into the ring.
    func write(_ ring: borrowing FrameRing, first: Int, count: Int, published: Bool = true, after held: Int = 0) {
        let planes = (0..<ring.channelCount).map { c in (0..<count).map { Float((first + $0) * 10 + c) } }
        let pointers = planes.map { plane -> UnsafePointer<Float> in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: max(count, 1))
            p.initialize(from: plane, count: count)
            return UnsafePointer(p)
        }
        defer { pointers.forEach { UnsafeMutablePointer(mutating: $0).deallocate() } }
        pointers.withUnsafeBufferPointer { sources in
            if published {
                ring.write(sources.baseAddress!, offset: 0, count: count)
            } else {
                ring.writeUnpublished(sources.baseAddress!, offset: 0, count: count, after: held)
            }
        }
    }

    /// Reads `count` frames; returns them per channel.
    func read(_ ring: borrowing FrameRing, count: Int) -> [[Float]] {
        let planes = (0..<ring.channelCount).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: max(count, 1)) }
        defer { planes.forEach { $0.deallocate() } }
        planes.withUnsafeBufferPointer { ring.read(into: $0.baseAddress!, offset: 0, count: count) }
        return planes.map { Array(UnsafeBufferPointer(start: $0, count: count)) }
    }

    func expected(first: Int, count: Int, channel: Int) -> [Float] {
        (0..<count).map { Float((first + $0) * 10 + channel) }
    }

    @Test func frameRingKeepsEveryFrameInOrderAcrossManyWraps() {
        let ring = FrameRing(channelCount: 2, minimumCapacity: 16)
        #expect(ring.capacity == 16)
        var written = 0
        var read = 0
        // Chunks of 1...15 frames: the indices take every position against the end of the planes.
        for round in 0..<200 {
            let writeCount = min(1 + (round * 7) % 15, ring.writableFrames())
            write(ring, first: written, count: writeCount)
            written += writeCount
            #expect(ring.readableFrames() == written - read)
            #expect(ring.writableFrames() == 16 - (written - read))
            let readCount = min(1 + (round * 5) % 13, ring.readableFrames())
            let got = self.read(ring, count: readCount)
            for c in 0..<2 { #expect(got[c] == expected(first: read, count: readCount, channel: c)) }
            read += readCount
        }
        #expect(written > 10 * 16, "the ring wrapped many times")
    }

    /// A ring of 64 channels of 1 s (17 MB) has its own mapping: zeros once touched, untouched
    /// or not, and frames kept across the wrap of every plane as in a heap ring.
    @Test func aMappedRingStartsSilentAndKeepsFramesAcrossItsWrap() {
        for touched in [true, false] {
            let ring = FrameRing(channelCount: 64, minimumCapacity: 48000, touched: touched)
            #expect(ring.mappedByteCount == 64 * 65536 * 4)
            if !touched { ring.touch() }
            #expect(UnsafeBufferPointer(start: ring.storage, count: 64 * ring.capacity).allSatisfy { $0 == 0 })
            var written = 0, read = 0
            for round in 0..<6 {
                let count = min(20000 + round * 3001, ring.writableFrames())
                write(ring, first: written, count: count)
                written += count
                let got = self.read(ring, count: count)
                for c in [0, 31, 63] { #expect(got[c] == expected(first: read, count: count, channel: c)) }
                read += count
            }
            #expect(written > ring.capacity, "the ring wrapped")
        }
        #expect(FrameRing(channelCount: 2, minimumCapacity: 1024).mappedByteCount == 0, "a small ring stays on the heap")
    }

    @Test func frameRingFullAndEmptyEdges() {
        let ring = FrameRing(channelCount: 1, minimumCapacity: 10)
        #expect(ring.capacity == 16, "rounded up to a power of two")
        #expect(ring.readableFrames() == 0)
        #expect(ring.writableFrames() == 16)
        // Off by 5 so the full ring spans the end of the storage.
        write(ring, first: 0, count: 5)
        _ = read(ring, count: 5)
        write(ring, first: 5, count: 16)
        #expect(ring.readableFrames() == 16)
        #expect(ring.writableFrames() == 0)
        #expect(read(ring, count: 16)[0] == expected(first: 5, count: 16, channel: 0))
        #expect(ring.readableFrames() == 0)
        #expect(ring.writableFrames() == 16)
    }

    @Test func frameRingHoldsUnpublishedFramesUntilPublished() {
        let ring = FrameRing(channelCount: 2, minimumCapacity: 16)
        write(ring, first: 0, count: 13)
        _ = read(ring, count: 13)
        // Two held chunks across the wrap, invisible to the reader until published.
        write(ring, first: 13, count: 4, published: false)
        write(ring, first: 17, count: 6, published: false, after: 4)
        #expect(ring.readableFrames() == 0)
        ring.publish(10)
        #expect(ring.readableFrames() == 10)
        let got = read(ring, count: 10)
        for c in 0..<2 { #expect(got[c] == expected(first: 13, count: 10, channel: c)) }
    }

    @Test func frameRingWritesSilenceAcrossTheWrap() {
        let ring = FrameRing(channelCount: 2, minimumCapacity: 16)
        write(ring, first: 1, count: 12)
        _ = read(ring, count: 12)
        ring.writeSilence(count: 9)
        write(ring, first: 100, count: 3)
        let got = read(ring, count: 12)
        for c in 0..<2 { #expect(got[c] == Array(repeating: 0, count: 9) + expected(first: 100, count: 3, channel: c)) }
    }

    @Test func eventRingRefusesWhenFullAndKeepsOrderAcrossWraps() {
        let ring = EventRing<Int>(minimumCapacity: 5)
        #expect(ring.capacity == 8)
        var pushed = 0
        var popped = 0
        for round in 0..<300 {
            // Batches of 1...7 (never dividing 8), up to full.
            for _ in 0..<(1 + round % 7) where ring.push(pushed) { pushed += 1 }
            if pushed - popped == 8 {
                let accepted = ring.push(-1)
                #expect(!accepted, "a full ring refuses")
            }
            for _ in 0..<(1 + (round * 3) % 5) {
                guard let peeked = ring.peek() else { break }
                #expect(peeked == popped)
                #expect(ring.pop() == popped)
                popped += 1
            }
        }
        while let value = ring.pop() {
            #expect(value == popped)
            popped += 1
        }
        #expect(popped == pushed)
        #expect(pushed > 50 * 8, "the ring wrapped many times")
        #expect(ring.peek() == nil)
    }

    @Test func eventRingRemoveAllEmptiesIt() {
        let ring = EventRing<Int>(minimumCapacity: 8)
        for i in 0..<6 { ring.push(i) }
        ring.removeAll()
        #expect(ring.pop() == nil)
        for i in 0..<8 {
            let accepted = ring.push(100 + i)
            #expect(accepted)
        }
        let overflow = ring.push(0)
        #expect(!overflow)
        for i in 0..<8 { #expect(ring.pop() == 100 + i) }
    }
}
