import Foundation
import Testing
import Synchronization
import AudioToolbox
import QueueCore
import JackTestSupport

/// What a test tap saw: the frames of each call, its flags, the source audio, queue times.
final class TapLog: @unchecked Sendable {
    let calls = Mutex<[(frames: UInt32, flags: UInt32)]>([])
    let seen = Mutex<[Float]>([])
    let queueTimes = Mutex<[(time: Float64, frames: UInt32, tapFrames: UInt32)]>([])
    let statuses = Mutex<[OSStatus]>([])
    var gain: Float = 0.5
}

/// A non-siphoning tap: takes the source (left channel logged) and scales it by `gain` in place.
func gainTap(_ client: UnsafeMutableRawPointer?, _ tap: AudioQueueProcessingTapRef, _ frames: UInt32,
             _ time: UnsafeMutablePointer<AudioTimeStamp>, _ flags: UnsafeMutablePointer<AudioQueueProcessingTapFlags>,
             _ outFrames: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>) {
    let log = Unmanaged<TapLog>.fromOpaque(client!).takeUnretainedValue()
    log.calls.withLock { $0.append((frames, flags.pointee.rawValue)) }
    var got: UInt32 = 0
    var sourceFlags = AudioQueueProcessingTapFlags()
    let status = AudioQueueProcessingTapGetSourceAudio(tap, frames, time, &sourceFlags, &got, data)
    var queueTime: Float64 = 0
    var queueFrames: UInt32 = 0
    let timeStatus = AudioQueueProcessingTapGetQueueTime(tap, &queueTime, &queueFrames)
    log.statuses.withLock { $0.append(contentsOf: [status, timeStatus]) }
    log.queueTimes.withLock { $0.append((queueTime, queueFrames, frames)) }
    withUnsafeMutablePointer(to: &data.pointee.mBuffers) { first in
        let buffers = UnsafeMutableRawPointer(first).assumingMemoryBound(to: AudioBuffer.self)
        for c in 0..<Int(data.pointee.mNumberBuffers) {
            let samples = buffers[c].mData!.assumingMemoryBound(to: Float.self)
            if c == 0 { log.seen.withLock { $0.append(contentsOf: UnsafeBufferPointer(start: samples, count: Int(got))) } }
            for i in 0..<Int(got) { samples[i] *= log.gain }
        }
    }
    outFrames.pointee = got
    flags.pointee = sourceFlags
}

/// A siphon: logs the left channel, then scribbles over its input (which must not be heard).
func siphonTap(_ client: UnsafeMutableRawPointer?, _ tap: AudioQueueProcessingTapRef, _ frames: UInt32,
               _ time: UnsafeMutablePointer<AudioTimeStamp>, _ flags: UnsafeMutablePointer<AudioQueueProcessingTapFlags>,
               _ outFrames: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>) {
    let log = Unmanaged<TapLog>.fromOpaque(client!).takeUnretainedValue()
    log.calls.withLock { $0.append((frames, flags.pointee.rawValue)) }
    var got: UInt32 = 0
    var ignored = AudioQueueProcessingTapFlags()
    log.statuses.withLock { $0.append(AudioQueueProcessingTapGetSourceAudio(tap, frames, time, &ignored, &got, data)) }
    withUnsafeMutablePointer(to: &data.pointee.mBuffers) { first in
        let buffers = UnsafeMutableRawPointer(first).assumingMemoryBound(to: AudioBuffer.self)
        let samples = buffers[0].mData!.assumingMemoryBound(to: Float.self)
        log.seen.withLock { $0.append(contentsOf: UnsafeBufferPointer(start: samples, count: Int(frames))) }
        samples.update(repeating: 0, count: Int(frames))
    }
}

@Suite struct ProcessingTapTests {
    /// A float32 stereo queue on `driver` with one buffer of `frames` frames of a test signal.
    final class Rig {
        let driver: ManualDriver
        var queue: AudioQueueRef!
        var buffer: AudioQueueBufferRef!
        let frames: Int
        let source: [Float]

