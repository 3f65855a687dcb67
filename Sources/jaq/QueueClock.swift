import AudioToolbox

/// A queue's device clock, as `jaq record` and `jaq play` read it: the JACK frame now, and
/// whether the queue's server is still there.
enum QueueClock {
    /// Whether the queue's JACK server is still there (DeviceGetCurrentTime gives a sample
    /// time only while it is): a server that shut down or died ends the take, or the playing.
    static func serverIsAlive(_ queue: AudioQueueRef) -> Bool { now(queue).alive }

    /// The JACK frame now (0 when the server is gone), and whether the server answered: one
    /// call for both, as the recorder's main loop needs them together.
    static func now(_ queue: AudioQueueRef) -> (frame: Int64, alive: Bool) {
        var now = AudioTimeStamp()
        let alive = AudioQueueDeviceGetCurrentTime(queue, &now) == noErr && now.mFlags.contains(.sampleTimeValid)
        return (Int64(now.mSampleTime), alive)
    }

    /// The JACK frame now (0 when the server does not answer).
    static func frame(_ queue: AudioQueueRef) -> Int64 { now(queue).frame }
}
