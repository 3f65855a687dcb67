import Testing
import Foundation
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// A playback program that uses what offline rendering must reproduce: callbacks that
/// refill, volume and pan events at buffer starts (ramped), trims, a timed buffer after
/// a gap, and Stop(false) at the end.
final class ProgramContext: @unchecked Sendable {
    let channels: Int
    let framesPerBuffer: Int
    let bufferTotal: Int
    let next = Mutex(0)
    let finished = Mutex(false)
    let errors = Mutex<[OSStatus]>([])
    var rate: Double

    init(channels: Int = 2, framesPerBuffer: Int = 3000, bufferTotal: Int = 12, rate: Double = 48000) {
        self.channels = channels
        self.framesPerBuffer = framesPerBuffer
        self.bufferTotal = bufferTotal
        self.rate = rate
    }

    /// Fills and enqueues buffer number `index` of the program (or stops after the last).
    func enqueue(_ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
        let index = next.withLock { n -> Int in defer { n += 1 }; return n }
        guard index < bufferTotal else {
            if index == bufferTotal { AudioQueueStop(queue, false); finished.withLock { $0 = true } }
            return
        }
        let samples = buffer.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
        for f in 0..<framesPerBuffer {
            for c in 0..<channels { samples[f * channels + c] = signal(index * framesPerBuffer + f, c) }
        }
        buffer.pointee.mAudioDataByteSize = UInt32(framesPerBuffer * channels * 2)
        var events: [AudioQueueParameterEvent] = []
        if index % 3 == 1 { events.append(AudioQueueParameterEvent(mID: kAudioQueueParam_Volume, mValue: 0.25)) }
        if index % 3 == 2 { events.append(AudioQueueParameterEvent(mID: kAudioQueueParam_Volume, mValue: 1)) }
        if index % 4 == 3 { events.append(AudioQueueParameterEvent(mID: kAudioQueueParam_Pan, mValue: index % 8 == 3 ? -0.5 : 0.5)) }
        var start = AudioTimeStamp()
        start.mFlags = .sampleTimeValid
        // Buffer 5 starts after a gap of 1000 frames (queue time).
        start.mSampleTime = Double(5 * framesPerBuffer - 5 * 15 + 1000)
        let status = withUnsafePointer(to: &start) { startPointer in
            events.withUnsafeBufferPointer { list in
                AudioQueueEnqueueBufferWithParameters(queue, buffer, 0, nil, 10, 5, UInt32(list.count), list.baseAddress,
                                                      index == 5 ? startPointer : nil, nil)
            }
        }
        if status != noErr { errors.withLock { $0.append(status) } }
    }
}

func programCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    Unmanaged<ProgramContext>.fromOpaque(userData!).takeUnretainedValue().enqueue(queue, buffer)
}

/// Creates a queue running `context`'s program: three buffers primed through the callback, a ramp time set.
func makeProgramQueue(_ context: ProgramContext, device: DeviceProvider) throws -> AudioQueueRef {
    var format = lpcm(rate: context.rate, channels: UInt32(context.channels))
    var queue: AudioQueueRef?
    #expect(AudioQueueNewOutput(&format, programCallback, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &queue, device: device) == noErr)
    let q = try #require(queue)
    #expect(AudioQueueSetParameter(q, kAudioQueueParam_VolumeRampTime, 0.005) == noErr)
    for _ in 0..<3 {
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, UInt32(context.framesPerBuffer * context.channels * 2), &buffer) == noErr)
        programCallback(Unmanaged.passUnretained(context).toOpaque(), q, try #require(buffer))
    }
    return q
}

func isRunning(_ queue: AudioQueueRef) -> Bool {
    var running: UInt32 = 0
    var size = UInt32(4)
    AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size)
    return running != 0
}

/// Renders offline in requests of `request` frames (after the 0-frame priming call), float32, as
/// Apple's AQOfflineRenderTest does: until a render returns fewer frames than asked (the queue
/// played out what it had), or `frames` frames (nil: no limit) came. The time stamp moves on by
/// the frames each render returned. After a short render, the next one must return 0 frames.
func renderOffline(_ queue: AudioQueueRef, channels: Int, frames: Int? = nil, request: Int) throws -> [Float] {
    var capture: AudioQueueBufferRef?
    #expect(AudioQueueAllocateBuffer(queue, UInt32(request * channels * 4), &capture) == noErr)
    let buffer = try #require(capture)
    defer { AudioQueueFreeBuffer(queue, buffer) }
    var time = AudioTimeStamp()
    time.mFlags = .sampleTimeValid
    time.mSampleTime = 0
    #expect(AudioQueueOfflineRender(queue, &time, buffer, 0) == noErr)
    #expect(buffer.pointee.mAudioDataByteSize == 0)
    var out: [Float] = []
    while frames.map({ out.count < $0 * channels }) ?? true {
        let n = min(request, (frames ?? .max) - out.count / channels)
        let status = AudioQueueOfflineRender(queue, &time, buffer, UInt32(n))
        #expect(status == noErr)
        if status != noErr { break }
        let bytes = Int(buffer.pointee.mAudioDataByteSize)
        #expect(bytes % (channels * 4) == 0 && bytes <= n * channels * 4)
        let got = bytes / (channels * 4)
        out.append(contentsOf: UnsafeBufferPointer(start: buffer.pointee.mAudioData.assumingMemoryBound(to: Float.self), count: got * channels))
        time.mSampleTime += Double(got)
        if got < n {
            #expect(AudioQueueOfflineRender(queue, &time, buffer, UInt32(n)) == noErr)
            #expect(buffer.pointee.mAudioDataByteSize == 0, "a render after the queue played out returns no frames")
            break
        }
    }
    return out
}

