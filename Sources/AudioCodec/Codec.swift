internal import CFFmpeg

/// The codecs jaq codes packets of, by name: what the API layer (AudioToolbox) knows of a
/// codec without FFmpeg's types. The mapping to and from FFmpeg's `AVCodecID` lives here and
/// nowhere else.
public enum Codec: Sendable, Equatable, CaseIterable {
    /// MPEG-4 AAC, every profile (AAC-LC, HE-AAC, HE-AAC v2): AV_CODEC_ID_AAC.
    case aac
    /// Apple Lossless: AV_CODEC_ID_ALAC.
    case alac
    /// MPEG layer III: AV_CODEC_ID_MP3.
    case mp3
    /// FLAC: AV_CODEC_ID_FLAC.
    case flac
    /// Opus: AV_CODEC_ID_OPUS.
    case opus
    /// Apple's IMA4 ADPCM: AV_CODEC_ID_ADPCM_IMA_QT.
    case ima4

    /// The codec of one of Apple's compressed format IDs; nil for an ID that names none of these.
    public init?(formatID: UInt32) {
        switch formatID {
        case CompressedFormat.mpeg4AAC, CompressedFormat.mpeg4AAC_HE, CompressedFormat.mpeg4AAC_HE_V2: self = .aac
        case CompressedFormat.appleLossless: self = .alac
        case CompressedFormat.mpegLayer3: self = .mp3
        case CompressedFormat.flac: self = .flac
        case CompressedFormat.opus: self = .opus
        case CompressedFormat.appleIMA4: self = .ima4
        default: return nil
        }
    }

    /// The codec FFmpeg names `id`; nil for every codec jaq has no packet coder for.
    init?(_ id: AVCodecID) {
        guard let match = Self.allCases.first(where: { $0.avCodecID == id }) else { return nil }
        self = match
    }

    /// FFmpeg's identity of the codec.
    var avCodecID: AVCodecID {
        switch self {
        case .aac: AV_CODEC_ID_AAC
        case .alac: AV_CODEC_ID_ALAC
        case .mp3: AV_CODEC_ID_MP3
        case .flac: AV_CODEC_ID_FLAC
        case .opus: AV_CODEC_ID_OPUS
        case .ima4: AV_CODEC_ID_ADPCM_IMA_QT
        }
    }

    /// FFmpeg's short name of a codec ("aac", "vorbis"), for messages.
    static func name(_ id: AVCodecID) -> String {
        String(cString: avcodec_get_name(id))
    }
}
