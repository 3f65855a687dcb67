import AudioToolbox
import JackControl

/// What a take session knows of time, from the queue, the server's rate and the file's: frames
/// convert between the two rates, and the trigger is shown the device's frame now.
extension RecordSession {
    /// Device (server) frames as frames of the file.
    func toQueueFrames(_ deviceFrames: Int64) -> Int64 { Int64((Double(deviceFrames) * fileRate / deviceRate).rounded()) }
    /// Frames of the file as device (server) frames.
    func toDeviceFrames(_ queueFrames: Int64) -> Int64 { Int64((Double(queueFrames) * deviceRate / fileRate).rounded()) }

    /// The device frame after a take's last frame (its every track's, latency compensation
    /// counted): take frames [0, end) from queue frame `takeStart`, queue time 0 at device `origin`.
    func deviceFrame(afterTake takeStart: Int64, end: Int64, origin: Int64) -> Int64 {
        origin + toDeviceFrames(takeStart + end + (skip.max() ?? 0))
    }

    /// What the trigger looks at: the device's frame now, the transport (with `session`), Enter.
    func observation(session: JackSession?, enterPressed: SharedFlag) -> Trigger.Observation {
        Trigger.Observation(now: QueueClock.frame(queue), session: session, enterPressed: enterPressed.value != 0)
    }
}
