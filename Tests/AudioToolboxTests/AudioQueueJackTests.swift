import Testing
import Foundation
import Synchronization
import AudioToolbox
import JackDriver
import JackTestSupport
import QueueCore

/// Audio queues on a real (private, dummy-backend) JACK server.
@Suite(.serialized) struct AudioQueueJackTests {
    /// Runs `body` with a JACK driver for `server`, its clients in process.
    func withServer<T>(_ server: JackServer, _ body: (JackDriver) throws -> T) rethrows -> T {
        try JackServer.withInProcessClients { try body(JackDriver(serverName: server.name)) }
    }

    func property(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID) -> String {
        var value: CFString?
        var size = UInt32(8)
        guard AudioQueueGetProperty(queue, id, &value, &size) == noErr, let value else { return "" }
        return String(value)
    }

    /// With no server, a playback queue is made (it can render offline: NoServerQueueTests) and
    /// its Start is kAudioQueueErr_InvalidDevice; a recording queue is not made. Nothing hangs.
    @Test func noServerAtStartOrNewInputIsInvalidDeviceWithoutHanging() {
        let device = JackDriver(serverName: "jaq-absent-\(getpid())")
        JackServer.withExclusiveAccess {
            var format = lpcm()
            var queue: AudioQueueRef?
            let start = Date()
            #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: device) == noErr)
            if let output = queue {
                #expect(AudioQueueStart(output, nil) == kAudioQueueErr_InvalidDevice)
                #expect(AudioQueueDispose(output, true) == noErr)
            }
            queue = nil
            #expect(AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &queue, device: device) == kAudioQueueErr_InvalidDevice)
            #expect(queue == nil)
            #expect(Date().timeIntervalSince(start) < 5)
        }
    }

