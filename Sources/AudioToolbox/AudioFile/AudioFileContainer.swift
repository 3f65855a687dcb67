import CAudioToolbox
import SoundFile

/// A file type AudioFileCreateWithURL can write, and the data formats it holds.
///
/// The rules follow what each container stores on Apple platforms; Docs/audiofile.md has the
/// same table for users.
enum WritableContainer: CaseIterable, Sendable {
    case wave, rf64, wave64, aiff, aifc, caf, next, flac, oggVorbis, oggOpus, mp3

    init?(typeID: AudioFileTypeID) {
        guard let match = Self.allCases.first(where: { $0.typeID == typeID }) else { return nil }
        self = match
    }

    var typeID: AudioFileTypeID {
        switch self {
        case .wave: kAudioFileWAVEType
        case .rf64: kAudioFileRF64Type
        case .wave64: kAudioFileWave64Type
        case .aiff: kAudioFileAIFFType
        case .aifc: kAudioFileAIFCType
        case .caf: kAudioFileCAFType
        case .next: kAudioFileNextType
        case .flac: kAudioFileFLACType
        case .oggVorbis: kAudioFileOggVorbisType
        case .oggOpus: kAudioFileOggOpusType
        case .mp3: kAudioFileMP3Type
        }
    }

    var name: String {
        switch self {
        case .wave: "WAVE"
        case .rf64: "RF64"
        case .wave64: "Wave64"
        case .aiff: "AIFF"
        case .aifc: "AIFC"
        case .caf: "CAF"
        case .next: "NeXT/Sun"
        case .flac: "FLAC"
        case .oggVorbis: "Ogg Vorbis"
        case .oggOpus: "Ogg Opus"
        case .mp3: "MP3"
        }
    }

    /// Whether libsndfile can read back what is being written in the same handle (SFM_RDWR).
    /// The others are written with SFM_WRITE: append only, readable once closed.
    var opensForReadWrite: Bool {
        switch self {
        case .wave, .rf64, .wave64, .aiff, .aifc, .caf: true
        case .next, .flac, .oggVorbis, .oggOpus, .mp3: false
        }
    }

    /// Whether libsndfile encodes the samples (typed frames in, a codec's stream out).
    var isEncoded: Bool {
        switch self {
        case .wave, .rf64, .wave64, .aiff, .aifc, .caf, .next: false
        case .flac, .oggVorbis, .oggOpus, .mp3: true
        }
    }

    /// Whether libsndfile can rewrite the header after every write (SFC_SET_UPDATE_HEADER_AUTO).
    /// The encoded types finish their streams at close; rewriting an Ogg header mid-stream
    /// would start a second logical stream.
    var updatesHeaderWhileWriting: Bool { !isEncoded }

