import CAudioToolbox

/// CAF streams: 'desc', 'kuki', 'chan', 'pakt' before 'data'. Packets of variable size need
/// the packet table before the data (as afconvert writes it); a file that keeps it after
/// the data cannot stream ('optm', NotOptimized).
final class CAFChunkSyntax: ChunkSyntax {
    private var format: AudioStreamBasicDescription?
    private var cookie: [UInt8]?
    private var layout: ChannelLayoutValue?
    private var table: CAFPacketTable?

    var fileHeaderLength: Int { 8 }
    var padsToEven: Bool { false }
    var dataPrefixLength: Int { 4 }  // the data chunk's edit count

    func checkFileHeader(_ bytes: [UInt8]) throws(AudioToolboxError) {
        guard bytes.fourCC(0) == "caff", bytes.be(4, UInt16.self) == 1 else {
            throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "not a CAF version 1 file")
        }
    }

    func chunkHeader(_ input: StreamBuffer) throws(AudioToolboxError) -> (type: String, size: Int64?, headerLength: Int)? {
        guard input.count >= 12 else { return nil }
        let size = Int64(bitPattern: UInt64(input.bigEndian32(4)) << 32 | UInt64(input.bigEndian32(8)))
        guard size >= 0 || (size == -1 && input.tag(0) == "data") else {
            throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a '\(input.tag(0))' chunk of \(size) bytes")
        }
        return (input.tag(0), size == -1 ? nil : size, 12)
    }

    func isData(_ type: String) -> Bool { type == "data" }
    func wants(_ type: String) -> Bool { ["desc", "kuki", "chan", "pakt"].contains(type) }

    func read(_ type: String, _ body: [UInt8]) throws(AudioToolboxError) {
        func damaged(_ reason: String) -> AudioToolboxError { AudioToolboxError(kAudioFileStreamError_InvalidFile, "damaged CAF: \(reason)") }
        switch type {
        case "desc":
            guard body.count >= 32 else { throw damaged("a short 'desc'") }
            format = try Self.description(body)
        case "kuki":
            cookie = body
        case "chan":
            guard body.count >= 12 else { throw damaged("a short 'chan'") }
            let count = Int(body.be(8, UInt32.self))
            let labels = count <= 64 && body.count >= 12 + 20 * count ? (0..<count).map { body.be(12 + 20 * $0, UInt32.self) } : []
            layout = ChannelLayoutValue(tag: body.be(0), bitmap: body.be(4), labels: labels)
        case "pakt":
            guard let format else { throw damaged("'pakt' before 'desc'") }
            table = try CAFPacketTable(body, format: format) { AudioToolboxError(kAudioFileStreamError_InvalidFile, "damaged CAF 'pakt': \($0)") }
        default: break
        }
    }

    /// The ASBD of a 'desc' chunk, CAF's PCM flags turned into Apple's.
    static func description(_ body: [UInt8]) throws(AudioToolboxError) -> AudioStreamBasicDescription {
        var format = AudioStreamBasicDescription(
            mSampleRate: Double(bitPattern: body.be(0)), mFormatID: body.be(8), mFormatFlags: body.be(12),
            mBytesPerPacket: body.be(16), mFramesPerPacket: body.be(20), mBytesPerFrame: 0,
            mChannelsPerFrame: body.be(24), mBitsPerChannel: body.be(28), mReserved: 0)
        guard format.mSampleRate.isFinite, format.mSampleRate > 0, format.mSampleRate <= 1e7,
              (1...1024).contains(format.mChannelsPerFrame), format.mBytesPerPacket <= 1 << 24, format.mFramesPerPacket <= 1 << 24
        else { throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "CAF 'desc' of \(format.mChannelsPerFrame) channels at \(format.mSampleRate) Hz") }
        if format.mFormatID == kAudioFormatLinearPCM {
            let cafFlags = format.mFormatFlags  // kCAFLinearPCMFormatFlagIsFloat 1, IsLittleEndian 2
            format.mFormatFlags = (cafFlags & 1 != 0 ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger)
                | (cafFlags & 2 != 0 ? 0 : kAudioFormatFlagIsBigEndian) | kAudioFormatFlagIsPacked
            guard format.mBytesPerPacket > 0, format.mFramesPerPacket == 1 else {
                throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "CAF PCM of \(format.mBytesPerPacket)-byte packets")
            }
            if format.mBitsPerChannel == 8 { format.mFormatFlags &= ~kAudioFormatFlagIsBigEndian }
        }
        if format.mFramesPerPacket == 1 { format.mBytesPerFrame = format.mBytesPerPacket }
        return format
    }

    func finish(dataPrefix: [UInt8], dataStart: inout Int64, dataSize: inout Int64?,
                _ header: inout StreamHeader) throws(AudioToolboxError) -> (properties: [AudioFileStreamPropertyID], layout: StreamPacketLayout) {
        guard let format else { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "damaged CAF: no 'desc' before 'data'") }
        header.fileFormat = kAudioFileCAFType
        header.dataFormat = format
        var properties = [kAudioFileStreamProperty_FileFormat, kAudioFileStreamProperty_DataFormat]
        if let cookie, !cookie.isEmpty {
            header.magicCookie = cookie
            properties.append(kAudioFileStreamProperty_MagicCookieData)
        }
        header.channelLayout = layout ?? .default(channelCount: Int(format.mChannelsPerFrame))
        properties.append(kAudioFileStreamProperty_ChannelLayout)
        let packetLayout: StreamPacketLayout
        if format.mBytesPerPacket > 0, format.mFramesPerPacket > 0 {
            packetLayout = .constant(bytesPerPacket: Int(format.mBytesPerPacket))
            header.maximumPacketSize = format.mBytesPerPacket
            header.packetSizeUpperBound = format.mBytesPerPacket
            if let size = dataSize {
                header.audioDataByteCount = UInt64(size / Int64(format.mBytesPerPacket) * Int64(format.mBytesPerPacket))
                header.audioDataPacketCount = UInt64(size / Int64(format.mBytesPerPacket))
            }
        } else {
            guard let table else {
                throw AudioToolboxError(kAudioFileStreamError_NotOptimized, "packets of variable size and no 'pakt' chunk before the audio data")
            }
            var offsets: [Int64] = []
            offsets.reserveCapacity(table.sizes.count)
            var offset = dataStart
            for size in table.sizes {
                offsets.append(offset)
                offset += Int64(size)
            }
            if let size = dataSize, offset - dataStart > size {
                throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "damaged CAF: the packet table runs past the data chunk")
            }
            packetLayout = .table(offsets: offsets, sizes: table.sizes, frames: table.frames)
            header.packetTable = table.info
            header.packetSizeUpperBound = table.sizes.max()
            properties.append(kAudioFileStreamProperty_PacketTableInfo)
        }
        if let size = dataSize, header.audioDataByteCount == nil, format.mBytesPerPacket == 0 { header.audioDataByteCount = UInt64(size) }
        properties += [kAudioFileStreamProperty_DataOffset, kAudioFileStreamProperty_AudioDataByteCount, kAudioFileStreamProperty_AudioDataPacketCount]
        return (properties, packetLayout)
    }
}