func deinterleave(_ samples: [Float], channels: Int, channel: Int) -> [Float] {
    stride(from: channel, to: samples.count, by: channels).map { samples[$0] }
}

/// AudioQueueSetOfflineRenderFormat / AudioQueueOfflineRender on the ManualDriver.
/// Serialized: with its two rates run at once on a loaded 2-core machine, the 44.1 kHz real-time
/// playback once ended about a buffer early (35328 of 39183+ frames; not reproduced in 33 runs
/// since, alone or beside three busy loops). Under investigation; see the issue notes.
@Suite(.serialized) struct AudioQueueOfflineTests {
    /// The program played in real time (ManualDriver cycles to the system ports) and
    /// rendered offline in requests that do not line up with the period: every sample
    /// equal, with and without resampling.
    @Test(arguments: [48000.0, 44100.0])
    func offlineRenderIsBitExactWithRealtimePlayback(rate: Double) throws {
        let driver = ManualDriver(periodFrames: 256)
        let played: [[Float]]
        do {
            let context = ProgramContext(rate: rate)
            let queue = try makeProgramQueue(context, device: driver)
            defer { AudioQueueDispose(queue, true) }
            driver.startRecordingPlayback()
            #expect(AudioQueueStart(queue, nil) == noErr)
            var cycles = 0
            while cycles < 2000 && !(context.finished.withLock { $0 } && !isRunning(queue)) {
                driver.run(cycles: 1)
                cycles += 1
            }
            #expect(context.errors.withLock { $0 }.isEmpty)
            played = (0..<2).map { driver.recordedPlayback(port: $0).samples }
        }
        let frames = played[0].count
        #expect(frames > 12 * 3000 * 48000 / Int(rate))
        let rendered: [Float]
        do {
            let device = ManualDriver(periodFrames: 256)
            let context = ProgramContext(rate: rate)
            let queue = try makeProgramQueue(context, device: device)
            defer { AudioQueueDispose(queue, true) }
            var format = lpcm(rate: 48000, channels: 2, bits: 32, float: true)
            #expect(AudioQueueSetOfflineRenderFormat(queue, &format, nil) == noErr)
            #expect(AudioQueueStart(queue, nil) == noErr)
            // Pulled until the queue, stopped at the end of the program, has no more frames.
            let out = try renderOffline(queue, channels: 2, request: 1000)
            #expect(context.errors.withLock { $0 }.isEmpty)
            #expect(waitUntil { !isRunning(queue) }, "the queue played out and stopped")
            rendered = out
        }
        let renderedFrames = rendered.count / 2
        if rate == 48000 {
            // 12 buffers of 3000 frames less 15 trimmed, and the gap of 1000 before buffer 5.
            #expect(renderedFrames == 12 * 2985 + 1000, "the render ends with the program's last frame")
        }
        for c in 0..<2 {
            let got = deinterleave(rendered, channels: 2, channel: c)
            #expect(firstMismatch(got, Array(played[c].prefix(renderedFrames))) == nil, "channel \(c)")
            #expect(played[c].dropFirst(renderedFrames).allSatisfy { $0 == 0 }, "what played after the render's end is silence")
            #expect(got.contains { $0 != 0 })
        }
    }