    /// The libsndfile format and the sample transfer for data in `layout`.
    /// - Throws: 'fmt?' with the reason when this container cannot hold `layout`;
    ///   'typ?' when this libsndfile was built without the container's encoder.
    func storage(for layout: PCMLayout) throws(AudioToolboxError) -> (format: SoundFile.Format, transfer: SampleTransfer) {
        func unsupported(_ reason: String) -> AudioToolboxError {
            AudioToolboxError(kAudioFileUnsupportedDataFormatError, "\(name) files \(reason)")
        }
        let storage: (format: SoundFile.Format, transfer: SampleTransfer)
        let encoding = layout.encoding
        switch self {
        case .wave, .rf64, .wave64:
            let major: SoundFile.MajorFormat = self == .wave ? .wav : self == .rf64 ? .rf64 : .w64
            if encoding == .signedInteger(bits: 8) {
                throw unsupported("store 8-bit samples unsigned: describe them without kAudioFormatFlagIsSignedInteger")
            }
            if encoding.bytesPerSample > 1, layout.isBigEndian { throw unsupported("hold little-endian samples only") }
            storage = (SoundFile.Format(major, try Self.subtype(encoding)), .raw)
        case .aiff:
            guard case .signedInteger = encoding else {
                throw unsupported("hold signed integer samples only (use AIFC for float, µ-law, A-law)")
            }
            if encoding.bytesPerSample > 1, !layout.isBigEndian { throw unsupported("hold big-endian samples only (use AIFC)") }
            storage = (SoundFile.Format(.aiff, try Self.subtype(encoding)), .raw)
        case .aifc:
            switch encoding {
            case .signedInteger(bits: 8): throw unsupported("hold 16, 24 or 32-bit integers (use AIFF for 8-bit)")
            case .signedInteger(let bits):
                // Little-endian AIFC is 'sowt' (16-bit); for 24 and 32 bits libsndfile writes
                // tags ('42n1', '23ni') that other programs do not read.
                if !layout.isBigEndian, bits != 16 { throw unsupported("hold little-endian integers as 16-bit 'sowt' only") }
                storage = (SoundFile.Format(.aiff, try Self.subtype(encoding), layout.isBigEndian ? .big : .little), .raw)
            case .float32, .float64:
                if !layout.isBigEndian { throw unsupported("hold big-endian float samples only") }
                storage = (SoundFile.Format(.aiff, try Self.subtype(encoding)), .raw)
            case .ulaw, .alaw: storage = (SoundFile.Format(.aiff, try Self.subtype(encoding)), .raw)
            case .unsigned8: throw unsupported("hold signed samples only")
            }
        case .caf:
            if encoding == .unsigned8 { throw unsupported("hold signed samples only") }
            let endianness: SoundFile.Endianness = encoding == .ulaw || encoding == .alaw ? .file : layout.isBigEndian ? .big : .little
            storage = (SoundFile.Format(.caf, try Self.subtype(encoding), endianness), .raw)
        case .next:
            if encoding == .unsigned8 { throw unsupported("hold signed samples only") }
            if encoding.bytesPerSample > 1, !layout.isBigEndian { throw unsupported("hold big-endian samples only") }
            storage = (SoundFile.Format(.au, try Self.subtype(encoding), .big), .raw)
        case .flac:
            guard case .signedInteger(let bits) = encoding, bits <= 24 else {
                throw unsupported("are written from 8, 16 or 24-bit signed integer samples")
            }
            guard layout.channelCount <= 8 else { throw unsupported("hold at most 8 channels") }
            guard layout.sampleRate <= 655_350 else { throw unsupported("hold sample rates up to 655350 Hz") }
            storage = (SoundFile.Format(.flac, try Self.subtype(encoding)), .integer(bits: bits, bigEndian: layout.isBigEndian))
        case .oggVorbis, .oggOpus, .mp3:
            let transfer: SampleTransfer
            switch encoding {
            case .signedInteger(bits: 16): transfer = .integer(bits: 16, bigEndian: layout.isBigEndian)
            case .float32: transfer = .float32(bigEndian: layout.isBigEndian)
            default: throw unsupported("are written from 16-bit integer or 32-bit float samples")
            }
            storage = (try lossyFormat(layout, unsupported), transfer)
        }
        guard SoundFile.isAvailable(storage.format.major, storage.format.subtype) else {
            throw AudioToolboxError(kAudioFileUnsupportedFileTypeError,
                                    "this libsndfile (\(SoundFile.version)) was built without the \(name) encoder")
        }
        let info = SoundFile.Info(sampleRate: Int(layout.sampleRate), channelCount: layout.channelCount, format: storage.format)
        guard info.isWritable else {
            throw unsupported("cannot hold \(layout.channelCount) channels of this data at \(Int(layout.sampleRate)) Hz (libsndfile)")
        }
        return storage
    }

    private func lossyFormat(_ layout: PCMLayout, _ unsupported: (String) -> AudioToolboxError) throws(AudioToolboxError) -> SoundFile.Format {
        let rate = Int(layout.sampleRate)
        switch self {
        case .oggOpus:
            guard [8000, 12000, 16000, 24000, 48000].contains(rate) else {
                throw unsupported("are encoded at 8000, 12000, 16000, 24000 or 48000 Hz only")
            }
            guard layout.channelCount <= 8 else { throw unsupported("hold at most 8 channels") }
            return SoundFile.Format(.ogg, .opus)
        case .mp3:
            guard [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000].contains(rate) else {
                throw unsupported("are encoded at the MPEG sample rates (8000 to 48000 Hz) only")
            }
            guard layout.channelCount <= 2 else { throw unsupported("hold 1 or 2 channels") }
            return SoundFile.Format(.mpeg, .mpegLayerIII)
        default:
            guard layout.channelCount <= 255 else { throw unsupported("hold at most 255 channels") }
            return SoundFile.Format(.ogg, .vorbis)
        }
    }

    private static func subtype(_ encoding: SampleEncoding) throws(AudioToolboxError) -> SoundFile.Subtype {
        switch encoding {
        case .signedInteger(bits: 8): .pcmS8
        case .signedInteger(bits: 16): .pcm16
        case .signedInteger(bits: 24): .pcm24
        case .signedInteger: .pcm32
        case .unsigned8: .pcmU8
        case .float32: .float
        case .float64: .double
        case .ulaw: .ulaw
        case .alaw: .alaw
        }
    }
}

/// How an open file's audio is presented through the API: its data format and transfer.
enum FilePresentation {
    /// Containers whose PCM, float, µ-law and A-law data libsndfile stores as plain bytes.
    static let rawMajors: Set<SoundFile.MajorFormat> = [.wav, .wavex, .aiff, .au, .caf, .w64, .rf64]
    /// Containers libsndfile can open for reading and writing at once.
    static let readWriteMajors: Set<SoundFile.MajorFormat> = [.wav, .wavex, .aiff, .caf, .w64, .rf64]

