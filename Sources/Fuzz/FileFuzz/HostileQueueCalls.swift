import AudioToolbox
import Foundation

/// Calls on a live output queue with values out of every range: time stamps of ±1e300 and
/// −2⁶³ frames, NaN and infinite parameters, a ramp time of 1e15 s, property buffers one byte
/// too small. Each must return a result code (these traps and silent truncations were found by
/// a walk over the API). Needs a JACK server (JACK_DEFAULT_SERVER).
enum HostileQueueCalls {
    static func run() {
        var format = SeedFiles.format(rate: 48000, channels: 2, bits: 16)
        var queue: AudioQueueRef?
        var walk = FileWalk()
        let created = AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue)
        walk.note("new", created)
        guard created == noErr, let queue else { print("queue: \(walk.line)"); return }
        defer { AudioQueueDispose(queue, true) }

        for (name, value) in [("nan", Double.nan), ("1e300", 1e300), ("-1e300", -1e300), ("1e19", 1e19), ("-2^63", -0x1p63)] {
            var time = AudioTimeStamp()
            time.mSampleTime = value
            time.mFlags = .sampleTimeValid
            var out = AudioTimeStamp()
            walk.note("translate-\(name)", AudioQueueDeviceTranslateTime(queue, &time, &out))
            walk.note("nearest-\(name)", AudioQueueDeviceGetNearestStartTime(queue, &time, 0))
            walk.note("enqueue-at-\(name)", enqueue(queue, parameters: [], at: time))
        }
        for (name, id, value) in [("volume-nan", kAudioQueueParam_Volume, Float.nan), ("pan-inf", kAudioQueueParam_Pan, Float.infinity),
                                  ("volume-0.5", kAudioQueueParam_Volume, Float(0.5))] {
            walk.note("enqueue-\(name)", enqueue(queue, parameters: [AudioQueueParameterEvent(mID: id, mValue: value)], at: nil))
        }
        walk.note("ramp-1e15", AudioQueueSetParameter(queue, kAudioQueueParam_VolumeRampTime, 1e15))
        walk.note("ramp-max", AudioQueueSetParameter(queue, kAudioQueueParam_VolumeRampTime, .greatestFiniteMagnitude))
        walk.note("ramp-2", AudioQueueSetParameter(queue, kAudioQueueParam_VolumeRampTime, 2))

        var cookie = [UInt8](repeating: 7, count: 16)
        walk.note("set-cookie", AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, &cookie, 16))
        var size: UInt32 = 8
        var small = [UInt8](repeating: 0, count: 16)
        walk.note("cookie-short", AudioQueueGetProperty(queue, kAudioQueueProperty_MagicCookie, &small, &size))
        walk.note("cookie-short-size", String(size))
        size = 16
        walk.note("cookie", AudioQueueGetProperty(queue, kAudioQueueProperty_MagicCookie, &small, &size))
        walk.note("cookie-equal", small == cookie ? "yes" : "no")
        var latencySize: UInt32 = 0
        walk.note("latency-size", AudioQueueGetPropertySize(queue, kAudioQueueProperty_JACKPortLatency, &latencySize))
        if latencySize > 0 {
            var latency = [UInt8](repeating: 0, count: Int(latencySize))
            size = latencySize - 1
            walk.note("latency-short", AudioQueueGetProperty(queue, kAudioQueueProperty_JACKPortLatency, &latency, &size))
        }
        print("queue: \(walk.line)")
    }

    /// Enqueues one buffer of 256 silent frames with parameters and a start time.
    private static func enqueue(_ queue: AudioQueueRef, parameters: [AudioQueueParameterEvent], at time: AudioTimeStamp?) -> OSStatus {
        var buffer: AudioQueueBufferRef?
        let allocated = AudioQueueAllocateBuffer(queue, 1024, &buffer)
        guard allocated == noErr, let buffer else { return allocated }
        buffer.pointee.mAudioDataByteSize = 1024
        let status = withUnsafePointer(to: time ?? AudioTimeStamp()) { start in
            AudioQueueEnqueueBufferWithParameters(queue, buffer, 0, nil, 0, 0, UInt32(parameters.count), parameters,
                                                  time == nil ? nil : start, nil)
        }
        if status != noErr { AudioQueueFreeBuffer(queue, buffer) }
        return status
    }
}