        init(_ driver: ManualDriver, frames: Int) throws {
            self.driver = driver
            self.frames = frames
            source = (0..<frames).map { Float(sin(Double($0) * 0.031)) * 0.8 + 0.001 }
            var format = lpcm(bits: 32, float: true)
            var q: AudioQueueRef?
            #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &q, device: driver) == noErr)
            queue = try #require(q)
            var b: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(queue, UInt32(frames * 8), &b) == noErr)
            buffer = try #require(b)
            let samples = buffer.pointee.mAudioData.assumingMemoryBound(to: Float.self)
            for f in 0..<frames { samples[2 * f] = source[f]; samples[2 * f + 1] = source[f] }
            buffer.pointee.mAudioDataByteSize = UInt32(frames * 8)
        }

        /// Installs a tap logging into `log`; returns it, its maximum frames and processing format.
        func tap(_ callback: AudioQueueProcessingTapCallback, _ log: TapLog, _ flags: AudioQueueProcessingTapFlags)
            -> (tap: AudioQueueProcessingTapRef?, maxFrames: UInt32, format: AudioStreamBasicDescription) {
            var maxFrames: UInt32 = 0
            var format = AudioStreamBasicDescription()
            var tap: AudioQueueProcessingTapRef?
            #expect(AudioQueueProcessingTapNew(queue, callback, Unmanaged.passUnretained(log).toOpaque(), flags,
                                               &maxFrames, &format, &tap) == noErr)
            return (tap, maxFrames, format)
        }

        /// Enqueues the buffer, starts, stops once played; returns the left channel heard.
        func play() -> [Float] {
            #expect(AudioQueueEnqueueBuffer(queue, buffer, 0, nil) == noErr)
            driver.startRecordingPlayback()
            #expect(AudioQueueStart(queue, nil) == noErr)
            #expect(AudioQueueStop(queue, false) == noErr)
            var started = false
            for _ in 0..<2000 {
                var running: UInt32 = 1
                var size = UInt32(4)
                AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size)
                if running == 1 { started = true } else if started { break }
                driver.run(cycles: 1)
            }
            driver.run(cycles: 2)
            return driver.recordedPlayback(port: 0).samples
        }
    }

    @Test func aTapThatChangesSamplesIsHeard() throws {
        let driver = ManualDriver(periodFrames: 256)
        let rig = try Rig(driver, frames: 10000)
        defer { AudioQueueDispose(rig.queue, true) }
        let log = TapLog()
        let (tap, maxFrames, format) = rig.tap(gainTap, log, .preEffects)
        #expect(maxFrames > 0)
        #expect(format.mSampleRate == 48000 && format.mChannelsPerFrame == 2 && format.mBitsPerChannel == 32)
        #expect(format.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0 && format.mFormatFlags & kAudioFormatFlagIsFloat != 0)
        let played = rig.play()
        let start = try #require(played.firstIndex { $0 != 0 })
        #expect(start == 0)
        #expect(firstMismatch(Array(played[start..<start + rig.frames]), rig.source.map { $0 * 0.5 }) == nil)
        #expect(log.seen.withLock { $0 } == rig.source, "GetSourceAudio gives the source, in order")
        #expect(log.statuses.withLock { $0 }.allSatisfy { $0 == noErr })
        let calls = log.calls.withLock { $0 }
        #expect(calls.first?.flags == AudioQueueProcessingTapFlags([.preEffects, .startOfStream]).rawValue)
        #expect(calls.dropFirst().allSatisfy { $0.flags == AudioQueueProcessingTapFlags.preEffects.rawValue })
        #expect(calls.allSatisfy { $0.frames <= maxFrames })
        // Queue times are continuous: each call starts where the one before ended.
        let times = log.queueTimes.withLock { $0 }
        #expect(zip(times, times.dropFirst()).allSatisfy { $0.time + Float64($0.frames) == $1.time })
        #expect(AudioQueueProcessingTapDispose(tap!) == noErr)
    }

    @Test func aSiphonSeesTheAudioAndCannotChangeIt() throws {
        let driver = ManualDriver(periodFrames: 256)
        let rig = try Rig(driver, frames: 10000)
        defer { AudioQueueDispose(rig.queue, true) }
        let log = TapLog()
        _ = rig.tap(siphonTap, log, [.postEffects, .siphon])
        let played = rig.play()
        #expect(firstMismatch(Array(played[0..<rig.frames]), rig.source) == nil)
        #expect(log.seen.withLock { $0 } == rig.source)
        #expect(log.statuses.withLock { $0 }.allSatisfy { $0 == kAudioQueueErr_InvalidTapContext },
                "a siphon does not call GetSourceAudio")
    }

    /// After the time/pitch unit at PlayRate 2, each tap frame covers two frames of queue time.
    @Test func aPostEffectsTapSeesQueueTimeAtThePlayRate() throws {
        let driver = ManualDriver(periodFrames: 256)
        let rig = try Rig(driver, frames: 24000)
        defer { AudioQueueDispose(rig.queue, true) }
        var one: UInt32 = 1
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_EnableTimePitch, &one, 4) == noErr)
        #expect(AudioQueueSetParameter(rig.queue, kAudioQueueParam_PlayRate, 2) == noErr)
        let log = TapLog()
        log.gain = 1
        _ = rig.tap(gainTap, log, .postEffects)
        _ = rig.play()
        let times = log.queueTimes.withLock { $0 }.filter { $0.tapFrames > 0 }
        let tapFrames = times.reduce(0) { $0 + Int($1.tapFrames) }
        let queueFrames = times.reduce(0) { $0 + Int($1.frames) }
        #expect(abs(tapFrames - 12000) <= 48, "the tap saw \(tapFrames) frames")
        #expect(abs(queueFrames - 24000) <= 48, "covering \(queueFrames) frames of queue time")
    }

    @Test func misuseGetsResultCodes() throws {
        let driver = ManualDriver(periodFrames: 256)
        let rig = try Rig(driver, frames: 4800)
        let log = TapLog()
        let user = Unmanaged.passUnretained(log).toOpaque()
        var maxFrames: UInt32 = 0
        var format = AudioStreamBasicDescription()
        var tap: AudioQueueProcessingTapRef?
        #expect(AudioQueueProcessingTapNew(rig.queue, gainTap, user, [.preEffects, .postEffects], &maxFrames, &format, &tap)
                == kAudioQueueErr_InvalidTapType)
        #expect(AudioQueueProcessingTapNew(rig.queue, gainTap, user, [], &maxFrames, &format, &tap) == kAudioQueueErr_InvalidTapType)
        #expect(AudioQueueProcessingTapNew(rig.queue, gainTap, user, .preEffects, &maxFrames, &format, &tap) == noErr)
        var second: AudioQueueProcessingTapRef?
        #expect(AudioQueueProcessingTapNew(rig.queue, gainTap, user, .postEffects, &maxFrames, &format, &second)
                == kAudioQueueErr_TooManyTaps)
        // Outside the callback.
        var got: UInt32 = 0
        var flags = AudioQueueProcessingTapFlags()
        var time = AudioTimeStamp()
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 1, mDataByteSize: 0, mData: nil))
        #expect(AudioQueueProcessingTapGetSourceAudio(tap!, 16, &time, &flags, &got, &list) == kAudio_ParamError,
                "one buffer for two channels")
        var sampleTime: Float64 = 0
        #expect(AudioQueueProcessingTapGetQueueTime(tap!, &sampleTime, &got) == kAudioQueueErr_InvalidTapContext)
        #expect(AudioQueueProcessingTapGetQueueTime(OpaquePointer(bitPattern: 0x1234)!, &sampleTime, &got) == kAudio_ParamError)
        // Only while stopped.
        #expect(AudioQueueEnqueueBuffer(rig.queue, rig.buffer, 0, nil) == noErr)
        #expect(AudioQueueStart(rig.queue, nil) == noErr)
        driver.run(cycles: 2)
        #expect(AudioQueueProcessingTapDispose(tap!) == kAudioQueueErr_InvalidRunState)
        #expect(AudioQueueStop(rig.queue, true) == noErr)
        #expect(AudioQueueProcessingTapDispose(tap!) == noErr)
        #expect(AudioQueueProcessingTapDispose(tap!) == kAudio_ParamError, "disposed already")
        #expect(AudioQueueDispose(rig.queue, true) == noErr)
        // An input queue's tap has no queue time to give.
        var inputFormat = lpcm()
        var input: AudioQueueRef?
        #expect(AudioQueueNewInput(&inputFormat, handleInputBuffer, nil, nil, nil, 0, &input, device: driver) == noErr)
        #expect(AudioQueueProcessingTapNew(input!, gainTap, user, .preEffects, &maxFrames, &format, &tap) == noErr)
        #expect(AudioQueueProcessingTapNew(input!, gainTap, user, .preEffects, &maxFrames, &format, &second) == kAudioQueueErr_TooManyTaps)
        #expect(AudioQueueDispose(input!, true) == noErr)
    }

    @Test func timePitchPropertiesAndParameters() throws {
        let driver = ManualDriver(periodFrames: 256)
        let rig = try Rig(driver, frames: 4800)
        defer { AudioQueueDispose(rig.queue, true) }
        var value: UInt32 = 7
        var size = UInt32(4)
        #expect(AudioQueueGetProperty(rig.queue, kAudioQueueProperty_EnableTimePitch, &value, &size) == noErr && value == 0)
        #expect(AudioQueueGetProperty(rig.queue, kAudioQueueProperty_TimePitchAlgorithm, &value, &size) == noErr)
        #expect(value == kAudioQueueTimePitchAlgorithm_Spectral)
        var algorithm = kAudioQueueTimePitchAlgorithm_Varispeed
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_TimePitchAlgorithm, &algorithm, 4) == noErr)
        #expect(AudioQueueGetProperty(rig.queue, kAudioQueueProperty_TimePitchAlgorithm, &value, &size) == noErr)
        #expect(value == kAudioQueueTimePitchAlgorithm_Varispeed)
        var bogus: UInt32 = 0x6C717A6C // 'lqzl', iOS only
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_TimePitchAlgorithm, &bogus, 4) == kAudioQueueErr_InvalidPropertyValue)
        var one: UInt32 = 1
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_EnableTimePitch, &one, 4) == noErr)
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_TimePitchBypass, &one, 4) == noErr)
        #expect(AudioQueueGetProperty(rig.queue, kAudioQueueProperty_TimePitchBypass, &value, &size) == noErr && value == 1)
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_EnableTimePitch, &one, 2) == kAudioQueueErr_InvalidPropertySize)
        // Parameters: Apple's ranges (outside them kAudio_ParamError, the value kept, as for
        // a buffer's events); scheduled with a buffer.
        var rate: AudioQueueParameterValue = 0
        #expect(AudioQueueSetParameter(rig.queue, kAudioQueueParam_PlayRate, 2) == noErr)
        #expect(AudioQueueSetParameter(rig.queue, kAudioQueueParam_PlayRate, 3) == kAudio_ParamError)
        #expect(AudioQueueSetParameter(rig.queue, kAudioQueueParam_PlayRate, 0.49) == kAudio_ParamError)
        #expect(AudioQueueGetParameter(rig.queue, kAudioQueueParam_PlayRate, &rate) == noErr && rate == 2)
        #expect(AudioQueueSetParameter(rig.queue, kAudioQueueParam_Pitch, -2400) == noErr)
        #expect(AudioQueueSetParameter(rig.queue, kAudioQueueParam_Pitch, -3000) == kAudio_ParamError)
        #expect(AudioQueueSetParameter(rig.queue, kAudioQueueParam_Pitch, 2400.5) == kAudio_ParamError)
        #expect(AudioQueueGetParameter(rig.queue, kAudioQueueParam_Pitch, &rate) == noErr && rate == -2400)
        var events = [AudioQueueParameterEvent(mID: kAudioQueueParam_PlayRate, mValue: 0.5),
                      AudioQueueParameterEvent(mID: kAudioQueueParam_Pitch, mValue: 100)]
        #expect(AudioQueueEnqueueBufferWithParameters(rig.queue, rig.buffer, 0, nil, 0, 0, 2, &events, nil, nil) == noErr)
        #expect(AudioQueuePrime(rig.queue, 0, nil) == noErr)
        #expect(AudioQueueGetParameter(rig.queue, kAudioQueueParam_PlayRate, &rate) == noErr && rate == 0.5)
        // Running: the unit and its algorithm stay as they are.
        #expect(AudioQueueStart(rig.queue, nil) == noErr)
        var zero: UInt32 = 0
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_EnableTimePitch, &zero, 4) == kAudioQueueErr_InvalidRunState)
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_TimePitchAlgorithm, &algorithm, 4) == kAudioQueueErr_InvalidRunState)
        #expect(AudioQueueSetProperty(rig.queue, kAudioQueueProperty_TimePitchBypass, &zero, 4) == noErr, "bypass any time")
    }

    /// What the ManualDriver's capture ports carry.
    @Sendable static func captured(_ port: Int, _ frame: Int64) -> Float {
        let ramp = Float(frame % 1000 - 500) / 1024
        return ramp + Float(port) / 4096
    }

    /// A tap on a recording queue: what the buffers get is the tap's output, sample for sample.
    @Test func aTapOnARecordingQueueChangesWhatIsRecorded() throws {
        let driver = ManualDriver(periodFrames: 256)
        driver.setCaptureSignal(Self.captured)
        let context = RecordingContext()
        var format = lpcm(bits: 32, float: true)
        var q: AudioQueueRef?
        #expect(AudioQueueNewInput(&format, handleInputBuffer, Unmanaged.passUnretained(context).toOpaque(), nil, nil, 0, &q, device: driver) == noErr)
        let queue = try #require(q)
        defer { AudioQueueDispose(queue, true) }
        let log = TapLog()
        var maxFrames: UInt32 = 0
        var tapFormat = AudioStreamBasicDescription()
        var tap: AudioQueueProcessingTapRef?
        #expect(AudioQueueProcessingTapNew(queue, gainTap, Unmanaged.passUnretained(log).toOpaque(), .preEffects,
                                           &maxFrames, &tapFormat, &tap) == noErr)
        for _ in 0..<4 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(queue, 4096 * 8, &buffer) == noErr)
            #expect(AudioQueueEnqueueBuffer(queue, buffer!, 0, nil) == noErr)
        }
        let start = driver.frameTime + 512
        var time = AudioTimeStamp()
        time.mSampleTime = Double(start)
        time.mFlags = .sampleTimeValid
        #expect(AudioQueueStart(queue, &time) == noErr)
        driver.run(frames: 20000)
        #expect(waitUntil { context.bytes.withLock { $0.count } >= 16384 * 8 })
        #expect(AudioQueueStop(queue, true) == noErr)
        let bytes = context.bytes.withLock { $0 }
        let floats = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let frames = min(floats.count / 2, 16384)
        let expectedLeft = (0..<frames).map { Self.captured(0, start + Int64($0)) * 0.5 }
        let expectedRight = (0..<frames).map { Self.captured(1, start + Int64($0)) * 0.5 }
        #expect(firstMismatch((0..<frames).map { floats[2 * $0] }, expectedLeft) == nil)
        #expect(firstMismatch((0..<frames).map { floats[2 * $0 + 1] }, expectedRight) == nil)
        #expect(log.statuses.withLock { $0 }.enumerated().allSatisfy { $0.offset % 2 == 0 ? $0.element == noErr : $0.element == kAudioQueueErr_InvalidTapType },
                "GetSourceAudio works; GetQueueTime is for output queues' taps")
    }
}