    /// The layout and transfer for reading a file libsndfile opened: stored bytes as they are
    /// where possible, otherwise the decoded samples as native-endian integers of the source's
    /// depth (FLAC, ALAC, ADPCM...) or native Float32 (Vorbis, Opus, MPEG).
    static func of(_ info: SoundFile.Info, rawBigEndian: Bool) -> (layout: PCMLayout, transfer: SampleTransfer) {
        let rate = Double(info.sampleRate)
        func layout(_ encoding: SampleEncoding, bigEndian: Bool = false) -> PCMLayout {
            PCMLayout(encoding: encoding, isBigEndian: bigEndian, channelCount: info.channelCount, sampleRate: rate)
        }
        let subtype = info.format.subtype
        if rawMajors.contains(info.format.major) {
            switch subtype {
            case .pcmS8: return (layout(.signedInteger(bits: 8), bigEndian: rawBigEndian), .raw)
            case .pcm16: return (layout(.signedInteger(bits: 16), bigEndian: rawBigEndian), .raw)
            case .pcm24: return (layout(.signedInteger(bits: 24), bigEndian: rawBigEndian), .raw)
            case .pcm32: return (layout(.signedInteger(bits: 32), bigEndian: rawBigEndian), .raw)
            case .pcmU8: return (layout(.unsigned8), .raw)
            case .float: return (layout(.float32, bigEndian: rawBigEndian), .raw)
            case .double: return (layout(.float64, bigEndian: rawBigEndian), .raw)
            case .ulaw: return (layout(.ulaw), .raw)
            case .alaw: return (layout(.alaw), .raw)
            default: break
            }
        }
        switch subtype {
        case .pcmS8, .pcmU8, .dpcm8:
            return (layout(.signedInteger(bits: 8)), .integer(bits: 8, bigEndian: false))
        case .pcm24, .dwvw24, .alac20, .alac24:
            return (layout(.signedInteger(bits: 24)), .integer(bits: 24, bigEndian: false))
        case .pcm32, .dwvwN, .alac32:
            return (layout(.signedInteger(bits: 32)), .integer(bits: 32, bigEndian: false))
        case .float, .vorbis, .opus, .mpegLayerI, .mpegLayerII, .mpegLayerIII:
            return (layout(.float32), .float32(bigEndian: false))
        case .double:
            return (layout(.float64), .float64(bigEndian: false))
        default:
            return (layout(.signedInteger(bits: 16)), .integer(bits: 16, bigEndian: false))
        }
    }

    /// Apple's file type ID for what libsndfile opened; `header` (the first bytes) tells AIFF
    /// from AIFC, which libsndfile does not. 0 for types Apple has no ID for.
    static func fileTypeID(_ format: SoundFile.Format, header: [UInt8]) -> AudioFileTypeID {
        switch format.major {
        case .wav, .wavex: kAudioFileWAVEType
        case .aiff: FileSignature.matches(header, "AIFC", at: 8) ? kAudioFileAIFCType : kAudioFileAIFFType
        case .au: kAudioFileNextType
        case .caf: kAudioFileCAFType
        case .w64: kAudioFileWave64Type
        case .rf64: kAudioFileRF64Type
        case .flac: kAudioFileFLACType
        case .sd2: kAudioFileSoundDesigner2Type
        case .ogg:
            switch format.subtype {
            case .vorbis: kAudioFileOggVorbisType
            case .opus: kAudioFileOggOpusType
            default: 0
            }
        case .mpeg:
            switch format.subtype {
            case .mpegLayerI: kAudioFileMP1Type
            case .mpegLayerII: kAudioFileMP2Type
            default: kAudioFileMP3Type
            }
        default: 0
        }
    }
}

/// The magic bytes of the audio file types jaq recognises, to tell a damaged file of a known
/// type ('dta?') from content of no known type ('typ?').
enum FileSignature {
    private static let leadingTags = ["RIFF", "RIFX", "RF64", "riff", "FORM", "caff", "fLaC", "OggS", ".snd", "dns.", "ID3"]

    /// Whether `header` starts like an audio file of a type jaq reads.
    static func isRecognised(_ header: [UInt8]) -> Bool {
        leadingTags.contains { matches(header, $0, at: 0) }
    }

    static func matches(_ header: [UInt8], _ tag: String, at offset: Int) -> Bool {
        let bytes = Array(tag.utf8)
        return header.count >= offset + bytes.count && Array(header[offset..<offset + bytes.count]) == bytes
    }
}
