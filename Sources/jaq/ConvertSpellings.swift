import AudioToolbox

// The file types and data formats `jaq convert` (and `jaq render -o`) read from the command
// line: macOS afconvert's spellings (caff, m4af, WAVE, AIFF; LEI16, BEF32, aac, alac) beside
// jaq's own (caf, m4a, wav; 16, 24, float).

/// An output file type: its AudioFileTypeID and the data format it holds when none is asked for.
struct OutputFileType: Equatable {
    let id: AudioFileTypeID
    let name: String

    /// afconvert's four-character codes and jaq's names (file extensions).
    static let spellings: [String: (AudioFileTypeID, String)] = [
        "caff": (kAudioFileCAFType, "CAF"), "caf": (kAudioFileCAFType, "CAF"),
        "m4af": (kAudioFileM4AType, "MPEG-4 audio"), "m4a": (kAudioFileM4AType, "MPEG-4 audio"),
        "mp4f": (kAudioFileMPEG4Type, "MPEG-4"), "mp4": (kAudioFileMPEG4Type, "MPEG-4"),
        "WAVE": (kAudioFileWAVEType, "WAVE"), "wav": (kAudioFileWAVEType, "WAVE"), "wave": (kAudioFileWAVEType, "WAVE"),
        "AIFF": (kAudioFileAIFFType, "AIFF"), "aiff": (kAudioFileAIFFType, "AIFF"), "aif": (kAudioFileAIFFType, "AIFF"),
        "AIFC": (kAudioFileAIFCType, "AIFC"), "aifc": (kAudioFileAIFCType, "AIFC"),
        "W64f": (kAudioFileWave64Type, "Wave64"), "w64": (kAudioFileWave64Type, "Wave64"),
        "RF64": (kAudioFileRF64Type, "RF64"), "rf64": (kAudioFileRF64Type, "RF64"),
        "flac": (kAudioFileFLACType, "FLAC"),
        "adts": (kAudioFileAAC_ADTSType, "ADTS AAC"), "aac": (kAudioFileAAC_ADTSType, "ADTS AAC"),
        "MPG3": (kAudioFileMP3Type, "MP3"), "mp3": (kAudioFileMP3Type, "MP3"),
        "OggV": (kAudioFileOggVorbisType, "Ogg Vorbis"), "ogg": (kAudioFileOggVorbisType, "Ogg Vorbis"),
        "OggO": (kAudioFileOggOpusType, "Ogg Opus"), "opus": (kAudioFileOggOpusType, "Ogg Opus"),
    ]

    init?(spelling: String) {
        guard let (id, name) = Self.spellings[spelling] ?? Self.spellings[spelling.lowercased()] else { return nil }
        self.id = id
        self.name = name
    }

    /// The type a path's extension names (file.m4a → m4af), nil for none jaq writes.
    init?(path: String) {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        self.init(spelling: String(path[path.index(after: dot)...]).lowercased())
    }

    /// Types that hold compressed packets only (MPEG-4, ADTS): never linear PCM.
    var holdsPacketsOnly: Bool { [kAudioFileM4AType, kAudioFileMPEG4Type, kAudioFileAAC_ADTSType].contains(id) }
    /// Types whose linear PCM is big-endian.
    var isBigEndian: Bool { [kAudioFileAIFFType, kAudioFileAIFCType].contains(id) }
    /// Types of integer samples only: AIFF, and those libsndfile encodes from linear PCM.
    var holdsIntegersOnly: Bool {
        [kAudioFileAIFFType, kAudioFileFLACType, kAudioFileMP3Type, kAudioFileOggVorbisType, kAudioFileOggOpusType].contains(id)
    }
}

/// A `-d FORMAT[@RATE]` value.
struct DataFormatSpelling: Equatable {
    enum Kind: Equatable {
        case pcm(bits: Int, float: Bool, unsigned: Bool, bigEndian: Bool?)
        case codec(AudioFormatID)
    }

    let kind: Kind
    let sampleRate: Double?

    static let codecs: [String: AudioFormatID] = [
        "aac": kAudioFormatMPEG4AAC, "alac": kAudioFormatAppleLossless, "flac": kAudioFormatFLAC, "opus": kAudioFormatOpus,
        "ima4": kAudioFormatAppleIMA4, "ulaw": kAudioFormatULaw, "alaw": kAudioFormatALaw,
    ]

