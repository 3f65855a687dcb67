import Glibc
import Synchronization
@testable import QueueCore

/// Collects what an output queue's callback returns, thread-safely.
final class BufferLog: @unchecked Sendable {
    private let state = Mutex<[(handle: Int, thread: UInt)]>([])
    func append(_ handle: UnsafeMutableRawPointer) {
        state.withLock { $0.append((Int(bitPattern: handle), UInt(pthread_self()))) }
    }
    var handles: [Int] { state.withLock { $0.map(\.handle) } }
    /// The thread each callback ran on.
    var threads: [pthread_t] { state.withLock { $0.map { pthread_t($0.thread) } } }
    var count: Int { state.withLock { $0.count } }
}

/// Memory for test buffers (what the API layer allocates for real queues).
final class TestBuffers {
    var storage: [UnsafeMutableRawPointer] = []
    func make(bytes: Int) -> QueueBuffer {
        let data = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
        storage.append(data)
        return QueueBuffer(handle: data, data: data, byteCapacity: bytes)
    }
    deinit { storage.forEach { $0.deallocate() } }
}

/// Int16 interleaved samples as bytes.
func int16Bytes(_ samples: [Int16]) -> [UInt8] {
    samples.withUnsafeBytes { Array($0) }
}

/// A deterministic test signal: a distinct, never-zero value per frame and channel.
func testSample(frame: Int, channel: Int) -> Int16 {
    let value = ((frame &* 7919 &+ channel &* 104_729) % 60_000) - 30_000
    return Int16(value == 0 ? 1 : value)
}
