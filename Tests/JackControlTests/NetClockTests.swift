import Testing
@testable import JackControl

/// The clock a netjack2 master sends (`jaq clock`) and its reader's kernel, without a server:
/// the encoding names every frame exactly, a cycle names its whole frame, and the reader turns
/// refilled cycles into gaps with their frames and a clock that moved into one jump.
@Suite struct NetClockTests {
    /// `count` clock samples of master frames `first`, `first + 1`, ….
    func clock(from first: UInt32, count: Int = 256) -> [Float] {
        (0..<count).map { NetClockCode.sample(first &+ UInt32($0)) }
    }

    @Test(arguments: [0, 1, 15, 16, (1 << 23) - 1, 1 << 23, 123_456_789, UInt32.max - 3, UInt32.max] as [UInt32])
    func everySampleIsExactAndQuiet(frame: UInt32) {
        let sample = NetClockCode.sample(frame)
        #expect(sample >= 0 && sample < 1.0 / 16, "below -24 dBFS")
        #expect(NetClockCode.code(of: sample) == NetClockCode.code(frame), "the code survives a Float32")
        #expect(NetClockCode.code(frame) >> 1 == frame & 0x7F_FFFF)
    }

    @Test(arguments: [0, 1_000, (1 << 23) - 100, (1 << 24) - 7, 3_000_000_000, UInt32.max - 200] as [UInt32])
    func aCycleNamesItsWholeFrame(start: UInt32) {
        let samples = clock(from: start)
        #expect(samples.withUnsafeBufferPointer { NetClockCode.firstFrame($0.baseAddress!, count: 256) } == start)
        // The shortest cycle that holds a whole 16-frame word, wherever it starts.
        for offset in 0..<16 {
            let short = clock(from: start &+ UInt32(offset), count: 31)
            #expect(short.withUnsafeBufferPointer { NetClockCode.firstFrame($0.baseAddress!, count: 31) } == start &+ UInt32(offset))
        }
    }

    @Test func whatIsNoClockIsNotTakenForOne() {
        let silence = [Float](repeating: 0, count: 256)
        #expect(silence.withUnsafeBufferPointer { NetClockCode.firstFrame($0.baseAddress!, count: 256) } == nil)
        // A ramp of 24-bit samples (what a `jaq play` of a test ramp sends).
        let ramp = (0..<256).map { Float(100_000 + $0) / 8_388_608 }
        #expect(ramp.withUnsafeBufferPointer { NetClockCode.firstFrame($0.baseAddress!, count: 256) } == nil)
        // The clock through 16-bit integers (a lossy link): not exact, not a clock.
        let quantized = clock(from: 5_000_000).map { ($0 * 32768).rounded() / 32768 }
        #expect(quantized.withUnsafeBufferPointer { NetClockCode.firstFrame($0.baseAddress!, count: 256) } == nil)
        // One sample off.
        var broken = clock(from: 5_000_000)
        broken[200] = NetClockCode.sample(4_000_000)
        #expect(broken.withUnsafeBufferPointer { NetClockCode.firstFrame($0.baseAddress!, count: 256) } == nil)
        #expect(NetClockCode.code(of: .nan) == nil && NetClockCode.code(of: -0.01) == nil && NetClockCode.code(of: 0.0625) == nil)
    }

    /// The reader's realtime state on plain memory (the kernel never calls libjack).
    final class Reader {
        let state = UnsafeMutablePointer<NetClockReaderRealtime>.allocate(capacity: 1)
        var local: UInt32 = 1_000_000

        init() {
            state.initialize(to: NetClockReaderRealtime(client: OpaquePointer(bitPattern: 1)!, port: OpaquePointer(bitPattern: 2)!))
        }
        deinit {
            state.deinitialize(count: 1)
            state.deallocate()
        }

        /// One 256-frame cycle of the slave carrying the clock of master frames `master…`.
        func cycle(carrying master: UInt32) {
            let samples = (0..<256).map { NetClockCode.sample(master &+ UInt32($0)) }
            samples.withUnsafeBufferPointer { readNetClockCycle(state, samples: $0.baseAddress!, count: 256, localFrame: local) }
            local &+= 256
        }

        var offset: UInt32? {
            let published = state.pointee.published.load(ordering: .relaxed)
            return published >> 32 != 0 ? UInt32(truncatingIfNeeded: published) : nil
        }
    }