    init(kind: Kind, sampleRate: Double?) {
        self.kind = kind
        self.sampleRate = sampleRate
    }

    /// Parses afconvert's `LEI16`, `BEF32`, `UI8`, `aac@44100` and jaq's `16`, `24`, `32`, `float`, `s16`, `f32`.
    init?(_ text: String) {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 {
            guard let rate = Double(parts[1]), rate >= 1, rate <= 768_000 else { return nil }
            sampleRate = rate
        } else {
            sampleRate = nil
        }
        guard let kind = Self.kind(String(parts[0])) else { return nil }
        self.kind = kind
    }

    private static func kind(_ text: String) -> Kind? {
        if let codec = codecs[text.lowercased()] { return .codec(codec) }
        switch text.lowercased() {
        case "float", "f32": return .pcm(bits: 32, float: true, unsigned: false, bigEndian: nil)
        case "double", "f64": return .pcm(bits: 64, float: true, unsigned: false, bigEndian: nil)
        case "8", "16", "24", "32": return .pcm(bits: Int(text)!, float: false, unsigned: false, bigEndian: nil)
        case "s8", "s16", "s24", "s32", "i8", "i16", "i24", "i32":
            return .pcm(bits: Int(text.dropFirst())!, float: false, unsigned: false, bigEndian: nil)
        default: break
        }
        // afconvert: [LE|BE][F|I|UI]bits
        var rest = Substring(text)
        var bigEndian: Bool?
        if rest.hasPrefix("LE") { bigEndian = false; rest = rest.dropFirst(2) } else if rest.hasPrefix("BE") { bigEndian = true; rest = rest.dropFirst(2) }
        let float = rest.hasPrefix("F"), unsigned = rest.hasPrefix("UI")
        guard float || unsigned || rest.hasPrefix("I") else { return nil }
        rest = rest.dropFirst(unsigned ? 2 : 1)
        guard let bits = Int(rest), float ? [32, 64].contains(bits) : [8, 16, 24, 32].contains(bits), !(unsigned && bits != 8) else { return nil }
        return .pcm(bits: bits, float: float, unsigned: unsigned, bigEndian: bigEndian)
    }

    /// The description to create the output with: `channels` at `rate`, for `type`;
    /// `sourceBits` decides ALAC's source depth.
    func description(channels: Int, rate: Double, type: OutputFileType, sourceBits: Int) -> AudioStreamBasicDescription {
        switch kind {
        case .codec(let id):
            var format = AudioStreamBasicDescription(mSampleRate: rate, mFormatID: id, mFormatFlags: 0, mBytesPerPacket: 0, mFramesPerPacket: 0,
                                                     mBytesPerFrame: 0, mChannelsPerFrame: UInt32(channels), mBitsPerChannel: 0, mReserved: 0)
            if id == kAudioFormatAppleLossless {
                format.mFormatFlags = sourceBits >= 32 ? 4 : sourceBits >= 24 ? 3 : sourceBits >= 20 ? 2 : 1
            }
            if id == kAudioFormatULaw || id == kAudioFormatALaw {
                format.mBytesPerFrame = UInt32(channels)
                format.mBytesPerPacket = UInt32(channels)
                format.mFramesPerPacket = 1
                format.mBitsPerChannel = 8
            }
            return format
        case let .pcm(bits, float, unsigned, bigEndian):
            return packedPCMFormat(rate: rate, channels: channels, bits: bits, float: float, unsigned: unsigned,
                              bigEndian: bigEndian ?? type.isBigEndian)
        }
    }
}

/// A packed, interleaved linear PCM description.
func packedPCMFormat(rate: Double, channels: Int, bits: Int, float: Bool, unsigned: Bool = false, bigEndian: Bool = false) -> AudioStreamBasicDescription {
    var flags: AudioFormatFlags = kAudioFormatFlagIsPacked
    if float { flags |= kAudioFormatFlagIsFloat } else if !unsigned { flags |= kAudioFormatFlagIsSignedInteger }
    if bigEndian, bits > 8 { flags |= kAudioFormatFlagIsBigEndian }
    let bytes = UInt32(bits / 8 * channels)
    return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags, mBytesPerPacket: bytes,
                                       mFramesPerPacket: 1, mBytesPerFrame: bytes, mChannelsPerFrame: UInt32(channels),
                                       mBitsPerChannel: UInt32(bits), mReserved: 0)
}
