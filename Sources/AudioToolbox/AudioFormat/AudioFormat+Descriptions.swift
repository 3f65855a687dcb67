import AudioCodec
import CAudioToolbox

// The properties of a format: FormatInfo, FormatName, FormatIsVBR / IsExternallyFramed, the
// encode and decode lists and what an encoder takes. They describe what jaq's codecs (FFmpeg's,
// through AudioCodec) do, which is what AudioConverter and the queues accept.

extension AudioFormatProperty {
    /// The formats jaq knows without a codec: fixed sizes, one byte a sample.
    private static let companded: [AudioFormatID] = [kAudioFormatULaw, kAudioFormatALaw]

    /// kAudioFormatProperty_FormatInfo: `format` with what its format ID (and `cookie`, when
    /// given) fix filled in.
    /// - Throws: 'fmt?' for a format jaq does not know, a cookie that is not one of the format's,
    ///   or linear PCM without bits and channels.
    static func completedDescription(_ format: AudioStreamBasicDescription, cookie: [UInt8]) throws -> AudioStreamBasicDescription {
        var format = format
        let id = format.mFormatID
        func unsupported(_ why: String) -> AudioToolboxError { AudioToolboxError(kAudioFormatUnsupportedDataFormatError, why) }
        guard format.mSampleRate >= 0, format.mSampleRate <= 1e7 else { throw unsupported("a sample rate of \(format.mSampleRate) Hz") }
        switch id {
        case kAudioFormatLinearPCM:
            let bits = Int(format.mBitsPerChannel), channels = Int(format.mChannelsPerFrame)
            guard bits > 0, channels > 0 else { throw unsupported("linear PCM needs mBitsPerChannel and mChannelsPerFrame") }
            guard format.mFormatFlags & kAudioFormatFlagIsFloat == 0 || bits == 32 || bits == 64 else {
                throw unsupported("\(bits)-bit floating point")
            }
            let samples = format.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0 ? 1 : channels
            var frameBytes = samples * ((bits + 7) / 8)
            // Samples in wider words (24 bits aligned high in 32) keep the caller's frame size.
            let given = Int(format.mBytesPerFrame)
            if format.mFormatFlags & kAudioFormatFlagIsPacked == 0, given > frameBytes, given % samples == 0 { frameBytes = given }
            guard let bytes = UInt32(exactly: frameBytes) else { throw unsupported("\(channels) channels of \(bits) bits") }
            format.mBytesPerFrame = bytes
            format.mBytesPerPacket = bytes
            format.mFramesPerPacket = 1
        case _ where companded.contains(id):
            format.mFramesPerPacket = 1
            format.mBitsPerChannel = 8
            format.mBytesPerFrame = format.mChannelsPerFrame
            format.mBytesPerPacket = format.mChannelsPerFrame
        case _ where CompressedFormat.isCompressed(id):
            let hasCookie = !cookie.isEmpty && id != kAudioFormatMPEGLayer3 && id != kAudioFormatAppleIMA4
            if hasCookie {
                let described: CookieFormat
                do { described = try CookieFormat(formatID: id, cookie: cookie) } catch { throw unsupported("\(error)") }
                format.mFormatID = described.formatID
                format.mSampleRate = described.sampleRate
                format.mChannelsPerFrame = UInt32(described.channelCount)
                format.mFramesPerPacket = UInt32(described.framesPerPacket)
                if described.sourceBits > 0 { format.mFormatFlags = CompressedFormat.losslessFlags(bits: described.sourceBits) }
            } else {
                format.mFramesPerPacket = UInt32(CompressedFormat.defaultFramesPerPacket(id, sampleRate: format.mSampleRate))
            }
            format.mBytesPerPacket = UInt32(clamping: CompressedFormat.constantBytesPerPacket(id, channels: Int(format.mChannelsPerFrame)))
            format.mBytesPerFrame = 0
            format.mBitsPerChannel = 0
        default:
            throw unsupported("jaq has no codec for \(fourCharacterCode(id))")
        }
        return format
    }

