// A playback queue made while no server ran (DeferredDevice.swift): it renders offline with no
// device, and connects to the server at the first call that needs the device.

extension OutputQueueEngine {
    /// True while the queue, made when no server ran, has not connected to one since.
    public var awaitsDevice: Bool { (deviceSwitch.online as? DeferredDevice)?.isAttached == false }

    /// For a call that needs the device (Start or Prime to play, a connection, the device's
    /// rate or ports): a queue made while no server ran opens its client on the server now,
    /// converts to the server's rate from then on, and connects to the default target, as a
    /// queue made with the server running does. A queue rendering offline needs no device, nor
    /// does one that has it already: nothing happens.
    /// - Returns: true if the queue connected now.
    /// - Throws: `.invalidDevice` while no server runs; `.cannotStart` if the server's rate
    ///   differs from the queue's and audio is decoded already (the queue keeps the client;
    ///   Start fails with `.cannotStart` from then on, as after a server's rate change).
    ///
    /// Thread safety: calls from several threads take turns; one connects.
    @discardableResult
    public func connectDeviceIfNeeded() throws -> Bool {
        guard let deferred = deviceSwitch.online as? DeferredDevice, !deferred.isAttached, !isOffline else { return false }
        return try deferred.connectionTurn.withLock {
            try lock.withLock { try $0.life.checkUsable() }
            // Read at the rate the queue runs at now, to be kept in seconds at the server's.
            let decodeFrames = decodeBufferFrames
            let rampSeconds = volumeRampTime
            do {
                guard try deferred.attach() else { return false }
            } catch QueueError.invalidDevice(let reason) {
                throw QueueError.invalidDevice("the queue has no device: \(reason)")
            }
            let rateChanged = lock.withLock { state -> Bool in
                state.clientName = deferred.clientName
                return device.sampleRate != state.converterRate
            }
            do {
                try adoptDeviceRate(decodeFrames: decodeFrames, rampSeconds: rampSeconds)
            } catch QueueError.invalidRunState(let why) {
                // As after a server's rate change: this Start, and every later one, cannot start.
                throw QueueError.cannotStart("the JACK server runs at \(Int(device.sampleRate)) Hz: \(why)")
            }
            if rateChanged { notify(.deviceSampleRateChanged) }
            let target = deferred.defaultTarget
            if !target.isEmpty { try? setCurrentDevice(target) }
            return true
        }
    }
}