    @Test func refilledCyclesAreGapsWithTheirFrames() {
        let reader = Reader()
        let offset: UInt32 = 7_777
        for n in 0..<3 { reader.cycle(carrying: reader.local &+ offset); #expect(reader.offset == nil, "cycle \(n): not locked yet") }
        reader.cycle(carrying: reader.local &+ offset)
        #expect(reader.offset == offset, "locked after four cycles")
        for _ in 0..<10 { reader.cycle(carrying: reader.local &+ offset) }
        #expect(drainNetClockEvents(reader.state).isEmpty)
        // Two cycles filled from earlier ones (netjack2's refill of lost packets), then the clock again.
        let gapStart = reader.local
        reader.cycle(carrying: reader.local &+ offset &- 512)
        reader.cycle(carrying: reader.local &+ offset &- 512)
        #expect(reader.state.pointee.openGapFrames.load(ordering: .relaxed) == 512, "the open gap so far")
        reader.cycle(carrying: reader.local &+ offset)
        #expect(drainNetClockEvents(reader.state) == [.gap(frame: gapStart, frames: 512)])
        #expect(reader.state.pointee.openGapFrames.load(ordering: .relaxed) == 0)
        // Part of a cycle: a lost packet of 128 frames.
        let partStart = reader.local
        var samples = (0..<256).map { NetClockCode.sample(reader.local &+ offset &+ UInt32($0)) }
        for i in 128..<256 { samples[i] = 0 }
        samples.withUnsafeBufferPointer { readNetClockCycle(reader.state, samples: $0.baseAddress!, count: 256, localFrame: reader.local) }
        reader.local &+= 256
        reader.cycle(carrying: reader.local &+ offset)
        #expect(drainNetClockEvents(reader.state) == [.gap(frame: partStart + 128, frames: 128)])
        #expect(reader.offset == offset, "gaps do not move the clock")
    }

    @Test func aClockThatMovesIsOneJump() {
        let reader = Reader()
        let offset: UInt32 = 100
        for _ in 0..<8 { reader.cycle(carrying: reader.local &+ offset) }
        let jumpStart = reader.local
        // A master cycle the slave never got: the master's frames are 256 ahead from here on.
        for _ in 0..<(NetClockReaderRealtime.jumpCycles - 1) { reader.cycle(carrying: reader.local &+ offset &+ 256) }
        #expect(drainNetClockEvents(reader.state).isEmpty, "not judged yet")
        reader.cycle(carrying: reader.local &+ offset &+ 256)
        #expect(drainNetClockEvents(reader.state) == [.jump(frame: jumpStart, by: 256)])
        #expect(reader.offset == offset &+ 256, "the reader follows the new clock")
        for _ in 0..<4 { reader.cycle(carrying: reader.local &+ offset &+ 256) }
        #expect(drainNetClockEvents(reader.state).isEmpty && reader.state.pointee.openGapFrames.load(ordering: .relaxed) == 0)
    }

    /// The mapping a slave resolves starts with: the clock data at local frame L was sent at master
    /// frame L + offset; the master's frame happening at L is that plus the port's latency.
    @Test func aLockMapsMasterFramesToLocalOnes() {
        let lock = NetClockReader.Lock(offset: 20_000, latency: 640)
        #expect(lock.masterFrame(atLocal: 100_000) == 120_640)
        #expect(lock.localFrame(forMaster: 120_640) == 100_000)
        // Across the 32-bit wrap of either server's frame time.
        let wrapped = NetClockReader.Lock(offset: UInt32.max - 99, latency: 640)
        #expect(wrapped.masterFrame(atLocal: 1_000) == 1_540)
        #expect(wrapped.localFrame(forMaster: 1_540) == 1_000)
        #expect(wrapped.localFrame(forMaster: 300) == UInt32.max - 239)
    }

    @Test func aFullRingCountsWhatItLost() {
        let reader = Reader()
        for _ in 0..<4 { reader.cycle(carrying: reader.local) }
        for _ in 0..<(NetClockReaderRealtime.ringCapacity + 5) {
            reader.cycle(carrying: 0)  // another clock: a gap
            reader.cycle(carrying: reader.local)
        }
        #expect(drainNetClockEvents(reader.state).count == NetClockReaderRealtime.ringCapacity)
        #expect(reader.state.pointee.lostEvents.load(ordering: .relaxed) == 5)
    }
}
