import AudioToolbox

// jaq's properties a command-line program wants around the guides' code: where the
// queue is patched, whether it runs, where it started on the server's timeline.

/// Connects the queue to `ports` (kAudioQueueProperty_CurrentDevice: a port, comma-separated
/// ports, a regular expression, "system", or "" for none); exits with one line if it can't.
public func setCurrentDevice(_ queue: AudioQueueRef, _ ports: String) {
    var target: CFString? = CFString.make(ports)
    let status = withUnsafePointer(to: &target) {
        AudioQueueSetProperty(queue, kAudioQueueProperty_CurrentDevice, $0, UInt32(MemoryLayout<CFString?>.size))
    }
    checkError(status, "cannot connect to \(ports.isEmpty ? "no ports" : ports)")
}

/// A string property of the queue (kAudioQueueProperty_JACKPortNames, _JACKConnectedPorts, ...).
public func queueString(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID) -> String {
    var value: CFString?
    var size = UInt32(MemoryLayout<CFString?>.size)
    let status = withUnsafeMutablePointer(to: &value) { AudioQueueGetProperty(queue, id, $0, &size) }
    guard status == noErr, let value else { return "" }
    return String(value)
}

/// kAudioQueueProperty_IsRunning: true from the device's first frame until the queue has stopped.
public func queueIsRunning(_ queue: AudioQueueRef) -> Bool {
    var isRunning: UInt32 = 0
    var size = UInt32(MemoryLayout<UInt32>.size)
    return AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &isRunning, &size) == noErr && isRunning != 0
}

/// True once the JACK server has shut down: the queue has stopped and its device time is no
/// longer valid, so a loop waiting for the queue's callback must stop waiting.
public func deviceIsGone(_ queue: AudioQueueRef) -> Bool {
    var now = AudioTimeStamp()
    return AudioQueueDeviceGetCurrentTime(queue, &now) != noErr || !now.mFlags.contains(.sampleTimeValid)
}

/// kAudioQueueProperty_StartDeviceFrame: the JACK frame at which the queue's time 0 fell.
public func startDeviceFrame(_ queue: AudioQueueRef) -> Int64 {
    var frame: Float64 = 0
    var size = UInt32(MemoryLayout<Float64>.size)
    AudioQueueGetProperty(queue, kAudioQueueProperty_StartDeviceFrame, &frame, &size)
    return Int64(frame)
}

/// kAudioQueueProperty_DiscontinuityCount as a note for the user ("" when there were none):
/// xruns — cycles JACK could not run in time — and data lost since the queue was created.
public func discontinuityNote(_ queue: AudioQueueRef) -> String {
    var count: UInt32 = 0
    var size = UInt32(MemoryLayout<UInt32>.size)
    guard AudioQueueGetProperty(queue, kAudioQueueProperty_DiscontinuityCount, &count, &size) == noErr, count > 0 else {
        return ""
    }
    return "; \(count) discontinuit\(count == 1 ? "y" : "ies") (xruns): frames may be missing"
}
