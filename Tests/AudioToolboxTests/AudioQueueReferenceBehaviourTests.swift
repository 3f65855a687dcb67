import Testing
import Foundation
import Synchronization
@testable import AudioToolbox
import QueueCore
import JackTestSupport

/// A playback callback that blocks while `stall` is set (a callback holding the queue thread).
final class StallingContext: @unchecked Sendable {
    let stall = Mutex(true)
    let entered = Mutex(0)
}

func stallingOutputCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let context = Unmanaged<StallingContext>.fromOpaque(userData!).takeUnretainedValue()
    context.entered.withLock { $0 += 1 }
    while context.stall.withLock({ $0 }) { usleep(1000) }
}

/// The partial behaviours of issue #12, made whole: each test fails on the code before it.
@Suite struct AudioQueueReferenceBehaviourTests {
    /// Sample `frame` of system capture port `port`: exact in 16 bits.
    static func captured(_ port: Int, _ frame: Int64) -> Float { Float(signal(Int(frame), port)) / 32768 }

    func makeInput(_ driver: ManualDriver, _ context: RecordingContext, framesPerBuffer: Int, buffers: Int) throws -> AudioQueueRef {
        driver.setCaptureSignal(Self.captured)
        var format = lpcm(channels: 2)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        for _ in 0..<buffers {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, UInt32(framesPerBuffer * 4), &buffer) == noErr)
            #expect(AudioQueueEnqueueBuffer(q, buffer!, 0, nil) == noErr)
        }
        return q
    }

    /// The interleaved 16-bit signal the capture ports deliver from device frame `start`.
    func expectedCapture(from start: Int64, frames: Int) -> [Int16] {
        (0..<frames).flatMap { i in (0..<2).map { signal(Int(start) + i, $0) } }
    }

    @Test func flushOnAnInputQueueDeliversThePartlyFilledBufferWithWhatWasCaptured() throws {
        let driver = ManualDriver(periodFrames: 256)
        let context = RecordingContext()
        let queue = try makeInput(driver, context, framesPerBuffer: 4096, buffers: 2)
        defer { AudioQueueDispose(queue, true) }
        let start = driver.frameTime
        #expect(AudioQueueStart(queue, nil) == noErr)
        driver.run(cycles: 3)
        #expect(context.samples.withLock { $0.count } == 0, "no buffer is full yet")
        #expect(AudioQueueFlush(queue) == noErr)
        // Flush returns once the callback has had the buffer: 768 frames, not a full one.
        let starts = context.starts.withLock { $0 }
        #expect(starts.count == 1)
        #expect(starts.first.map { Int($0.bytes) } == 768 * 4)
        #expect(starts.first?.sampleTime == 0)
        #expect(firstMismatch(context.samples.withLock { $0 }, expectedCapture(from: start, frames: 768)) == nil)
        // Capture goes on into the next buffer, from frame 768.
        driver.run(cycles: 16)
        #expect(waitUntil { context.starts.withLock { $0.count } == 2 })
        #expect(context.starts.withLock { $0.last?.sampleTime } == 768)
        #expect(firstMismatch(context.samples.withLock { $0 }, expectedCapture(from: start, frames: 768 + 4096)) == nil)
    }

    @Test func disposeFalseOnARecordingQueueDeliversWhatWasCapturedFirst() throws {
        let driver = ManualDriver(periodFrames: 256)
        let context = RecordingContext()
        let queue = try makeInput(driver, context, framesPerBuffer: 1024, buffers: 3)
        let start = driver.frameTime
        #expect(AudioQueueStart(queue, nil) == noErr)
        driver.run(cycles: 6)
        #expect(waitUntil { context.starts.withLock { $0.count } == 1 })
        #expect(AudioQueueDispose(queue, false) == noErr)
        // The 512 frames in the second buffer come back before the queue goes away.
        #expect(waitUntil { AudioQueueStop(queue, true) == kAudio_ParamError }, "the queue is disposed of")
        let sizes: [UInt32] = context.starts.withLock { $0.map(\.bytes) }
        // Then the buffers left, empty, as Stop(false) returns them.
        #expect(Array(sizes.prefix(2)) == [4096, 2048])
        #expect(sizes.dropFirst(2).allSatisfy { $0 == 0 })
        #expect(firstMismatch(context.samples.withLock { $0 }, expectedCapture(from: start, frames: 1536)) == nil)
        // Buffers re-enqueued by the callbacks meanwhile are refused.
        let refusals = context.enqueueErrors.withLock { $0 }
        #expect(refusals.allSatisfy { $0 == kAudioQueueErr_DisposalPending || $0 == kAudioQueueErr_EnqueueDuringReset }, "\(refusals)")
    }

    @Test func resetAndStopFailWhenACallbackHoldsTheQueueThreadPastTheTimeout() throws {
        let driver = ManualDriver(periodFrames: 256)
        // Output: a buffer played goes back to a callback that blocks.
        let stalling = StallingContext()
        var format = lpcm(channels: 2)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, stallingOutputCallback, Unmanaged.passUnretained(stalling).toOpaque(),
                                    nil, nil, 0, &queue, device: driver) == noErr)
        let output = try #require(queue)
        defer { AudioQueueDispose(output, true) }
        try AudioQueueRegistry.object(output).engine.controlTimeout = 0.3
        for _ in 0..<2 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(output, 1024 * 4, &buffer) == noErr)
            buffer!.pointee.mAudioDataByteSize = 1024 * 4
            #expect(AudioQueueEnqueueBuffer(output, buffer!, 0, nil) == noErr)
        }
        #expect(AudioQueueStart(output, nil) == noErr)
        driver.run(cycles: 5)
        #expect(waitUntil { stalling.entered.withLock { $0 } == 1 })
        let began = Date()
        #expect(AudioQueueReset(output) == kAudioQueueErr_InvalidRunState)
        #expect(Date().timeIntervalSince(began) >= 0.25)
        #expect(AudioQueueStop(output, true) == kAudioQueueErr_InvalidRunState)
        stalling.stall.withLock { $0 = false }
        #expect(AudioQueueReset(output) == noErr)
        #expect(AudioQueueStop(output, true) == noErr)

        // Input: a filled buffer goes to a callback that blocks.
        let context = RecordingContext()
        context.stall.withLock { $0 = true }
        let input = try makeInput(driver, context, framesPerBuffer: 256, buffers: 2)
        defer { AudioQueueDispose(input, true) }
        try AudioQueueRegistry.object(input).engine.controlTimeout = 0.3
        #expect(AudioQueueStart(input, nil) == noErr)
        driver.run(cycles: 2)
        usleep(100_000)
        #expect(AudioQueueReset(input) == kAudioQueueErr_InvalidRunState)
        #expect(AudioQueueFlush(input) == kAudioQueueErr_InvalidRunState)
        context.stall.withLock { $0 = false }
        #expect(AudioQueueFlush(input) == noErr)
        #expect(AudioQueueReset(input) == noErr)
    }

    @Test func enqueueWithParametersTakesVolumeRampTimePlayRateAndPitch() throws {
        let driver = ManualDriver(periodFrames: 256)
        let format = lpcm(channels: 2, bits: 32, float: true)
        let q = try silentOutputQueue(format, device: driver)
        defer { AudioQueueDispose(q, true) }
        var buffers: [AudioQueueBufferRef] = []
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, 1000 * 8, &buffer) == noErr)
            let samples = buffer!.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for i in 0..<2000 { samples[i] = 1 }
            buffer!.pointee.mAudioDataByteSize = 1000 * 8
            buffers.append(buffer!)
        }
        // Out of range: the documented ranges.
        for (id, value) in [(kAudioQueueParam_PlayRate, Float(2.5)), (kAudioQueueParam_Pitch, -2500),
                            (kAudioQueueParam_VolumeRampTime, -1)] {
            var event = AudioQueueParameterEvent(mID: id, mValue: value)
            #expect(AudioQueueEnqueueBufferWithParameters(q, buffers[0], 0, nil, 0, 0, 1, &event, nil, nil) == kAudio_ParamError)
        }
        #expect(AudioQueueEnqueueBuffer(q, buffers[0], 0, nil) == noErr)
        // Volume 0 ramped over 480 frames (the ramp time event listed after the volume: it still applies).
        var events = [AudioQueueParameterEvent(mID: kAudioQueueParam_Volume, mValue: 0),
                      AudioQueueParameterEvent(mID: kAudioQueueParam_VolumeRampTime, mValue: 0.01)]
        #expect(AudioQueueEnqueueBufferWithParameters(q, buffers[1], 0, nil, 0, 0, 2, &events, nil, nil) == noErr)
        var timePitch = [AudioQueueParameterEvent(mID: kAudioQueueParam_PlayRate, mValue: 1),
                         AudioQueueParameterEvent(mID: kAudioQueueParam_Pitch, mValue: 0)]
        #expect(AudioQueueEnqueueBufferWithParameters(q, buffers[2], 0, nil, 0, 0, 2, &timePitch, nil, nil) == noErr)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 14)
        let played = driver.recordedPlayback(port: 0).samples
        #expect(played[0..<1000].allSatisfy { $0 == 1 })
        // From buffer 1's first frame the gain falls linearly to 0 over 480 frames.
        for i in [0, 100, 240, 479] {
            let expected: Float = 1 - Float(i + 1) / 480
            let got: Float = played[1000 + i]
            let deviation: Float = abs(got - expected)
            #expect(deviation < 1e-4, "frame \(i) of the ramp: \(got)")
        }
        #expect(played[1480..<3000].allSatisfy { $0 == 0 })
        var rampTime: Float = 0
        #expect(AudioQueueGetParameter(q, kAudioQueueParam_VolumeRampTime, &rampTime) == noErr)
        let rampDeviation: Float = abs(rampTime - 0.01)
        #expect(rampDeviation < 1e-6, "the event's ramp time is the parameter's value from then on")
    }
}

