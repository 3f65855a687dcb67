import AudioToolbox

/// Sets a text-valued queue property (the device, the client name) through the Swift extension,
/// which needs no CFString: jaq never opens CoreFoundation (and with it ICU) for these.
@discardableResult
func setStringProperty(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID, _ text: String) -> OSStatus {
    AudioQueueSetStringProperty(queue, id, text)
}

/// A text-valued queue property; nil if the queue has none.
func stringProperty(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID) -> String? {
    var text = ""
    return AudioQueueGetStringProperty(queue, id, &text) == noErr ? text : nil
}
