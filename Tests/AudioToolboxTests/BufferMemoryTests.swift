import AudioToolbox
import Glibc
import JackDriver
import JackTestSupport
import Testing

/// Queue buffers of 64 KiB and more are pages of their own (BufferMemory); a disposed queue
/// unmaps those that lie next to each other with one call, and only its own.
@Suite struct BufferMemoryTests {
    @Test func aDisposedQueueUnmapsEveryBufferAndLeavesAnotherQueuesBuffersAsTheyWere() throws {
        try JackServer.withExclusiveAccess {
            // No server: the queues render offline, and their buffers are the same memory.
            let device = JackDriver(serverName: NoServerQueueTests.absentServerName())
            var format = lpcm(rate: 48000, channels: 2)
            var madeA: AudioQueueRef?
            var madeB: AudioQueueRef?
            #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &madeA, device: device) == noErr)
            #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &madeB, device: device) == noErr)
            let a = try #require(madeA)
            let b = try #require(madeB)
            let size = 200_000
            var aPages: [UnsafeMutableRawPointer] = []
            var bBuffers: [(buffer: AudioQueueBufferRef, value: UInt8)] = []
            // Mostly one of A's, then one of B's, so that A's blocks are neighbours in places and
            // B's lie between them in others (successive mappings are placed next to each other).
            for i in 0..<24 {
                var buffer: AudioQueueBufferRef?
                #expect(AudioQueueAllocateBuffer(a, UInt32(size), &buffer) == noErr)
                let data = try #require(buffer).pointee.mAudioData
                data.storeBytes(of: 1, as: UInt8.self)
                (data + size - 1).storeBytes(of: 1, as: UInt8.self)
                aPages += [data, data + size - 1].map { UnsafeMutableRawPointer(bitPattern: Int(bitPattern: $0) & ~4095)! }
                if i % 3 != 2 {
                    var other: AudioQueueBufferRef?
                    #expect(AudioQueueAllocateBuffer(b, UInt32(size), &other) == noErr)
                    let value = UInt8(i + 1)
                    memset(try #require(other).pointee.mAudioData, Int32(value), size)
                    bBuffers.append((other!, value))
                }
            }
            #expect(AudioQueueDispose(a, true) == noErr)
            // Every page of A's buffers is unmapped (mincore answers ENOMEM for one that is not)…
            var unmapped = 0
            for page in aPages {
                var resident: UInt8 = 0
                if mincore(page, 4096, &resident) == -1 && errno == ENOMEM { unmapped += 1 }
            }
            #expect(unmapped == aPages.count, "\(unmapped) of \(aPages.count) pages of the disposed queue's buffers unmapped")
            // …and B's, between and beside them, still hold what was written, every byte.
            for (buffer, value) in bBuffers {
                let bytes = UnsafeRawBufferPointer(start: buffer.pointee.mAudioData, count: size)
                #expect(bytes.allSatisfy { $0 == value }, "a buffer of the other queue changed")
            }
            #expect(AudioQueueDispose(b, true) == noErr)
        }
    }
}
