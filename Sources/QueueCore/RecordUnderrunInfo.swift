/// Recorded-data loss information (kAudioQueueErr_RecordUnderrun).
public struct RecordUnderrunInfo: Sendable, Equatable {
    /// Times data was lost.
    public var eventCount: Int
    /// Frames lost in all (queue rate).
    public var framesLost: Int64
    /// Queue time of the first frame lost most recently.
    public var lastLossSampleTime: Double
}