    @Test func anImpulseStartedAtFrameTIsRecordedAtTheExpectedQueueTimeByAnInputStartedAtT() throws {
        let server = try JackServer()
        defer { server.stop() }
        try withServer(server) { device in
            var format = lpcm(channels: 1, bits: 32, float: true)
            var output: AudioQueueRef?
            #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &output, device: device) == noErr)
            let out = try #require(output)
            let context = RecordingContext()
            var input: AudioQueueRef?
            var inputFormat = lpcm(channels: 2, bits: 32, float: true)
            #expect(AudioQueueNewInput(&inputFormat, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &input, device: device) == noErr)
            let inq = try #require(input)
            var target: CFString? = CFString.make(property(out, kAudioQueueProperty_JACKPortNames))
            #expect(AudioQueueSetProperty(inq, kAudioQueueProperty_CurrentDevice, &target, 8) == noErr)
            // The impulse is at queue time 1234.
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(out, 4 * 4800, &buffer) == noErr)
            let samples = buffer!.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for i in 0..<4800 { samples[i] = i == 1234 ? 1 : 0 }
            buffer!.pointee.mAudioDataByteSize = 4 * 4800
            #expect(AudioQueueEnqueueBuffer(out, buffer!, 0, nil) == noErr)
            for _ in 0..<4 {
                var b: AudioQueueBufferRef?
                #expect(AudioQueueAllocateBuffer(inq, 8 * 1024, &b) == noErr)
                #expect(AudioQueueEnqueueBuffer(inq, b!, 0, nil) == noErr)
            }
            var prepared: UInt32 = 0
            #expect(AudioQueuePrime(out, 0, &prepared) == noErr)
            var when = AudioTimeStamp()
            #expect(AudioQueueDeviceGetCurrentTime(out, &when) == noErr)
            when.mSampleTime += 4800 + 77  // inside a period
            when.mFlags = .sampleTimeValid
            #expect(AudioQueueDeviceGetNearestStartTime(out, &when, 0) == noErr)
            #expect(AudioQueueStart(inq, &when) == noErr)
            #expect(AudioQueueStart(out, &when) == noErr)
            #expect(waitUntil(10) { context.samples.withLock { $0.count } >= 2 * 4096 })
            #expect(AudioQueueStop(inq, true) == noErr)
            let recorded = context.samples.withLock { $0 }
            let floats = recorded.withUnsafeBufferPointer { raw in
                UnsafeRawBufferPointer(raw).bindMemory(to: Float.self).map { $0 }
            }
            let left = stride(from: 0, to: floats.count, by: 2).map { floats[$0] }
            let right = stride(from: 1, to: floats.count, by: 2).map { floats[$0] }
            #expect(left.firstIndex(of: 1) == 1234)
            #expect(right.firstIndex(of: 1) == 1234)
            #expect(left.filter { $0 != 0 }.count == 1)
            #expect(AudioQueueDispose(out, true) == noErr)
            #expect(AudioQueueDispose(inq, true) == noErr)
        }
    }

    @Test func aResampledSinePlaysForTheRightDurationWithTHDNBelowMinus90dB() throws {
        let server = try JackServer()
        defer { server.stop() }
        try withServer(server) { device in
            // 2 s of a 1 kHz sine at 44.1 kHz, float, into a 48 kHz server.
            let frames = 88200
            var format = lpcm(rate: 44100, channels: 1, bits: 32, float: true)
            var output: AudioQueueRef?
            #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &output, device: device) == noErr)
            let out = try #require(output)
            let log = DateLog()
            let box = Unmanaged.passRetained(log).toOpaque()
            defer { Unmanaged<DateLog>.fromOpaque(box).release() }
            #expect(AudioQueueAddPropertyListener(out, kAudioQueueProperty_IsRunning, { user, queue, _ in
                Unmanaged<DateLog>.fromOpaque(user!).takeUnretainedValue().dates.withLock { $0.append(Date()) }
            }, box) == noErr)
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(out, UInt32(4 * frames), &buffer) == noErr)
            let samples = buffer!.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for i in 0..<frames { samples[i] = Float(0.5 * sin(2 * Double.pi * 1000 * Double(i) / 44100)) }
            buffer!.pointee.mAudioDataByteSize = UInt32(4 * frames)
            #expect(AudioQueueEnqueueBuffer(out, buffer!, 0, nil) == noErr)
            let context = RecordingContext()
            var input: AudioQueueRef?
            var inputFormat = lpcm(channels: 2, bits: 32, float: true)
            #expect(AudioQueueNewInput(&inputFormat, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &input, device: device) == noErr)
            let inq = try #require(input)
            var target: CFString? = CFString.make(property(out, kAudioQueueProperty_JACKPortNames))
            #expect(AudioQueueSetProperty(inq, kAudioQueueProperty_CurrentDevice, &target, 8) == noErr)
            for _ in 0..<4 {
                var b: AudioQueueBufferRef?
                #expect(AudioQueueAllocateBuffer(inq, 8 * 4096, &b) == noErr)
                #expect(AudioQueueEnqueueBuffer(inq, b!, 0, nil) == noErr)
            }
            #expect(AudioQueueStart(inq, nil) == noErr)
            #expect(AudioQueueStart(out, nil) == noErr)
            #expect(AudioQueueStop(out, false) == noErr)
            #expect(waitUntil(10) { log.dates.withLock { $0.count } == 2 })
            usleep(100_000)
            #expect(AudioQueueStop(inq, true) == noErr)
            let raw = context.samples.withLock { $0 }
            let floats = raw.withUnsafeBufferPointer { UnsafeRawBufferPointer($0).bindMemory(to: Float.self).map { $0 } }
            let left = stride(from: 0, to: floats.count, by: 2).map { Double(floats[$0]) }
            // Duration: the non-silent span is 2 s at 48 kHz, within one period (256 frames).
            let threshold = 1e-4
            let first = try #require(left.firstIndex { abs($0) > threshold })
            let last = try #require(left.lastIndex { abs($0) > threshold })
            #expect(abs((last - first + 1) - 96000) <= 256, "played \(last - first + 1) frames")
            // THD+N over the steady middle second: residual after fitting a 1 kHz sine.
            let segment = Array(left[(first + 24000)..<(first + 72000)])
            let thdn = thdnDecibels(segment, frequency: 1000, rate: 48000)
            print("measured: resampled 1 kHz sine 44.1k->48k THD+N \(thdn) dB, played \(last - first + 1) frames")
            #expect(thdn < -90, "THD+N \(thdn) dB")
            #expect(AudioQueueDispose(out, true) == noErr)
            #expect(AudioQueueDispose(inq, true) == noErr)
        }
    }

    final class DateLog: Sendable {
        let dates = Mutex<[Date]>([])
    }

    @Test func theServerGoingAwayMidRecordingDeliversWhatWasCapturedAndInvalidates() throws {
        let server = try JackServer()
        try withServer(server) { device in
            let context = RecordingContext()
            var format = lpcm()
            var queue: AudioQueueRef?
            #expect(AudioQueueNewInput(&format, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &queue, device: device) == noErr)
            let q = try #require(queue)
            for _ in 0..<4 {
                var b: AudioQueueBufferRef?
                #expect(AudioQueueAllocateBuffer(q, 4 * 4800, &b) == noErr)
                #expect(AudioQueueEnqueueBuffer(q, b!, 0, nil) == noErr)
            }
            #expect(AudioQueueStart(q, nil) == noErr)
            #expect(waitUntil(5) { context.starts.withLock { $0.count } >= 3 })
            var before = AudioTimeStamp()
            #expect(AudioQueueGetCurrentTime(q, nil, &before, nil) == noErr)
            server.stop()
            // What was captured reaches the callback (a last partial buffer included), then
            // the queue stops, and every later call says the queue is gone.
            func isRunning() -> UInt32 {
                var running: UInt32 = 1
                var size = UInt32(4)
                AudioQueueGetProperty(q, kAudioQueueProperty_IsRunning, &running, &size)
                return running
            }
            #expect(waitUntil(10) { isRunning() == 0 })
            let starts = context.starts.withLock { $0 }
            let delivered = starts.map { Double($0.packets) }.reduce(0, +)
            #expect(delivered >= before.mSampleTime, "every frame captured before the server went is delivered")
            // Consecutive buffers are contiguous: nothing repeated or skipped on the way out.
            for (a, b) in zip(starts, starts.dropFirst()) { #expect(b.sampleTime == a.sampleTime + Double(a.packets)) }
            #expect(AudioQueueStart(q, nil) == kAudioQueueErr_QueueInvalidated)
            let start = Date()
            #expect(AudioQueueDispose(q, true) == noErr)
            #expect(Date().timeIntervalSince(start) < 5)
        }
    }

    @Test func theServerGoingAwayMidPlaybackStopsTheQueueWithoutHanging() throws {
        let server = try JackServer()
        try withServer(server) { device in
            let context = PlaybackContext(frames: 48000 * 30, channels: 2, framesPerBuffer: 4800)
            var format = lpcm()
            var queue: AudioQueueRef?
            let user = Unmanaged.passUnretained(context).toOpaque()
            #expect(AudioQueueNewOutput(&format, handleOutputBuffer, user, nil, nil, 0, &queue, device: device) == noErr)
            let q = try #require(queue)
            #expect(AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, isRunningListener, user) == noErr)
            for _ in 0..<3 {
                var b: AudioQueueBufferRef?
                #expect(AudioQueueAllocateBuffer(q, 4800 * 4, &b) == noErr)
                handleOutputBuffer(user, q, b!)
            }
            #expect(AudioQueueStart(q, nil) == noErr)
            #expect(waitUntil(5) { context.runningChanges.withLock { $0 } == [1] })
            server.stop()
            #expect(waitUntil(10) { context.runningChanges.withLock { $0 } == [1, 0] })
            #expect(AudioQueueStart(q, nil) == kAudioQueueErr_QueueInvalidated)
            let start = Date()
            #expect(AudioQueueDispose(q, true) == noErr)
            #expect(Date().timeIntervalSince(start) < 5)
        }
    }
}

