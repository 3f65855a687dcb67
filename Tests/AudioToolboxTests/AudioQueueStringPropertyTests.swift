import Testing
import AudioToolbox
import QueueCore

/// The Swift extension for text-valued queue properties (AudioQueueSetStringProperty,
/// AudioQueueGetStringProperty) does what the C API does with CFStrings, on a ManualDriver.
@Suite struct AudioQueueStringPropertyTests {
    func cfText(_ queue: AudioQueueRef, _ id: AudioQueuePropertyID) -> String? {
        var value: CFString?
        var size = UInt32(8)
        guard AudioQueueGetProperty(queue, id, &value, &size) == noErr else { return nil }
        return value.map { String($0) }
    }

    @Test func stringsGoWhereCFStringsGoAndComeBackTheSame() throws {
        let driver = ManualDriver(periodFrames: 256, physicalPortCount: 4)
        var format = lpcm(channels: 2)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        #expect(AudioQueueSetStringProperty(q, kAudioQueueProperty_CurrentDevice, "playback_[34]$") == noErr)
        for id in [kAudioQueueProperty_CurrentDevice, kAudioQueueProperty_JACKConnectedPorts, kAudioQueueProperty_JACKPortNames,
                   kAudioQueueProperty_JACKClientName] {
            var text = "unset"
            #expect(AudioQueueGetStringProperty(q, id, &text) == noErr)
            #expect(text == cfText(q, id), "property \(id)")
        }
        var connected = ""
        #expect(AudioQueueGetStringProperty(q, kAudioQueueProperty_JACKConnectedPorts, &connected) == noErr)
        #expect(connected == "system:playback_3,system:playback_4")
        #expect(AudioQueueSetStringProperty(q, kAudioQueueProperty_JACKClientName, "renamed") == noErr)
        var name = ""
        #expect(AudioQueueGetStringProperty(q, kAudioQueueProperty_JACKClientName, &name) == noErr)
        #expect(name.hasPrefix("renamed"), "\(name)")
    }

    @Test func badCallsGetTheCodesTheCAPIGives() throws {
        let driver = ManualDriver(periodFrames: 256, physicalPortCount: 2)
        var format = lpcm(channels: 2)
        var queue: AudioQueueRef?
        #expect(AudioQueueNewOutput(&format, { _, _, _ in }, nil, nil, nil, 0, &queue, device: driver) == noErr)
        let q = try #require(queue)
        defer { AudioQueueDispose(q, true) }
        var text = "kept"
        #expect(AudioQueueGetStringProperty(q, kAudioQueueProperty_IsRunning, &text) == kAudioQueueErr_InvalidProperty)
        #expect(text == "kept", "untouched on failure")
        #expect(AudioQueueSetStringProperty(q, kAudioQueueProperty_IsRunning, "1") == kAudioQueueErr_InvalidProperty)
        #expect(AudioQueueSetStringProperty(q, kAudioQueueProperty_CurrentDevice, "nothing:here") == kAudioQueueErr_InvalidDevice)
        #expect(AudioQueueSetStringProperty(q, kAudioQueueProperty_JACKClientName, "") == kAudioQueueErr_InvalidPropertyValue)
        #expect(AudioQueueGetStringProperty(nil, kAudioQueueProperty_CurrentDevice, &text) == kAudio_ParamError)
    }
}