    /// kAudioFormatProperty_FormatName: "MPEG-4 AAC"; for linear PCM its sample format,
    /// channels and rate ("Linear PCM, 16 bit little-endian signed integer, 2 channels, 44100 Hz").
    static func formatName(_ format: AudioStreamBasicDescription) throws -> String {
        let names: [AudioFormatID: String] = [
            kAudioFormatMPEG4AAC: "MPEG-4 AAC", kAudioFormatMPEG4AAC_HE: "MPEG-4 HE AAC",
            kAudioFormatMPEG4AAC_HE_V2: "MPEG-4 HE AAC V2", kAudioFormatAppleLossless: "Apple Lossless",
            kAudioFormatMPEGLayer3: "MPEG Layer 3", kAudioFormatFLAC: "FLAC", kAudioFormatOpus: "Opus",
            kAudioFormatAppleIMA4: "IMA 4:1", kAudioFormatULaw: "µLaw 2:1", kAudioFormatALaw: "aLaw 2:1",
        ]
        if let name = names[format.mFormatID] { return name }
        guard format.mFormatID == kAudioFormatLinearPCM else {
            throw AudioToolboxError(kAudioFormatUnsupportedDataFormatError, "jaq has no codec for \(fourCharacterCode(format.mFormatID))")
        }
        let flags = format.mFormatFlags
        var parts = ["Linear PCM"]
        if format.mBitsPerChannel > 0 {
            let kind = flags & kAudioFormatFlagIsFloat != 0 ? "float"
                : flags & kAudioFormatFlagIsSignedInteger != 0 ? "signed integer" : "unsigned integer"
            let endian = format.mBitsPerChannel <= 8 ? "" : flags & kAudioFormatFlagIsBigEndian != 0 ? "big-endian " : "little-endian "
            parts.append("\(format.mBitsPerChannel) bit \(endian)\(kind)")
        }
        if flags & kAudioFormatFlagIsNonInterleaved != 0 { parts.append("deinterleaved") }
        if format.mChannelsPerFrame > 0 { parts.append(format.mChannelsPerFrame == 1 ? "1 channel" : "\(format.mChannelsPerFrame) channels") }
        if format.mSampleRate > 0 {
            let rate = format.mSampleRate
            parts.append(rate == rate.rounded() && rate < 1e9 ? "\(Int(rate)) Hz" : "\(rate) Hz")
        }
        return parts.joined(separator: ", ")
    }

    /// kAudioFormatProperty_FormatIsVBR and ...IsExternallyFramed: packets of varying size,
    /// which need packet descriptions (every compressed format here but IMA4).
    static func isVariablePacketSize(_ format: AudioStreamBasicDescription) throws -> Bool {
        let id = format.mFormatID
        if id == kAudioFormatLinearPCM || id == kAudioFormatAppleIMA4 || companded.contains(id) { return false }
        guard CompressedFormat.isCompressed(id) else {
            throw AudioToolboxError(kAudioFormatUnsupportedDataFormatError, "jaq has no codec for \(fourCharacterCode(id))")
        }
        return true
    }

    /// kAudioFormatProperty_EncodeFormatIDs: linear PCM, and what this FFmpeg encodes of
    /// AAC, ALAC, FLAC, Opus and IMA4.
    static var encodeFormatIDs: [AudioFormatID] {
        [kAudioFormatLinearPCM] + CompressedFormat.encodable.filter { Codec.canEncode(formatID: $0) }
    }

    /// kAudioFormatProperty_DecodeFormatIDs: linear PCM, and what this FFmpeg decodes.
    static var decodeFormatIDs: [AudioFormatID] {
        [kAudioFormatLinearPCM] + CompressedFormat.decodable.filter { Codec.canDecode(formatID: $0) }
    }

    /// kAudioFormatProperty_AvailableEncodeSampleRates: AAC's and Opus's rates one by one
    /// (minimum = maximum); one range for the lossless encoders and IMA4.
    static func encodeSampleRates(_ id: AudioFormatID) throws -> [AudioValueRange] {
        try requireEncoder(id)
        let rates: [Double]
        switch id {
        case kAudioFormatMPEG4AAC: rates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000]
        case kAudioFormatOpus: rates = [8000, 12000, 16000, 24000, 48000]
        default: return [AudioValueRange(mMinimum: 8000, mMaximum: 384_000)]
        }
        return rates.map { AudioValueRange(mMinimum: $0, mMaximum: $0) }
    }

    /// kAudioFormatProperty_AvailableEncodeBitRates, in bits per second for one channel (a
    /// stream's range is this times its channel count); none for the formats without a bit rate.
    static func encodeBitRates(_ id: AudioFormatID) throws -> [AudioValueRange] {
        try requireEncoder(id)
        switch id {
        case kAudioFormatMPEG4AAC: return [AudioValueRange(mMinimum: 8000, mMaximum: 320_000)]
        case kAudioFormatOpus: return [AudioValueRange(mMinimum: 6000, mMaximum: 256_000)]
        default: return []
        }
    }

    private static func requireEncoder(_ id: AudioFormatID) throws {
        guard id != kAudioFormatLinearPCM, encodeFormatIDs.contains(id) else {
            throw AudioToolboxError(kAudioFormatUnsupportedDataFormatError, "jaq has no encoder for \(fourCharacterCode(id))")
        }
    }
}
