// Device time, and queue time's place on it (currentQueueTime is in the class: OutputQueueEngine overrides it).

extension QueueEngine {
    // MARK: Time

    /// Device time now, and the host time of that frame.
    public func deviceTime() -> (frame: Int64, hostTime: UInt64, valid: Bool) {
        let alive = device.isAlive
        let frame = alive ? device.currentFrame() : 0
        return (frame, HostClock.nanoseconds(), alive)
    }

    /// The earliest device frame at or after `requested` at which a start can be honoured.
    public func nearestStartFrame(atOrAfter requested: Int64) throws -> Int64 {
        _ = try lock.withLock { try $0.life.handle(.nearestStartTime(primed: $0.primedFrames > 0 || !$0.fifo.isEmpty)) }
        let time = withPublication { $0.time.read() } ?? PublishedTime()
        let (cycleFrame, cycleCount) = (time.cycleFrame, time.cycleFrameCount)
        let period = Int64(max(cycleCount, device.periodFrames))
        let base = cycleCount > 0 ? cycleFrame : device.currentFrame()
        return max(requested, base + 2 * period)
    }

    /// The device frame at which queue time 0 falls (start frame, moved by pauses); nil before a start.
    public var queueTimeOriginFrame: Int64? {
        withPublication { $0.time.read() }?.originFrame
    }

    /// The host time at which queue time `sampleTime` (queue rate) plays, while the queue runs.
    public func hostTime(forQueueTime sampleTime: Double) -> UInt64? {
        let active = lock.withLock { $0.life.isActive }
        guard active else { return nil }
        let deviceQueueFrames = Int64((sampleTime / rateRatio).rounded())
        guard let time = withPublication({ $0.time.read() }) else { return nil }
        return device.hostTime(forFrame: time.deviceFrame(forQueueFrames: deviceQueueFrames))
    }
}
