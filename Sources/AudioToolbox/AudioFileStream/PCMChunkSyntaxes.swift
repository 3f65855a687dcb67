import CAudioToolbox

/// Streams of linear PCM (and µ-law, A-law) in RIFF WAVE and AIFF/AIFC: the format chunk,
/// then the audio data as frames (constant-size packets, delivered with no descriptions).
class PCMChunkSyntax {
    var format: AudioStreamBasicDescription?
    var frameCount: Int64?
    var fileType: AudioFileTypeID

    init(fileType: AudioFileTypeID) { self.fileType = fileType }

    var padsToEven: Bool { true }

    func finishPCM(dataStart: Int64, dataSize: inout Int64?, _ header: inout StreamHeader) throws(AudioToolboxError)
        -> (properties: [AudioFileStreamPropertyID], layout: StreamPacketLayout) {
        guard let format else { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "the audio data comes before the format chunk") }
        let bytesPerFrame = Int64(format.mBytesPerFrame)
        header.fileFormat = fileType
        header.dataFormat = format
        header.maximumPacketSize = format.mBytesPerPacket
        header.packetSizeUpperBound = format.mBytesPerPacket
        header.channelLayout = .default(channelCount: Int(format.mChannelsPerFrame))
        var properties = [kAudioFileStreamProperty_FileFormat, kAudioFileStreamProperty_DataFormat, kAudioFileStreamProperty_ChannelLayout]
        if let size = dataSize {
            let whole = size / bytesPerFrame * bytesPerFrame
            dataSize = whole
            header.audioDataByteCount = UInt64(whole)
            header.audioDataPacketCount = UInt64(whole / bytesPerFrame)
            properties += [kAudioFileStreamProperty_AudioDataByteCount, kAudioFileStreamProperty_AudioDataPacketCount]
        }
        header.bitRate = UInt32(clamping: Int64(format.mSampleRate * Double(bytesPerFrame) * 8))
        header.dataOffset = dataStart
        properties += [kAudioFileStreamProperty_DataOffset]
        return (properties, .constant(bytesPerPacket: Int(bytesPerFrame)))
    }

    /// An ASBD for PCM, checked: 1...64 channels, 8...64 bits, a sane rate.
    static func pcm(rate: Double, channels: Int, bits: Int, bytesPerSample: Int, formatID: AudioFormatID = kAudioFormatLinearPCM,
                    flags: AudioFormatFlags) throws(AudioToolboxError) -> AudioStreamBasicDescription {
        guard rate.isFinite, rate >= 1, rate <= 1_000_000, (1...64).contains(channels), (1...8).contains(bytesPerSample),
              (1...64).contains(bits), bits <= bytesPerSample * 8 else {
            throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "\(channels) channels of \(bits) bits at \(rate) Hz")
        }
        let bytesPerFrame = UInt32(bytesPerSample * channels)
        return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: formatID, mFormatFlags: flags, mBytesPerPacket: bytesPerFrame,
                                           mFramesPerPacket: 1, mBytesPerFrame: bytesPerFrame, mChannelsPerFrame: UInt32(channels),
                                           mBitsPerChannel: UInt32(bits), mReserved: 0)
    }
}

/// RIFF WAVE: 'fmt ' (PCM, IEEE float, µ-law, A-law, WAVE_FORMAT_EXTENSIBLE of these), 'data'.
final class WAVEChunkSyntax: PCMChunkSyntax, ChunkSyntax {
    init() { super.init(fileType: kAudioFileWAVEType) }

    var fileHeaderLength: Int { 12 }

    func checkFileHeader(_ bytes: [UInt8]) throws(AudioToolboxError) {
        guard bytes.fourCC(0) == "RIFF", bytes.fourCC(8) == "WAVE" else { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "not RIFF WAVE") }
    }

    func chunkHeader(_ input: StreamBuffer) throws(AudioToolboxError) -> (type: String, size: Int64?, headerLength: Int)? {
        guard input.count >= 8 else { return nil }
        let size = input.littleEndian32(4)
        // A streamed WAVE (a pipe) leaves the data size at 0 or 0xFFFFFFFF: to the end.
        let open = input.tag(0) == "data" && (size == 0 || size == UInt32.max)
        return (input.tag(0), open ? nil : Int64(size), 8)
    }

    func isData(_ type: String) -> Bool { type == "data" }
    func wants(_ type: String) -> Bool { type == "fmt " }
    var dataPrefixLength: Int { 0 }

    func read(_ type: String, _ body: [UInt8]) throws(AudioToolboxError) {
        guard body.count >= 16 else { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a 'fmt ' chunk of \(body.count) bytes") }
        var tag: UInt16 = body.le(0)
        let channels = Int(body.le(2, UInt16.self))
        let rate = Double(body.le(4, UInt32.self))
        let blockAlign = Int(body.le(12, UInt16.self))
        var bits = Int(body.le(14, UInt16.self))
        if tag == 0xFFFE, body.count >= 40 {
            tag = body.le(24)  // the sub-format GUID's first two bytes
            let valid = Int(body.le(18, UInt16.self))
            if valid > 0 { bits = valid }
        }
        guard channels > 0, blockAlign % channels == 0 else {
            throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "\(channels) channels in blocks of \(blockAlign)")
        }
        let bytesPerSample = blockAlign / channels
        switch tag {
        case 1:
            let flags: AudioFormatFlags = bits > 8 ? kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked : kAudioFormatFlagIsPacked
            format = try Self.pcm(rate: rate, channels: channels, bits: bits, bytesPerSample: bytesPerSample,
                                  flags: bits == bytesPerSample * 8 ? flags : flags & ~kAudioFormatFlagIsPacked | kAudioFormatFlagIsAlignedHigh)
        case 3: format = try Self.pcm(rate: rate, channels: channels, bits: bits, bytesPerSample: bytesPerSample, flags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked)
        case 6: format = try Self.pcm(rate: rate, channels: channels, bits: 8, bytesPerSample: 1, formatID: kAudioFormatALaw, flags: 0)
        case 7: format = try Self.pcm(rate: rate, channels: channels, bits: 8, bytesPerSample: 1, formatID: kAudioFormatULaw, flags: 0)
        default: throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "WAVE format tag \(tag)")
        }
    }

    func finish(dataPrefix: [UInt8], dataStart: inout Int64, dataSize: inout Int64?,
                _ header: inout StreamHeader) throws(AudioToolboxError) -> (properties: [AudioFileStreamPropertyID], layout: StreamPacketLayout) {
        try finishPCM(dataStart: dataStart, dataSize: &dataSize, &header)
    }
}

