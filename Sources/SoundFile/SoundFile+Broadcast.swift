import CSndFile

/// The fields of an EBU Broadcast Wave (`bext`) chunk jaq writes and reads, as libsndfile
/// takes them (`SFC_SET_BROADCAST_INFO`, `SFC_GET_BROADCAST_INFO`). Texts are ASCII, cut to
/// their fields' sizes: description 256 bytes, originator and its reference 32, date
/// "yyyy-mm-dd", time "hh:mm:ss", coding history 256. `timeReference`: the first sample's
/// position, in samples at the file's rate.
public typealias BroadcastFields = (description: String, originator: String, originatorReference: String,
                                    originationDate: String, originationTime: String, timeReference: UInt64,
                                    codingHistory: String)

extension SoundFile {
    /// Writes the file's `bext` chunk. libsndfile takes it in WAV and RF64 files only, and only
    /// before the first frame is written.
    /// - Returns: false if libsndfile refused (another container, or frames already written).
    public func setBroadcastInfo(_ broadcast: BroadcastFields) -> Bool {
        guard let handle else { return false }
        var info = SF_BROADCAST_INFO()
        Self.copy(broadcast.description, into: &info.description)
        Self.copy(broadcast.originator, into: &info.originator)
        Self.copy(broadcast.originatorReference, into: &info.originator_reference)
        Self.copy(broadcast.originationDate, into: &info.origination_date)
        Self.copy(broadcast.originationTime, into: &info.origination_time)
        info.time_reference_low = UInt32(truncatingIfNeeded: broadcast.timeReference)
        info.time_reference_high = UInt32(truncatingIfNeeded: broadcast.timeReference >> 32)
        info.version = 1
        // The coding history is lines of text, each ending in CR LF (EBU Tech 3285).
        let history = broadcast.codingHistory.isEmpty || broadcast.codingHistory.hasSuffix("\r\n")
            ? broadcast.codingHistory : broadcast.codingHistory + "\r\n"
        info.coding_history_size = UInt32(Self.copy(history, into: &info.coding_history))
        return sf_command(handle, Int32(SFC_SET_BROADCAST_INFO), &info, Int32(MemoryLayout<SF_BROADCAST_INFO>.size)) == SF_TRUE
    }

    /// The file's `bext` chunk, or nil if it has none (or libsndfile reads none in its container).
    public func broadcastInfo() -> BroadcastFields? {
        guard let handle else { return nil }
        var info = SF_BROADCAST_INFO()
        guard sf_command(handle, Int32(SFC_GET_BROADCAST_INFO), &info, Int32(MemoryLayout<SF_BROADCAST_INFO>.size)) == SF_TRUE else {
            return nil
        }
        return (description: Self.string(&info.description), originator: Self.string(&info.originator),
                originatorReference: Self.string(&info.originator_reference),
                originationDate: Self.string(&info.origination_date), originationTime: Self.string(&info.origination_time),
                timeReference: UInt64(info.time_reference_high) << 32 | UInt64(info.time_reference_low),
                codingHistory: Self.string(&info.coding_history))
    }

    /// Copies `text`'s ASCII bytes into a fixed C field (a tuple of CChar), cut to its size and
    /// zero-filled after; returns the bytes copied.
    @discardableResult
    private static func copy<Field>(_ text: String, into field: inout Field) -> Int {
        withUnsafeMutableBytes(of: &field) { bytes in
            bytes.initializeMemory(as: UInt8.self, repeating: 0)
            let ascii = text.unicodeScalars.map { $0.isASCII ? UInt8($0.value) : UInt8(ascii: "?") }.prefix(bytes.count)
            for (i, byte) in ascii.enumerated() { bytes[i] = byte }
            return ascii.count
        }
    }

    /// A fixed C field's text: up to its first zero byte, or all of it (EBU fields need none).
    private static func string<Field>(_ field: inout Field) -> String {
        withUnsafeBytes(of: &field) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
