import SoundFile

extension AudioTakeFile {
    /// A take's Broadcast Wave `bext` chunk (EBU Tech 3285): where its first sample belongs on
    /// a timeline (`timeReference`, samples at the file's rate), who wrote it, when, and what.
    /// WAV and RF64 takes carry one; other containers have no place libsndfile writes it to.
    public struct BroadcastWave: Sendable, Equatable {
        public var description: String
        public var originator: String
        public var originatorReference: String
        /// "yyyy-mm-dd" and "hh:mm:ss", local time.
        public var originationDate: String
        public var originationTime: String
        public var timeReference: UInt64
        /// Lines such as "A=PCM,F=48000,W=24,M=mono,T=jaq 1.0.0".
        public var codingHistory: String

        public init(description: String, originator: String, originatorReference: String, originationDate: String,
                    originationTime: String, timeReference: UInt64, codingHistory: String) {
            self.description = description
            self.originator = originator
            self.originatorReference = originatorReference
            self.originationDate = originationDate
            self.originationTime = originationTime
            self.timeReference = timeReference
            self.codingHistory = codingHistory
        }

        init(_ fields: BroadcastFields) {
            self.init(description: fields.description, originator: fields.originator, originatorReference: fields.originatorReference,
                      originationDate: fields.originationDate, originationTime: fields.originationTime,
                      timeReference: fields.timeReference, codingHistory: fields.codingHistory)
        }

        var fields: BroadcastFields {
            (description, originator, originatorReference, originationDate, originationTime, timeReference, codingHistory)
        }
    }

    /// Whether takes of this format carry a `bext` chunk (WAV, RF64).
    public var carriesBroadcastWave: Bool { format.container == .wave || format.container == .rf64 }

    /// Writes the take's `bext` chunk; before its first frame.
    /// - Throws: `AudioTakeFileError` if the container has no place for it, or frames were
    ///   written already.
    public func setBroadcastWave(_ broadcast: BroadcastWave) throws(AudioTakeFileError) {
        guard carriesBroadcastWave else {
            throw AudioTakeFileError(path: path, reason: "\(format.container?.name ?? format.name) files carry no Broadcast Wave chunk")
        }
        guard framesWritten == 0, file?.setBroadcastInfo(broadcast.fields) == true else {
            throw AudioTakeFileError(path: path, reason: "cannot write its Broadcast Wave chunk once audio is written")
        }
    }

    /// The `bext` chunk of the file at `path`, or nil if it has none (or cannot be read).
    public static func broadcastWave(ofFileAt path: String) -> BroadcastWave? {
        guard let file = try? SoundFile(path: path, mode: .read) else { return nil }
        return file.broadcastInfo().map(BroadcastWave.init)
    }
}
