import AudioToolbox

/// Sets a CFString-valued queue property (the value is a CFStringRef, as in C).
@discardableResult
func setStringProperty(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID, _ text: String) -> OSStatus {
    let string = CFString.make(text)
    var pointer = OpaquePointer(Unmanaged.passUnretained(string).toOpaque())
    return withExtendedLifetime(string) {
        AudioQueueSetProperty(queue, id, &pointer, UInt32(MemoryLayout<OpaquePointer>.size))
    }
}

/// A CFString-valued queue property as text; nil if the queue has none.
func stringProperty(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID) -> String? {
    var value: OpaquePointer?
    var size = UInt32(MemoryLayout<OpaquePointer?>.size)
    guard AudioQueueGetProperty(queue, id, &value, &size) == noErr, let value else { return nil }
    // The queue hands over a retained CFString (the Create rule, as on Apple platforms).
    return String(Unmanaged<CFString>.fromOpaque(UnsafeRawPointer(value)).takeRetainedValue())
}
