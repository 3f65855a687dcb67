import Testing
import Foundation
import Synchronization
import JackTestSupport
@testable import JackDriver
@testable import QueueCore

@Suite(.serialized) struct JackDeviceTests {
    @Test func noServerIsInvalidDeviceAtOnce() throws {
        try JackServer.withExclusiveAccess { try noServer() }
    }

    func noServer() throws {
        let driver = JackDriver(serverName: "jaq-no-such-server-\(getpid())")
        let start = Date()
        let error = #expect(throws: QueueError.self) {
            _ = try OutputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 16), provider: driver,
                                      clientName: "t", executor: .queueThread) { _ in }
        }
        // The message names the server and why: libjack's status bits in words.
        guard case .invalidDevice(let reason) = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason == "cannot open a client on JACK server \"\(driver.serverName!)\": server not running", "\(reason)")
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test func outputQueuePlaysIntoInputQueueBitExact() throws {
        let server = try JackServer()
        defer { server.stop() }
        try JackServer.withInProcessClients { try outputQueuePlaysIntoInputQueue(on: server) }
    }

    func outputQueuePlaysIntoInputQueue(on server: JackServer) throws {
        let driver = JackDriver(serverName: server.name)
        let total = 48000 * 2
        let frames = Mutex(0)
        let outputBox = Mutex<OutputQueueEngine?>(nil)
        let output = try OutputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 16), provider: driver,
                                           clientName: "jaq-out", executor: .queueThread) { buffer in
            let start = frames.withLock { value -> Int in let s = value; value += 2048; return s }
            guard start < total else { _ = try? outputBox.withLock { $0 }?.stop(immediate: false); return }
            let count = min(2048, total - start)
            let samples = buffer.data.assumingMemoryBound(to: Int16.self)
            for f in 0..<count { for c in 0..<2 { samples[f * 2 + c] = Int16(truncatingIfNeeded: (start + f) * (c + 1) % 30000) } }
            _ = try? outputBox.withLock { $0 }?.enqueue(buffer.handle, byteCount: count * 4)
        }
        outputBox.withLock { $0 = output }
        #expect(output.connectedDevicePorts == ["system:playback_1", "system:playback_2"])

        let captured = Mutex<[Int16]>([])
        let inputBox = Mutex<InputQueueEngine?>(nil)
        let input = try InputQueueEngine(format: .linearPCM(sampleRate: 48000, channels: 2, bits: 16), provider: driver,
                                         clientName: "jaq-in", executor: .queueThread) { buffer, bytes, _, _ in
            let samples = buffer.data.assumingMemoryBound(to: Int16.self)
            captured.withLock { $0.append(contentsOf: UnsafeBufferPointer(start: samples, count: bytes / 2)) }
            _ = try? inputBox.withLock { $0 }?.enqueue(buffer.handle)
        }
        inputBox.withLock { $0 = input }
        try input.setCurrentDevice(output.device.portNames.joined(separator: ","))
        let memory = (0..<6).map { _ in UnsafeMutableRawPointer.allocate(byteCount: 8192, alignment: 16) }
        defer { memory.forEach { $0.deallocate() } }
        for m in memory[0..<3] {
            let buffer = QueueBuffer(handle: m, data: m, byteCapacity: 8192)
            try output.addBuffer(buffer)
            output.outputCallback(buffer)
        }
        for m in memory[3..<6] {
            try input.addBuffer(QueueBuffer(handle: m, data: m, byteCapacity: 8192))
            try input.enqueue(m)
        }
        try input.start(atDeviceFrame: nil)
        try output.start(atDeviceFrame: nil)
        let deadline = Date().addingTimeInterval(15)
        while output.state != .stopped && Date() < deadline { usleep(10_000) }
        usleep(100_000)
        try input.stop(immediate: true)
        let got = captured.withLock { $0 }
        let first = try #require(got.firstIndex { $0 != 0 })
        #expect(first % 2 == 0)
        let expected = (0..<total).flatMap { f in (0..<2).map { c in Int16(truncatingIfNeeded: f * (c + 1) % 30000) } }
        // Frame 0 is all zeros in this signal; the first non-zero sample is frame 1's.
        let start = first - 2
        #expect(got.count >= start + expected.count)
        let recorded = Array(got[start..<min(got.count, start + expected.count)])
        let mismatch = recorded.indices.first { recorded[$0] != expected[$0] }
        #expect(mismatch == nil, "first difference at sample \(mismatch ?? -1): got \(mismatch.map { Array(recorded[$0..<min(recorded.count, $0 + 8)]) } ?? []), expected \(mismatch.map { Array(expected[$0..<min(expected.count, $0 + 8)]) } ?? []); \(output.starvedFrames) frames lost in playback, \(input.discontinuityCount) discontinuities in the recording")
        output.dispose(immediate: true)
        input.dispose(immediate: true)
    }
}