/// THD+N in dB: the RMS of what remains after removing the best-fitting sine
/// (and DC) at `frequency`, relative to the RMS of that sine.
func thdnDecibels(_ x: [Double], frequency: Double, rate: Double) -> Double {
    let w = 2 * Double.pi * frequency / rate
    // Least squares for a*sin + b*cos + c.
    var ss = 0.0, cc = 0.0, sc = 0.0, s1 = 0.0, c1 = 0.0, xs = 0.0, xc = 0.0, x1 = 0.0
    let n = Double(x.count)
    for (i, v) in x.enumerated() {
        let s = sin(w * Double(i)), c = cos(w * Double(i))
        ss += s * s; cc += c * c; sc += s * c; s1 += s; c1 += c; xs += v * s; xc += v * c; x1 += v
    }
    // Solve the 3x3 normal equations.
    let m = [[ss, sc, s1], [sc, cc, c1], [s1, c1, n]]
    let r = [xs, xc, x1]
    func det(_ a: [[Double]]) -> Double {
        a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
            + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
    }
    let d = det(m)
    func column(_ k: Int) -> [[Double]] { (0..<3).map { i in (0..<3).map { j in j == k ? r[i] : m[i][j] } } }
    let a = det(column(0)) / d, b = det(column(1)) / d, c = det(column(2)) / d
    var residual = 0.0, signal = 0.0
    for (i, v) in x.enumerated() {
        let fit = a * sin(w * Double(i)) + b * cos(w * Double(i))
        residual += (v - fit - c) * (v - fit - c)
        signal += fit * fit
    }
    return 10 * log10(residual / signal)
}
