// A recording queue's processing tap: it sees (and unless it siphons, replaces) what is
// captured, at the queue's rate, before it is encoded into the buffers; on the queue thread.

extension InputQueueEngine {
    /// Installs a processing tap (AudioQueueProcessingTapNew); only while stopped, one per queue.
    /// - Throws: `.invalidRunState` unless stopped, `.tooManyTaps` if the queue has one,
    ///   `.invalidParameter` unless exactly one of PreEffects and PostEffects is set.
    public func installTap(flags: ProcessingTap.Flags, callback: @escaping ProcessingTap.Callback) throws -> ProcessingTap {
        try ProcessingTap.validate(flags)
        try checkTapChange()
        let tap = ProcessingTap(flags: flags, channelCount: format.channelCount, maximumFrames: 1024, isInput: true,
                                callback: callback)
        try tapSlot.withLock { slot in
            guard slot == nil else { throw QueueError.tooManyTaps }
            slot = tap
        }
        return tap
    }

    /// Removes a tap (AudioQueueProcessingTapDispose); only while stopped, never from its callback.
    public func removeTap(_ tap: ProcessingTap) throws {
        try checkTapChange(removing: tap)
        try tapSlot.withLock { slot in
            guard slot === tap else { throw QueueError.invalidParameter("not this queue's tap") }
            slot = nil
        }
    }

    var hasTap: Bool { tapSlot.withLock { $0 != nil } }

    /// Runs the tap over the staged frames in place (the tap gives back exactly as many).
    func runTap(on planes: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, frames: Int) {
        tapSlot.withLock { slot in
            guard let tap = slot else { return }
            let readable = UnsafeRawPointer(planes).assumingMemoryBound(to: UnsafePointer<Float>.self)
            tap.processInPlace(readable, planes, frames: frames)
        }
    }

    /// A discontinuity (Stop, Reset): the tap's next call starts a new stream.
    func resetTap() {
        tapSlot.withLock { $0?.reset() }
    }
}
