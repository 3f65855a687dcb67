import CAudioToolbox
import QueueCore

// A playback queue made while no JACK server ran: AudioQueueNewOutput succeeds (Apple's needs
// no audio device either: AQOfflineRenderTest renders on a machine with none), the queue
// renders offline, and the calls that need the device connect it to the server, or return
// kAudioQueueErr_InvalidDevice ("the specified audio hardware device could not be located")
// while there is still none. Recording queues need the device to be made, as before.

extension AudioQueueObject {
    /// For a call that needs the audio device: a playback queue made while no JACK server ran
    /// connects to the server now (and maps its channel layout to the ports, as a queue made
    /// with the server does). Nothing for a queue rendering offline, or one connected already.
    /// - Throws: kAudioQueueErr_InvalidDevice while no server runs.
    func requireDevice() throws {
        guard let output, try output.connectDeviceIfNeeded() else { return }
        applyChannelLayoutToPorts()
    }

    /// For a call that needs the device running (AudioQueueDeviceTranslateTime): as
    /// `requireDevice`, and kAudioQueueErr_InvalidDevice for a queue that has none (one
    /// rendering offline with no server), kAudioQueueErr_QueueInvalidated once the server went away.
    func requireRunningDevice() throws {
        try requireDevice()
        guard engine.device.isAlive else {
            if output?.awaitsDevice == true {
                throw QueueError.invalidDevice("no JACK server runs: the queue has no device (it renders offline)")
            }
            throw QueueError.queueInvalidated
        }
    }

    /// Properties whose value is the device's (its rate, its ports): reading one connects.
    static func readingNeedsDevice(_ id: AudioQueuePropertyID) -> Bool {
        [kAudioQueueDeviceProperty_SampleRate, kAudioQueueDeviceProperty_NumberChannels, kAudioQueueProperty_JACKPortNames,
         kAudioQueueProperty_JACKPortLatency, kAudioQueueProperty_JACKPeriodFrames].contains(id)
    }

    /// Properties that connect the queue's ports: setting one connects.
    static func writingNeedsDevice(_ id: AudioQueuePropertyID) -> Bool {
        [kAudioQueueProperty_CurrentDevice, kAudioQueueProperty_ChannelAssignments].contains(id)
    }
}
