import CAudioToolbox

/// What an AudioFileID stands for: the operations of Audio File Services on one open file.
///
/// Two kinds of file implement it: `AudioFileObject` (libsndfile: PCM, µ-law, A-law and the
/// formats libsndfile decodes to PCM) and `PacketAudioFile` (files of compressed packets: CAF
/// with a packet table, MPEG-4 audio, ADTS). The C entry points in AudioFile.swift see only this.
///
/// Thread safety: every implementation serialises its own calls.
protocol AudioFileHandle: AnyObject, Sendable {
    /// Finishes what is pending (a header, a packet table, a held-back packet) and closes.
    func close() throws

    /// Reads up to `packetCount` packets from `startPacket`, no more than fit in `capacity`
    /// bytes, filling `descriptions` (when given) for formats whose packets vary.
    /// - Returns: packets and bytes read, and whether the read stopped short at the end.
    func readPackets(from startPacket: Int64, count packetCount: Int, capacity: Int, into buffer: UnsafeMutableRawPointer,
                     descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) throws
        -> (packets: Int, bytes: Int, reachedEnd: Bool)

    /// Writes `packetCount` packets, `byteCount` bytes at `bytes`, at `startPacket`.
    /// - Returns: packets written, and the error that stopped the write short (a full disk).
    func writePackets(at startPacket: Int64, count packetCount: Int, byteCount: Int,
                      descriptions: UnsafePointer<AudioStreamPacketDescription>?, from bytes: UnsafeRawPointer) throws
        -> (packets: Int, error: Error?)

    /// Reads audio data bytes from `start`.
    func readBytes(from start: Int64, count: Int, into buffer: UnsafeMutableRawPointer) throws -> (bytes: Int, reachedEnd: Bool)

    /// Writes audio data bytes at `start`.
    func writeBytes(at start: Int64, from bytes: UnsafeRawBufferPointer) throws -> (bytes: Int, error: Error?)

    func propertyInfo(_ id: AudioFilePropertyID) throws -> (size: Int, isWritable: Bool)
    func getProperty(_ id: AudioFilePropertyID, into buffer: UnsafeMutableRawPointer, capacity: Int) throws -> Int
    func setProperty(_ id: AudioFilePropertyID, from bytes: UnsafeRawBufferPointer) throws
}

extension AudioFileObject: AudioFileHandle {
    /// Packet descriptions are left untouched: every format libsndfile presents has constant
    /// packet sizes, for which Apple does not fill them either.
    func readPackets(from startPacket: Int64, count packetCount: Int, capacity: Int, into buffer: UnsafeMutableRawPointer,
                     descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) throws
        -> (packets: Int, bytes: Int, reachedEnd: Bool) {
        let read = try readPackets(from: startPacket, count: packetCount, capacity: capacity, into: buffer)
        return (read.packets, read.packets * (try withState { $0.bytesPerFrame }), read.reachedEnd)
    }

    func writePackets(at startPacket: Int64, count packetCount: Int, byteCount: Int,
                      descriptions: UnsafePointer<AudioStreamPacketDescription>?, from bytes: UnsafeRawPointer) throws
        -> (packets: Int, error: Error?) {
        let bytesPerPacket = try withState { $0.bytesPerFrame }
        guard byteCount >= packetCount * bytesPerPacket else {
            throw AudioToolboxError(kAudio_ParamError,
                                    "\(packetCount) packets are \(packetCount * bytesPerPacket) bytes, inNumBytes is \(byteCount)")
        }
        return try writePackets(at: startPacket, count: packetCount, from: bytes)
    }
}
