import CAudioToolbox

/// A CAF 'pakt' body decoded: the header (packets, valid frames, priming, remainder), then a
/// variable-length integer per packet for each of its size and its frames where the format
/// does not fix them. One decoder for AudioFile (CAFPackets) and AudioFileStream.
struct CAFPacketTable {
    /// Each packet's bytes (the format's, when it fixes them).
    var sizes: [UInt32] = []
    /// Each packet's frames, when the format does not fix them (mFramesPerPacket 0).
    var frames: [UInt32]?
    var info: AudioFilePacketTableInfo

    /// - Throws: `damaged` with a reason, for a table that contradicts itself or its header.
    init(_ body: [UInt8], format: AudioStreamBasicDescription, damaged: (String) -> AudioToolboxError) throws(AudioToolboxError) {
        guard body.count >= 24 else { throw damaged("\(body.count) bytes") }
        let packets: Int64 = body.be(0)
        let valid: Int64 = body.be(8)
        let priming: Int32 = body.be(16)
        let remainder: Int32 = body.be(20)
        // Each packet takes at least one byte of the table.
        guard packets >= 0, packets <= Int64(body.count - 24), valid >= 0, priming >= 0, remainder >= 0 else {
            throw damaged("\(packets) packets, \(valid) frames, \(priming) priming and \(remainder) remainder frames")
        }
        info = AudioFilePacketTableInfo(mNumberValidFrames: valid, mPrimingFrames: priming, mRemainderFrames: remainder)
        var cursor = 24
        func varint(_ packet: Int) throws(AudioToolboxError) -> UInt32 {
            var value: UInt64 = 0
            for _ in 0..<5 {
                guard cursor < body.count else { throw damaged("it ends inside packet \(packet)") }
                let byte = body[cursor]
                cursor += 1
                value = value << 7 | UInt64(byte & 0x7F)
                if byte & 0x80 == 0 {
                    guard value <= UInt32.max else { break }
                    return UInt32(value)
                }
            }
            throw damaged("a value beyond 32 bits in packet \(packet)")
        }
        frames = format.mFramesPerPacket == 0 ? [] : nil
        sizes.reserveCapacity(Int(packets))
        for packet in 0..<Int(packets) {
            sizes.append(format.mBytesPerPacket > 0 ? format.mBytesPerPacket : try varint(packet))
            if frames != nil { frames?.append(try varint(packet)) }
        }
    }
}
