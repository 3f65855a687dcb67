import QueueCore

// A jaq extension for Swift callers: the queue's text-valued properties as Swift Strings.
//
// Through the C API these properties are CFStrings (kAudioQueueProperty_CurrentDevice, as on
// Apple platforms, and jaq's JACKClientName, JACKPortNames, JACKConnectedPorts). On Linux
// CoreFoundation lives in libFoundation.so, which brings ICU with it: the library opens it on the
// first CF call (CoreFoundationLoad.c), some milliseconds of a process's start-up. A Swift program
// (the jaq tool among them) that names its device with these two functions never opens it.

/// Sets a text-valued queue property (kAudioQueueProperty_CurrentDevice,
/// kAudioQueueProperty_JACKClientName) from a Swift String: what `AudioQueueSetProperty` does with
/// a CFString, without CoreFoundation. jaq extension (Swift only; C callers pass a CFString).
/// - Returns: the codes `AudioQueueSetProperty` returns; kAudioQueueErr_InvalidProperty for a
///   property that is not text.
public func AudioQueueSetStringProperty(_ inAQ: AudioQueueRef?, _ inID: AudioQueuePropertyID, _ value: String) -> OSStatus {
    withStatus { try AudioQueueRegistry.object(inAQ).setText(inID, value) }
}

/// Reads a text-valued queue property (kAudioQueueProperty_CurrentDevice, and jaq's
/// JACKClientName, JACKPortNames, JACKConnectedPorts) as a Swift String: what
/// `AudioQueueGetProperty` hands over as a CFString, without CoreFoundation. jaq extension
/// (Swift only).
/// - Returns: the codes `AudioQueueGetProperty` returns; kAudioQueueErr_InvalidProperty for a
///   property that is not text. `outValue` is set only on success.
public func AudioQueueGetStringProperty(_ inAQ: AudioQueueRef?, _ inID: AudioQueuePropertyID, _ outValue: inout String) -> OSStatus {
    var text = ""
    let status = withStatus { text = try AudioQueueRegistry.object(inAQ).text(inID) }
    if status == noErr { outValue = text }
    return status
}

extension AudioQueueObject {
    /// The text-valued properties' values (both APIs read them here).
    func text(_ id: AudioQueuePropertyID) throws -> String {
        _ = try propertySize(id)
        if Self.readingNeedsDevice(id) { try requireDevice() }
        switch id {
        case kAudioQueueProperty_CurrentDevice: return engine.currentDevice
        case kAudioQueueProperty_JACKClientName: return engine.clientName
        case kAudioQueueProperty_JACKPortNames: return engine.device.portNames.joined(separator: ",")
        case kAudioQueueProperty_JACKConnectedPorts: return engine.connectedDevicePorts.joined(separator: ",")
        default: throw AudioToolboxError(kAudioQueueErr_InvalidProperty, "property \(fourCharacterCode(id)) is not text")
        }
    }

    /// Sets a text-valued property (both APIs set them here).
    func setText(_ id: AudioQueuePropertyID, _ value: String) throws {
        if Self.writingNeedsDevice(id) { try requireDevice() }
        switch id {
        case kAudioQueueProperty_CurrentDevice:
            try engine.setCurrentDevice(value)
            state.withLock { $0.channelAssignments = nil }
            applyChannelLayoutToPorts()
        case kAudioQueueProperty_JACKClientName:
            guard !value.isEmpty else { throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "an empty client name") }
            try engine.setClientName(value)
        default:
            throw AudioToolboxError(kAudioQueueErr_InvalidProperty, "property \(fourCharacterCode(id)) is not text")
        }
    }
}
