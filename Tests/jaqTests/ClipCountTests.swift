import Testing
@testable import jaq

/// The writer's clip counts of integer samples (`TakeWriter.countClipped16`, `countClipped24`)
/// against a sample-by-sample count: full scale counts (16-bit ±32767/−32768, 24-bit values
/// whose top two bytes are 7F FF or 80 00), one step below does not, in both byte orders,
/// through the vector loops, their scalar ends, and a run long enough to empty the 16-bit
/// counters more than once.
struct ClipCountTests {
    /// Pseudo-random 24-bit values near full scale often, with full-scale ones among them.
    private func values(_ count: Int, seed: UInt64) -> [Int32] {
        var x = seed
        return (0..<count).map { i in
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let pick = Int(x >> 33) % 64
            let edges: [Int32] = [8_388_607, -8_388_608, 8_388_352, 8_388_351, -8_388_353, -8_388_352, 8_388_400, -8_388_400]
            return pick < edges.count ? edges[pick] : Int32(truncatingIfNeeded: Int64(x >> 40) % 16_000_000 - 8_000_000) + Int32(i % 7)
        }
    }

    @Test(arguments: [false, true], [0, 1, 15, 16, 17, 1000, 600_001])
    func clipsOf24BitSamplesAreCountedAsOneByOne(bigEndian: Bool, count: Int) {
        let samples = values(count, seed: UInt64(count) + (bigEndian ? 7 : 0))
        var bytes: [UInt8] = []
        for v in samples {
            let u = UInt32(bitPattern: v)
            let little = [UInt8(u & 0xFF), UInt8((u >> 8) & 0xFF), UInt8((u >> 16) & 0xFF)]
            bytes += bigEndian ? little.reversed() : little
        }
        let expected = samples.filter { $0 >= 8_388_352 || $0 <= -8_388_353 }.count
        let counted = bytes.withUnsafeBytes { TakeWriter.countClipped24($0, high: bigEndian ? 0 : 2) }
        #expect(counted == Int64(expected))
    }

    @Test(arguments: [false, true], [0, 1, 15, 16, 17, 1000, 600_001])
    func clipsOf16BitSamplesAreCountedAsOneByOne(bigEndian: Bool, count: Int) {
        // Every third sample at full scale; in the long run every one, so that each of the 16
        // counters of 16 bits would pass 32767 (37500 each) if they were not emptied.
        let samples = values(count, seed: UInt64(count) + 3).enumerated().map { i, v -> Int16 in
            i % (count > 100_000 ? 1 : 3) == 0 ? (v < 0 ? .min : .max) : Int16(truncatingIfNeeded: v >> 8) }
        let stored = samples.map { bigEndian ? $0.bigEndian : $0.littleEndian }
        let expected = samples.filter { $0 == .max || $0 == .min }.count
        let counted = stored.withUnsafeBytes { TakeWriter.countClipped16($0, bigEndian: bigEndian) }
        #expect(counted == Int64(expected))
    }
}