    /// Integer formats: a 16-bit render of a 16-bit program played at unity is the source, bit for bit.
    @Test func int16RenderOfUnityPlaybackIsTheSource() throws {
        let device = ManualDriver(periodFrames: 256)
        let context = PlaybackContext(frames: 20000, channels: 2, framesPerBuffer: 4096)
        var format = lpcm(channels: 2)
        var queue: AudioQueueRef?
        let user = Unmanaged.passUnretained(context).toOpaque()
        #expect(AudioQueueNewOutput(&format, handleOutputBuffer, user, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, 4096 * 4, &buffer) == noErr)
            handleOutputBuffer(user, q, buffer!)
        }
        var layout = AudioChannelLayout()
        layout.mChannelLayoutTag = kAudioChannelLayoutTag_Stereo
        #expect(AudioQueueSetOfflineRenderFormat(q, &format, &layout) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        var capture: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 20000 * 4, &capture) == noErr)
        var time = AudioTimeStamp()
        time.mFlags = .sampleTimeValid
        #expect(AudioQueueOfflineRender(q, &time, capture!, 0) == noErr)
        #expect(AudioQueueOfflineRender(q, &time, capture!, 20000) == noErr)
        let got = Array(UnsafeBufferPointer(start: capture!.pointee.mAudioData.assumingMemoryBound(to: Int16.self), count: 40000))
        #expect(firstMismatch(got, context.source) == nil)
    }

    /// The layout names the channel count: a stereo queue rendered to four channels has its two
    /// channels first and silence after; a mono queue rendered to mono is the signal.
    @Test func channelCountComesFromTheLayout() throws {
        let device = ManualDriver(periodFrames: 256)
        for (queueChannels, renderChannels) in [(2, 4), (1, 1)] {
            let context = PlaybackContext(frames: 5000, channels: queueChannels, framesPerBuffer: 5000)
            var format = lpcm(channels: UInt32(queueChannels))
            var queue: AudioQueueRef?
            let user = Unmanaged.passUnretained(context).toOpaque()
            #expect(AudioQueueNewOutput(&format, handleOutputBuffer, user, nil, nil, 0, &queue, device: device) == noErr)
            let q = try #require(queue)
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, UInt32(5000 * queueChannels * 2), &buffer) == noErr)
            handleOutputBuffer(user, q, buffer!)
            var offline = lpcm(channels: UInt32(renderChannels), bits: 32, float: true)
            var layout = AudioChannelLayout()
            layout.mChannelLayoutTag = kAudioChannelLayoutTag_DiscreteInOrder | UInt32(renderChannels)
            var wrong = AudioChannelLayout()
            wrong.mChannelLayoutTag = kAudioChannelLayoutTag_DiscreteInOrder | UInt32(renderChannels + 1)
            #expect(AudioQueueSetOfflineRenderFormat(q, &offline, &wrong) == kAudio_ParamError)
            #expect(AudioQueueSetOfflineRenderFormat(q, &offline, &layout) == noErr)
            #expect(AudioQueueStart(q, nil) == noErr)
            let out = try renderOffline(q, channels: renderChannels, frames: 5000, request: 700)
            for c in 0..<renderChannels {
                let got = deinterleave(out, channels: renderChannels, channel: c)
                if c < queueChannels {
                    #expect(firstMismatch(got, context.expected(channel: c)) == nil, "channel \(c)")
                } else {
                    #expect(got.allSatisfy { $0 == 0 }, "channel \(c) is silent")
                }
            }
            AudioQueueDispose(q, true)
        }
    }

    /// An offline rate other than the device's: the render is resampled to it.
    @Test func offlineRateOtherThanTheDevicesIsResampled() throws {
        let device = ManualDriver(periodFrames: 256)
        // 1 kHz sine at 48 kHz, rendered at 24 kHz: 24 samples per period.
        let frames = 48000
        let format = lpcm(rate: 48000, channels: 1, bits: 32, float: true)
        let q = try silentOutputQueue(format, device: device)
        defer { AudioQueueDispose(q, true) }
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, UInt32(frames * 4), &buffer) == noErr)
        let samples = buffer!.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for i in 0..<frames { samples[i] = 0.5 * sinf(2 * .pi * 1000 * Float(i) / 48000) }
        buffer!.pointee.mAudioDataByteSize = UInt32(frames * 4)
        #expect(AudioQueueEnqueueBuffer(q, buffer!, 0, nil) == noErr)
        var offline = lpcm(rate: 24000, channels: 1, bits: 32, float: true)
        #expect(AudioQueueSetOfflineRenderFormat(q, &offline, nil) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        let out = try renderOffline(q, channels: 1, frames: 20000, request: 4096)
        // Away from the converter's start, the output is the sine at 24 kHz.
        var error: Float = 0
        let first = try #require(out.firstIndex { abs($0) > 0.01 })
        // Fit the phase: the converter delays the signal by a constant.
        let body = Array(out[(first + 2000)..<(first + 3000)])
        var best = Float.infinity
        for shift in stride(from: Float(-30), through: 30, by: 0.02) {
            var e: Float = 0
            for (k, x) in body.enumerated() {
                let t = Float(first + 2000 + k) - shift
                e = max(e, abs(x - 0.5 * sinf(2 * .pi * 1000 * t / 24000)))
            }
            best = min(best, e)
        }
        error = best
        #expect(error < 0.01, "max deviation from the sine \(error)")
    }

    /// The reference's result codes.
    @Test func resultCodes() throws {
        let driver = ManualDriver(periodFrames: 256)
        do {
            let format = lpcm(channels: 2)
            let q = try silentOutputQueue(format, device: driver)
            defer { AudioQueueDispose(q, true) }
            var capture: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, 4096, &capture) == noErr)
            var time = AudioTimeStamp()
            time.mFlags = .sampleTimeValid
            // Before the format is set.
            #expect(AudioQueueOfflineRender(q, &time, capture!, 0) == kAudioQueueErr_InvalidOfflineMode)
            #expect(AudioQueueOfflineRender(q, &time, capture!, 256) == kAudioQueueErr_InvalidOfflineMode)
            // A queue running on its device.
            var data: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, 48000 * 4, &data) == noErr)
            data!.pointee.mAudioDataByteSize = 48000 * 4
            #expect(AudioQueueEnqueueBuffer(q, data!, 0, nil) == noErr)
            #expect(AudioQueueStart(q, nil) == noErr)
            driver.run(cycles: 2)
            var offline = lpcm(channels: 2, bits: 32, float: true)
            #expect(AudioQueueSetOfflineRenderFormat(q, &offline, nil) == kAudioQueueErr_InvalidRunState)
            #expect(AudioQueueOfflineRender(q, &time, capture!, 256) == kAudioQueueErr_InvalidOfflineMode)
            #expect(AudioQueueStop(q, true) == noErr)
            // Formats: linear PCM only, interleaved.
            var ulaw = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatULaw, mFormatFlags: 0,
                                                   mBytesPerPacket: 2, mFramesPerPacket: 1, mBytesPerFrame: 2,
                                                   mChannelsPerFrame: 2, mBitsPerChannel: 8, mReserved: 0)
            #expect(AudioQueueSetOfflineRenderFormat(q, &ulaw, nil) == kAudioFormatUnsupportedDataFormatError)
            var planar = lpcm(channels: 2, bits: 32, float: true)
            planar.mFormatFlags |= kAudioFormatFlagIsNonInterleaved
            planar.mBytesPerFrame = 4
            planar.mBytesPerPacket = 4
            #expect(AudioQueueSetOfflineRenderFormat(q, &planar, nil) == kAudioFormatUnsupportedDataFormatError)
            #expect(AudioQueueSetOfflineRenderFormat(q, &offline, nil) == noErr)
            // Offline: the ports are disconnected.
            var channels: UInt32 = 9
            var size = UInt32(4)
            #expect(AudioQueueGetProperty(q, kAudioQueueDeviceProperty_NumberChannels, &channels, &size) == noErr)
            #expect(channels == 0)
            // Bad requests: a time stamp without sample time, too many frames, an enqueued buffer.
            var hostOnly = AudioTimeStamp()
            hostOnly.mFlags = .hostTimeValid
            #expect(AudioQueueOfflineRender(q, &hostOnly, capture!, 0) == kAudio_ParamError)
            #expect(AudioQueueOfflineRender(q, &time, capture!, 4096 / 8 + 1) == kAudio_ParamError)
            data!.pointee.mAudioDataByteSize = 48000 * 4
            #expect(AudioQueueEnqueueBuffer(q, data!, 0, nil) == noErr)
            #expect(AudioQueueOfflineRender(q, &time, data!, 16) == kAudioQueueErr_BufferInQueue)
            // Time runs forward: the priming call, 256 frames, then a time before them is refused.
            #expect(AudioQueueStart(q, nil) == noErr)
            #expect(AudioQueueOfflineRender(q, &time, capture!, 0) == noErr)
            #expect(AudioQueueOfflineRender(q, &time, capture!, 256) == noErr)
            #expect(capture!.pointee.mAudioDataByteSize == 256 * 8)
            #expect(AudioQueueOfflineRender(q, &time, capture!, 256) == kAudio_ParamError)
            time.mSampleTime = 256
            #expect(AudioQueueOfflineRender(q, &time, capture!, 256) == noErr)
            #expect(AudioQueueStop(q, true) == noErr)
            // Back to the device: connected again, and offline renders are refused.
            #expect(AudioQueueSetOfflineRenderFormat(q, nil, nil) == noErr)
            #expect(AudioQueueGetProperty(q, kAudioQueueDeviceProperty_NumberChannels, &channels, &size) == noErr)
            #expect(channels == 2)
            #expect(AudioQueueOfflineRender(q, &time, capture!, 256) == kAudioQueueErr_InvalidOfflineMode)
        }
        // An input queue has no offline mode.
        let device = ManualDriver(periodFrames: 256)
        var format = lpcm(channels: 2)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, { _, _, _, _, _, _ in }, nil, nil, nil, 0, &queue, device: device) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        #expect(AudioQueueSetOfflineRenderFormat(q, &format, nil) == kAudioQueueErr_InvalidQueueType)
    }
}
