// The device a queue is connected to (CurrentDevice, the client's name), and its events.

extension QueueEngine {
    // MARK: Device connection

    /// What the queue connects to: "system", a port, a regular expression, or "".
    public var currentDevice: String { lock.withLock { $0.currentTarget } }

    /// The device ports the queue is connected to.
    public var connectedDevicePorts: [String] { lock.withLock { $0.connectedPorts } }

    /// Connects to `target` instead of what the queue connected to before; throws
    /// `.invalidDevice` if nothing matches. Only the connections the queue made itself are
    /// removed: one a user made to its ports stays.
    /// - Parameters:
    ///   - ports: what to connect to instead, port i to the i-th name (a comma-separated list),
    ///     while CurrentDevice reports `target` (ChannelAssignments, a ChannelLayout's labels).
    public func setCurrentDevice(_ target: String, connecting ports: String? = nil) throws {
        try lock.withLock { try $0.life.checkUsable() }
        let (before, connected) = try connectionLock.withLock {
            let before = lock.withLock { $0.connectedPorts.count }
            let connected = try device.connect(to: ports ?? target)
            lock.withLock { state in
                state.currentTarget = target
                state.connectionTarget = ports ?? target
                state.connectedPorts = connected
            }
            return (before, connected)
        }
        notify(.currentDeviceChanged)
        if connected.count != before { notify(.deviceChannelsChanged) }
    }

    /// What the queue's ports are connected to now (CurrentDevice, or the ports it maps to).
    public var connectionTargetValue: String { lock.withLock { $0.effectiveTarget } }

    /// The JACK sample rate changed: listeners of the device's rate hear of it.
    func deviceRateChanged() { notify(.deviceSampleRateChanged) }

    /// The JACK client's name.
    public var clientName: String { lock.withLock { $0.clientName } }

    /// Renames the client (reopens it); allowed while stopped.
    public func setClientName(_ name: String) throws {
        _ = try lock.withLock { try $0.life.handle(.reconfigure("rename a stopped queue")) }
        try connectionLock.withLock {
            try device.rename(to: name)
            let target = lock.withLock { $0.effectiveTarget }
            let ports = target.isEmpty ? [] : ((try? device.connect(to: target)) ?? [])
            lock.withLock {
                $0.clientName = device.clientName
                $0.connectedPorts = ports
            }
        }
    }

    // MARK: Device events

    func handleDeviceEvent(_ event: DeviceEvent) {
        switch event {
        case .shutdown:
            let first = lock.withLock { state -> Bool in
                let actions = state.life.note(.deviceGone)
                lock.broadcast()
                return actions.contains(.deliverInvalidation)
            }
            guard first else { return }
            // The queue thread delivers what it can, then reports the stop.
            lock.withLock { $0.deliveries.append { [self] in self.finishInvalidation() } }
            wake.post()
            realtimeWake.post()
        case .xrun:
            lock.withLock { $0.discontinuities += 1 }
        case .sampleRateChanged(let rate):
            let mismatch = lock.withLock { state -> Bool in
                state.discontinuities += 1
                state.converterMismatch = rate != state.converterRate
                return state.converterMismatch
            }
            deviceRateChanged()
            // The queue's converter was made for another rate: its conversion no longer fits.
            if mismatch { notify(.converterError(0x666D_743F)) }  // 'fmt?', kAudioConverterErr_FormatNotSupported
        case .freewheel:
            realtimeWake.post()
        }
    }

    private func finishInvalidation() {
        perform(.deliverInvalidation)
        let actions = lock.withLock {
            defer { lock.broadcast() }
            return $0.life.note(.invalidationDelivered)
        }
        report(actions)
    }
}