/// AIFF and AIFC: 'COMM' (big-endian PCM; AIFC 'NONE', 'sowt', 'fl32', 'fl64', 'ulaw', 'alaw'), 'SSND'.
final class AIFFChunkSyntax: PCMChunkSyntax, ChunkSyntax {
    private var isAIFC = false

    init() { super.init(fileType: kAudioFileAIFFType) }

    var fileHeaderLength: Int { 12 }

    func checkFileHeader(_ bytes: [UInt8]) throws(AudioToolboxError) {
        guard bytes.fourCC(0) == "FORM", bytes.fourCC(8) == "AIFF" || bytes.fourCC(8) == "AIFC" else {
            throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "not AIFF")
        }
        isAIFC = bytes.fourCC(8) == "AIFC"
        fileType = isAIFC ? kAudioFileAIFCType : kAudioFileAIFFType
    }

    func chunkHeader(_ input: StreamBuffer) throws(AudioToolboxError) -> (type: String, size: Int64?, headerLength: Int)? {
        guard input.count >= 8 else { return nil }
        return (input.tag(0), Int64(input.bigEndian32(4)), 8)
    }

    func isData(_ type: String) -> Bool { type == "SSND" }
    func wants(_ type: String) -> Bool { type == "COMM" }
    var dataPrefixLength: Int { 8 }

    func read(_ type: String, _ body: [UInt8]) throws(AudioToolboxError) {
        guard body.count >= 18 else { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a 'COMM' chunk of \(body.count) bytes") }
        let channels = Int(body.be(0, UInt16.self))
        frameCount = Int64(body.be(2, UInt32.self))
        let bits = Int(body.be(6, UInt16.self))
        let rate = Self.extended(Array(body[8..<18]))
        let compression = isAIFC && body.count >= 22 ? body.fourCC(18) : "NONE"
        let bytesPerSample = (bits + 7) / 8
        switch compression {
        case "NONE", "twos":
            format = try Self.pcm(rate: rate, channels: channels, bits: bits, bytesPerSample: bytesPerSample,
                                  flags: kAudioFormatFlagIsBigEndian | kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked)
        case "sowt":
            format = try Self.pcm(rate: rate, channels: channels, bits: bits, bytesPerSample: bytesPerSample, flags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked)
        case "fl32", "FL32":
            format = try Self.pcm(rate: rate, channels: channels, bits: 32, bytesPerSample: 4, flags: kAudioFormatFlagIsBigEndian | kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked)
        case "fl64", "FL64":
            format = try Self.pcm(rate: rate, channels: channels, bits: 64, bytesPerSample: 8, flags: kAudioFormatFlagIsBigEndian | kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked)
        case "ulaw", "ULAW":
            format = try Self.pcm(rate: rate, channels: channels, bits: 8, bytesPerSample: 1, formatID: kAudioFormatULaw, flags: 0)
        case "alaw", "ALAW":
            format = try Self.pcm(rate: rate, channels: channels, bits: 8, bytesPerSample: 1, formatID: kAudioFormatALaw, flags: 0)
        default:
            throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "AIFC compression '\(compression)'")
        }
    }

    func finish(dataPrefix: [UInt8], dataStart: inout Int64, dataSize: inout Int64?,
                _ header: inout StreamHeader) throws(AudioToolboxError) -> (properties: [AudioFileStreamPropertyID], layout: StreamPacketLayout) {
        // SSND: offset and block size, then `offset` bytes before the first frame.
        let offset = Int64(dataPrefix.be(0, UInt32.self))
        dataStart += offset
        dataSize = dataSize.map { $0 - offset }
        if let size = dataSize, size < 0 { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "an SSND offset past its chunk") }
        if let frames = frameCount, let format, format.mBytesPerFrame > 0 {
            dataSize = min(dataSize ?? Int64.max, frames * Int64(format.mBytesPerFrame))
        }
        return try finishPCM(dataStart: dataStart, dataSize: &dataSize, &header)
    }

    /// An 80-bit IEEE 754 extended number (AIFF's sample rate).
    static func extended(_ bytes: [UInt8]) -> Double {
        let exponent = Int(bytes.be(0, UInt16.self) & 0x7FFF)
        let mantissa: UInt64 = bytes.be(2)
        guard exponent != 0 || mantissa != 0, exponent != 0x7FFF else { return 0 }
        let value = Double(mantissa) * Double(sign: .plus, exponent: exponent - 16383 - 63, significand: 1)
        return bytes[0] & 0x80 != 0 ? -value : value
    }
}