/// Records which properties listeners were told about.
final class PropertyChangeLog: @unchecked Sendable {
    let ids = Mutex<[AudioQueuePropertyID]>([])
}

func propertyChangeListener(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ id: AudioQueuePropertyID) {
    Unmanaged<PropertyChangeLog>.fromOpaque(userData!).takeUnretainedValue().ids.withLock { $0.append(id) }
}

/// ChannelAssignments, ChannelLayout on the ports, and the device listeners.
@Suite struct AudioQueueChannelMappingTests {
    /// A float queue of `channels` channels playing channel c as the constant c + 1.
    func makeConstantQueue(channels: Int, device: DeviceProvider) throws -> AudioQueueRef {
        let format = lpcm(channels: UInt32(channels), bits: 32, float: true)
        let q = try silentOutputQueue(format, device: device)
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, UInt32(2048 * 4 * channels), &buffer) == noErr)
        let samples = buffer!.pointee.mAudioData.assumingMemoryBound(to: Float.self)
        for f in 0..<2048 { for c in 0..<channels { samples[f * channels + c] = Float(c + 1) / 8 } }
        buffer!.pointee.mAudioDataByteSize = UInt32(2048 * 4 * channels)
        #expect(AudioQueueEnqueueBuffer(q, buffer!, 0, nil) == noErr)
        return q
    }

    /// What each system playback port heard (its first nonzero value, 0 if silent), as channel numbers.
    func heard(_ driver: ManualDriver) -> [Int] {
        (0..<driver.physicalPortCount).map { p in
            Int(((driver.recordedPlayback(port: p).samples.first { $0 != 0 } ?? 0) * 8).rounded())
        }
    }

    @Test func channelAssignmentsConnectEachChannelToThePortItNames() throws {
        let driver = ManualDriver(periodFrames: 256, physicalPortCount: 6)
        let q = try makeConstantQueue(channels: 2, device: driver)
        defer { AudioQueueDispose(q, true) }
        let log = PropertyChangeLog()
        #expect(AudioQueueAddPropertyListener(q, kAudioQueueDeviceProperty_NumberChannels, propertyChangeListener,
                                              Unmanaged.passUnretained(log).toOpaque()) == noErr)
        var size: UInt32 = 0
        #expect(AudioQueueGetPropertySize(q, kAudioQueueProperty_ChannelAssignments, &size) == noErr)
        #expect(size == 2 * UInt32(MemoryLayout<AudioQueueChannelAssignment>.size))
        // Channel 1 to physical port 4 ("system", channel 4), channel 2 to a port by name.
        let names = ["system", "system:playback_2", "nobody:here", ""].map { CFString.make($0) }  // alive while used
        var assignments = [
            AudioQueueChannelAssignment(mDeviceUID: Unmanaged.passUnretained(names[0]), mChannelNumber: 4),
            AudioQueueChannelAssignment(mDeviceUID: Unmanaged.passUnretained(names[1]), mChannelNumber: 0),
        ]
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_ChannelAssignments, &assignments, size - 1) == kAudioQueueErr_InvalidPropertySize)
        var wrong = assignments
        wrong[1] = AudioQueueChannelAssignment(mDeviceUID: Unmanaged.passUnretained(names[2]), mChannelNumber: 0)
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_ChannelAssignments, &wrong, size) == kAudioQueueErr_InvalidDevice)
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_ChannelAssignments, &assignments, size) == noErr)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 4)
        #expect(heard(driver) == [0, 2, 0, 1, 0, 0])
        // Reading them back: the port names, the device channel numbers.
        var back = [AudioQueueChannelAssignment](repeating: AudioQueueChannelAssignment(
            mDeviceUID: Unmanaged.passUnretained(names[3]), mChannelNumber: 0), count: 2)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_ChannelAssignments, &back, &size) == noErr)
        #expect(back.map { String($0.mDeviceUID.takeRetainedValue()) } == ["system:playback_4", "system:playback_2"])
        #expect(back.map(\.mChannelNumber) == [4, 2])
        withExtendedLifetime(names) {}
        // Two ports connected before (system 1, 2), two now: the count did not change; going
        // offline (no ports) and back changes it twice.
        var offline = lpcm(channels: 2, bits: 32, float: true)
        #expect(AudioQueueStop(q, true) == noErr)
        #expect(AudioQueueSetOfflineRenderFormat(q, &offline, nil) == noErr)
        #expect(AudioQueueSetOfflineRenderFormat(q, nil, nil) == noErr)
        #expect(waitUntil { log.ids.withLock { $0.count } == 2 })
        var channels: UInt32 = 0
        var four = UInt32(4)
        #expect(AudioQueueGetProperty(q, kAudioQueueDeviceProperty_NumberChannels, &channels, &four) == noErr)
        #expect(channels == 2, "back online, connected as assigned")
    }

    @Test func channelAssignmentsOfARecordingQueue() throws {
        let driver = ManualDriver(periodFrames: 256, physicalPortCount: 4)
        driver.setCaptureSignal { port, _ in Float(port + 1) / 8 }
        let context = RecordingContext()
        var format = lpcm(channels: 2)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var buffer: AudioQueueBufferRef?
        #expect(AudioQueueAllocateBuffer(q, 256 * 4, &buffer) == noErr)
        #expect(AudioQueueEnqueueBuffer(q, buffer!, 0, nil) == noErr)
        let names = [CFString.make("system:capture_3"), CFString.make("system")]  // alive while used
        var assignments = [
            AudioQueueChannelAssignment(mDeviceUID: Unmanaged.passUnretained(names[0]), mChannelNumber: 0),
            AudioQueueChannelAssignment(mDeviceUID: Unmanaged.passUnretained(names[1]), mChannelNumber: 1),
        ]
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_ChannelAssignments, &assignments,
                                      UInt32(2 * MemoryLayout<AudioQueueChannelAssignment>.size)) == noErr)
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 2)
        #expect(waitUntil { context.samples.withLock { $0.count } >= 512 })
        let samples = context.samples.withLock { $0 }
        #expect(samples[0] == 3 * 4096 && samples[1] == 1 * 4096, "channel 1 from capture 3, channel 2 from capture 1")
        withExtendedLifetime(names) {}
    }

    @Test func aChannelLayoutsLabelsPlaceTheChannelsOnThePhysicalPorts() throws {
        let driver = ManualDriver(periodFrames: 256, physicalPortCount: 6)
        let q = try makeConstantQueue(channels: 6, device: driver)
        defer { AudioQueueDispose(q, true) }
        // MPEG 5.1 D: C L R Ls Rs LFE. The physical ports are in WAVE order: L R C LFE Ls Rs.
        var layout = AudioChannelLayout()
        layout.mChannelLayoutTag = kAudioChannelLayoutTag_MPEG_5_1_D
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_ChannelLayout, &layout, 12) == noErr)
        driver.startRecordingPlayback()
        #expect(AudioQueueStart(q, nil) == noErr)
        driver.run(cycles: 4)
        #expect(heard(driver) == [2, 3, 1, 6, 4, 5])
        var device: CFString?
        var size = UInt32(8)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_CurrentDevice, &device, &size) == noErr)
        #expect(device.map { String($0) } == "system", "CurrentDevice stays what was set")
    }

    @Test func aSampleRateChangeIsHeardByDeviceRateAndConverterErrorListeners() throws {
        let driver = ManualDriver(periodFrames: 256)
        let q = try makeConstantQueue(channels: 2, device: driver)
        defer { AudioQueueDispose(q, true) }
        let log = PropertyChangeLog()
        for id in [kAudioQueueDeviceProperty_SampleRate, kAudioQueueProperty_ConverterError] {
            #expect(AudioQueueAddPropertyListener(q, id, propertyChangeListener, Unmanaged.passUnretained(log).toOpaque()) == noErr)
        }
        var error: UInt32 = 9
        var size = UInt32(4)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_ConverterError, &error, &size) == noErr)
        #expect(error == 0)
        try #require(driver.devices.first).simulateSampleRateChange(44100)
        #expect(waitUntil { Set(log.ids.withLock { $0 }) == [kAudioQueueDeviceProperty_SampleRate, kAudioQueueProperty_ConverterError] })
        // The queue's converter was made for 48 kHz: 'fmt?' (kAudioConverterErr_FormatNotSupported).
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_ConverterError, &error, &size) == noErr)
        #expect(OSStatus(bitPattern: error) == kAudioFormatUnsupportedDataFormatError)
    }
}

@Suite struct AudioQueueCannotStartTests {
    @Test func aQueueMadeForAnotherServerRateCannotStart() throws {
        let driver = ManualDriver(periodFrames: 256)
        var format = lpcm(channels: 2)
        let q = try silentOutputQueue(format, device: driver)
        defer { AudioQueueDispose(q, true) }
        #expect(AudioQueueStart(q, nil) == noErr)
        #expect(AudioQueueStop(q, true) == noErr)
        try #require(driver.devices.first).simulateSampleRateChange(44100)
        #expect(AudioQueueStart(q, nil) == kAudioQueueErr_CannotStart)
        // A new queue is made for the new rate.
        var fresh: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &fresh, device: driver) == noErr)
        #expect(AudioQueueStart(try #require(fresh), nil) == noErr)
        AudioQueueDispose(fresh!, true)
    }
}
