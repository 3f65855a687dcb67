import CAudioToolbox
import QueueCore

/// How one sample is encoded in the bytes an AudioStreamBasicDescription describes.
enum SampleEncoding: Equatable, Sendable {
    /// Two's-complement integer of 8, 16, 24 or 32 bits.
    case signedInteger(bits: Int)
    /// Unsigned 8-bit integer, 0x80 is silence (8-bit WAVE).
    case unsigned8
    case float32
    case float64
    /// G.711 µ-law bytes.
    case ulaw
    /// G.711 A-law bytes.
    case alaw

    var bytesPerSample: Int {
        switch self {
        case .signedInteger(let bits): bits / 8
        case .unsigned8, .ulaw, .alaw: 1
        case .float32: 4
        case .float64: 8
        }
    }
}

/// The byte layout of packed, interleaved audio data with one frame per packet: the only kind
/// of ASBD Audio File Services reads and writes here.
struct PCMLayout: Equatable, Sendable {
    var encoding: SampleEncoding
    /// Byte order of multi-byte samples; for 8-bit signed samples, the flag the ASBD carries.
    var isBigEndian: Bool
    var channelCount: Int
    var sampleRate: Double

    var bytesPerFrame: Int { encoding.bytesPerSample * channelCount }

    /// Parses and checks an ASBD.
    /// - Throws: kAudioFileUnsupportedDataFormatError ('fmt?') with the reason, for a compressed
    ///   or unknown format ID, a non-packed or non-interleaved layout, zero channels or rate,
    ///   or sizes that do not agree with each other.
    init(validating format: AudioStreamBasicDescription) throws(AudioToolboxError) {
        func unsupported(_ reason: String) -> AudioToolboxError {
            AudioToolboxError(kAudioFileUnsupportedDataFormatError, reason)
        }
        let flags = format.mFormatFlags
        guard format.mSampleRate.isFinite, format.mSampleRate > 0 else { throw unsupported("the sample rate must be above 0") }
        guard format.mSampleRate == format.mSampleRate.rounded(), format.mSampleRate <= Double(Int32.max) else {
            throw unsupported("libsndfile stores whole sample rates only (\(format.mSampleRate) Hz)")
        }
        guard format.mChannelsPerFrame > 0 else { throw unsupported("the channel count must be above 0") }
        guard format.mChannelsPerFrame <= 1024 else { throw unsupported("libsndfile holds at most 1024 channels") }
        guard flags & kAudioFormatFlagIsNonInterleaved == 0 else {
            throw unsupported("non-interleaved data is not supported: files hold interleaved frames")
        }
        guard format.mFramesPerPacket == 1 else { throw unsupported("mFramesPerPacket must be 1 for linear PCM, µ-law and A-law") }
        guard format.mBytesPerPacket == format.mBytesPerFrame else { throw unsupported("mBytesPerPacket must equal mBytesPerFrame") }

        let bits = Int(format.mBitsPerChannel)
        switch format.mFormatID {
        case kAudioFormatLinearPCM:
            let isFloat = flags & kAudioFormatFlagIsFloat != 0
            let isSigned = flags & kAudioFormatFlagIsSignedInteger != 0
            switch (isFloat, isSigned, bits) {
            case (true, false, 32): encoding = .float32
            case (true, false, 64): encoding = .float64
            case (true, _, _): throw unsupported("float samples are 32 or 64 bits without kAudioFormatFlagIsSignedInteger")
            case (false, true, 8), (false, true, 16), (false, true, 24), (false, true, 32): encoding = .signedInteger(bits: bits)
            case (false, false, 8): encoding = .unsigned8
            case (false, false, _): throw unsupported("unsigned samples are 8-bit only")
            default: throw unsupported("integer samples are 8, 16, 24 or 32 bits, not \(bits)")
            }
        case kAudioFormatULaw, kAudioFormatALaw:
            guard bits == 8 else { throw unsupported("µ-law and A-law samples are 8 bits") }
            encoding = format.mFormatID == kAudioFormatULaw ? .ulaw : .alaw
        case kAudioFormatFLAC, kAudioFormatOpus, kAudioFormatMPEGLayer3, kAudioFormatMPEGLayer1, kAudioFormatMPEGLayer2,
             kAudioFormatMPEG4AAC, kAudioFormatAppleLossless, kAudioFormatAppleIMA4, kAudioFormatAC3, kAudioFormatAMR:
            throw unsupported("writing compressed packets is not supported: describe linear PCM and libsndfile encodes it")
        default:
            throw unsupported("unknown format ID \(fourCharacterCode(format.mFormatID))")
        }
        isBigEndian = flags & kAudioFormatFlagIsBigEndian != 0
        channelCount = Int(format.mChannelsPerFrame)
        sampleRate = format.mSampleRate
        guard Int(format.mBytesPerFrame) == encoding.bytesPerSample * channelCount else {
            throw unsupported("mBytesPerFrame \(format.mBytesPerFrame) is not \(channelCount) packed \(bits)-bit samples")
        }
    }

    init(encoding: SampleEncoding, isBigEndian: Bool, channelCount: Int, sampleRate: Double) {
        self.encoding = encoding
        self.isBigEndian = isBigEndian
        self.channelCount = channelCount
        self.sampleRate = sampleRate
    }

    /// The ASBD of this layout, with Apple's flags (8-bit WAVE data: no signed flag).
    var streamDescription: AudioStreamBasicDescription {
        var formatID = kAudioFormatLinearPCM
        var flags: AudioFormatFlags = kAudioFormatFlagIsPacked
        var bits = UInt32(encoding.bytesPerSample * 8)
        switch encoding {
        case .signedInteger: flags |= kAudioFormatFlagIsSignedInteger
        case .unsigned8: break
        case .float32, .float64: flags |= kAudioFormatFlagIsFloat
        case .ulaw, .alaw:
            formatID = encoding == .ulaw ? kAudioFormatULaw : kAudioFormatALaw
            flags = 0
            bits = 8
        }
        if isBigEndian, encoding != .unsigned8, encoding != .ulaw, encoding != .alaw {
            flags |= kAudioFormatFlagIsBigEndian
        }
        let bytes = UInt32(bytesPerFrame)
        return AudioStreamBasicDescription(
            mSampleRate: sampleRate, mFormatID: formatID, mFormatFlags: flags, mBytesPerPacket: bytes,
            mFramesPerPacket: 1, mBytesPerFrame: bytes, mChannelsPerFrame: UInt32(channelCount),
            mBitsPerChannel: bits, mReserved: 0)
    }
}
