import CAudioToolbox

/// The bytes of a stream that arrived and are not consumed yet, and where in the file the
/// first of them is. Parsers look at `count` bytes from the front, consume them, or skip
/// bytes still to come (a chunk they do not read).
struct StreamBuffer {
    private var storage: [UInt8] = []
    private var start = 0
    /// The file offset of the first unconsumed byte.
    private(set) var position: Int64 = 0
    /// Bytes still to be skipped as they arrive (beyond those held).
    private var pendingSkip: Int64 = 0

    var count: Int { storage.count - start }

    subscript(index: Int) -> UInt8 { storage[start + index] }

    /// Appends bytes that arrived, dropping those a skip still covers.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        var bytes = bytes[...]
        if pendingSkip > 0 {
            let skipped = Int(min(Int64(bytes.count), pendingSkip))
            pendingSkip -= Int64(skipped)
            position += Int64(skipped)
            bytes = bytes.dropFirst(skipped)
        }
        if start > 0, start >= storage.count / 2 {
            storage.removeFirst(start)
            start = 0
        }
        storage.append(contentsOf: bytes)
    }

    /// Drops `n` bytes from the front (`n` ≤ count).
    mutating func consume(_ n: Int) {
        start += n
        position += Int64(n)
        if start == storage.count {
            storage.removeAll(keepingCapacity: true)
            start = 0
        }
    }

    /// Skips `n` bytes: those held now, the rest as they arrive.
    mutating func skip(_ n: Int64) {
        let now = Int(min(Int64(count), n))
        consume(now)
        pendingSkip += n - Int64(now)
    }

    /// Whether a skip still waits for bytes.
    var isSkipping: Bool { pendingSkip > 0 }

    /// Drops everything held and pending; the next byte to arrive is at `offset`.
    mutating func reset(to offset: Int64) {
        storage.removeAll(keepingCapacity: true)
        start = 0
        pendingSkip = 0
        position = offset
    }

    /// `n` bytes from `offset` (relative to the front) as an array.
    func bytes(_ offset: Int, _ n: Int) -> [UInt8] {
        Array(storage[(start + offset)..<(start + offset + n)])
    }

    /// The held bytes, for a packets callback.
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start...])) }
    }

    func bigEndian32(_ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(self[offset + $1]) }
    }

    func littleEndian32(_ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(self[offset + $1]) << (8 * $1) }
    }

    /// Four bytes as a four-char code string ("RIFF").
    func tag(_ offset: Int) -> String {
        String(decoding: bytes(offset, 4), as: UTF8.self)
    }
}

/// Big- and little-endian reads from byte arrays (header chunks copied out of the stream).
extension Array where Element == UInt8 {
    func be<V: FixedWidthInteger>(_ offset: Int, _: V.Type = V.self) -> V {
        guard offset >= 0, offset + MemoryLayout<V>.size <= count else { return 0 }
        return (0..<MemoryLayout<V>.size).reduce(V(0)) { $0 << 8 | V(self[offset + $1]) }
    }

    func le<V: FixedWidthInteger>(_ offset: Int, _: V.Type = V.self) -> V {
        guard offset >= 0, offset + MemoryLayout<V>.size <= count else { return 0 }
        return (0..<MemoryLayout<V>.size).reduce(V(0)) { $0 | V(self[offset + $1]) << (8 * $1) }
    }

    func fourCC(_ offset: Int) -> String {
        guard offset >= 0, offset + 4 <= count else { return "" }
        return String(decoding: self[offset..<offset + 4], as: UTF8.self)
    }
}
