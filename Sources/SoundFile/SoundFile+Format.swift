import CSndFile

extension SoundFile {
    /// A libsndfile container (`SF_FORMAT_*`, the `SF_FORMAT_TYPEMASK` bits).
    public enum MajorFormat: Int32, CaseIterable, Sendable {
        /// `SF_FORMAT_WAV`: Microsoft WAVE (RIFF; RIFX when big-endian).
        case wav = 0x01_0000
        /// `SF_FORMAT_AIFF`: Apple/SGI AIFF, and AIFC when the encoding needs it.
        case aiff = 0x02_0000
        /// `SF_FORMAT_AU`: Sun/NeXT AU.
        case au = 0x03_0000
        /// `SF_FORMAT_RAW`: headerless.
        case raw = 0x04_0000
        /// `SF_FORMAT_PAF`: Ensoniq PARIS.
        case paf = 0x05_0000
        /// `SF_FORMAT_SVX`: Amiga IFF / SVX8 / SV16.
        case svx = 0x06_0000
        /// `SF_FORMAT_NIST`: NIST Sphere.
        case nist = 0x07_0000
        /// `SF_FORMAT_VOC`: Creative Labs VOC.
        case voc = 0x08_0000
        /// `SF_FORMAT_IRCAM`: Berkeley/IRCAM/CARL.
        case ircam = 0x0A_0000
        /// `SF_FORMAT_W64`: Sonic Foundry Wave64.
        case w64 = 0x0B_0000
        /// `SF_FORMAT_MAT4`: Matlab 4.2 / GNU Octave 2.0.
        case mat4 = 0x0C_0000
        /// `SF_FORMAT_MAT5`: Matlab 5.0 / GNU Octave 2.1.
        case mat5 = 0x0D_0000
        /// `SF_FORMAT_PVF`: Portable Voice Format.
        case pvf = 0x0E_0000
        /// `SF_FORMAT_XI`: FastTracker 2 instrument.
        case xi = 0x0F_0000
        /// `SF_FORMAT_HTK`: HMM Tool Kit.
        case htk = 0x10_0000
        /// `SF_FORMAT_SDS`: MIDI Sample Dump Standard.
        case sds = 0x11_0000
        /// `SF_FORMAT_AVR`: Audio Visual Research.
        case avr = 0x12_0000
        /// `SF_FORMAT_WAVEX`: WAVE with WAVEFORMATEXTENSIBLE (a channel mask).
        case wavex = 0x13_0000
        /// `SF_FORMAT_SD2`: Sound Designer II.
        case sd2 = 0x16_0000
        /// `SF_FORMAT_FLAC`: FLAC.
        case flac = 0x17_0000
        /// `SF_FORMAT_CAF`: Apple Core Audio File.
        case caf = 0x18_0000
        /// `SF_FORMAT_WVE`: Psion WVE.
        case wve = 0x19_0000
        /// `SF_FORMAT_OGG`: the Xiph Ogg container (Vorbis, Opus).
        case ogg = 0x20_0000
        /// `SF_FORMAT_MPC2K`: Akai MPC 2000.
        case mpc2k = 0x21_0000
        /// `SF_FORMAT_RF64`: RIFF 64.
        case rf64 = 0x22_0000
        /// `SF_FORMAT_MPEG`: MPEG-1/2 audio stream (MP1, MP2, MP3).
        case mpeg = 0x23_0000
    }

    /// A libsndfile encoding (`SF_FORMAT_*`, the `SF_FORMAT_SUBMASK` bits).
    public enum Subtype: Int32, CaseIterable, Sendable {
        /// `SF_FORMAT_PCM_S8`: signed 8-bit integer.
        case pcmS8 = 0x0001
        /// `SF_FORMAT_PCM_16`: signed 16-bit integer.
        case pcm16 = 0x0002
        /// `SF_FORMAT_PCM_24`: signed 24-bit integer.
        case pcm24 = 0x0003
        /// `SF_FORMAT_PCM_32`: signed 32-bit integer.
        case pcm32 = 0x0004
        /// `SF_FORMAT_PCM_U8`: unsigned 8-bit integer (WAVE and RAW).
        case pcmU8 = 0x0005
        /// `SF_FORMAT_FLOAT`: 32-bit float.
        case float = 0x0006
        /// `SF_FORMAT_DOUBLE`: 64-bit float.
        case double = 0x0007
        /// `SF_FORMAT_ULAW`: µ-law.
        case ulaw = 0x0010
        /// `SF_FORMAT_ALAW`: A-law.
        case alaw = 0x0011
        /// `SF_FORMAT_IMA_ADPCM`.
        case imaADPCM = 0x0012
        /// `SF_FORMAT_MS_ADPCM`.
        case msADPCM = 0x0013
        /// `SF_FORMAT_GSM610`.
        case gsm610 = 0x0020
        /// `SF_FORMAT_VOX_ADPCM`.
        case voxADPCM = 0x0021
        /// `SF_FORMAT_NMS_ADPCM_16`.
        case nmsADPCM16 = 0x0022
        /// `SF_FORMAT_NMS_ADPCM_24`.
        case nmsADPCM24 = 0x0023
        /// `SF_FORMAT_NMS_ADPCM_32`.
        case nmsADPCM32 = 0x0024
        /// `SF_FORMAT_G721_32`.
        case g721_32 = 0x0030
        /// `SF_FORMAT_G723_24`.
        case g723_24 = 0x0031
        /// `SF_FORMAT_G723_40`.
        case g723_40 = 0x0032
        /// `SF_FORMAT_DWVW_12`.
        case dwvw12 = 0x0040
        /// `SF_FORMAT_DWVW_16`.
        case dwvw16 = 0x0041
        /// `SF_FORMAT_DWVW_24`.
        case dwvw24 = 0x0042
        /// `SF_FORMAT_DWVW_N`.
        case dwvwN = 0x0043
        /// `SF_FORMAT_DPCM_8`.
        case dpcm8 = 0x0050
        /// `SF_FORMAT_DPCM_16`.
        case dpcm16 = 0x0051
        /// `SF_FORMAT_VORBIS`: Xiph Vorbis.
        case vorbis = 0x0060
        /// `SF_FORMAT_OPUS`: Xiph/Skype Opus.
        case opus = 0x0064
        /// `SF_FORMAT_ALAC_16`.
        case alac16 = 0x0070
        /// `SF_FORMAT_ALAC_20`.
        case alac20 = 0x0071
        /// `SF_FORMAT_ALAC_24`.
        case alac24 = 0x0072
        /// `SF_FORMAT_ALAC_32`.
        case alac32 = 0x0073
        /// `SF_FORMAT_MPEG_LAYER_I`.
        case mpegLayerI = 0x0080
        /// `SF_FORMAT_MPEG_LAYER_II`.
        case mpegLayerII = 0x0081
        /// `SF_FORMAT_MPEG_LAYER_III`.
        case mpegLayerIII = 0x0082
    }

    /// Byte order of the samples in the file (`SF_ENDIAN_*`).
    public enum Endianness: Int32, Sendable {
        /// `SF_ENDIAN_FILE`: the container's default.
        case file = 0
        /// `SF_ENDIAN_LITTLE`.
        case little = 0x1000_0000
        /// `SF_ENDIAN_BIG`.
        case big = 0x2000_0000
        /// `SF_ENDIAN_CPU`.
        case cpu = 0x3000_0000
    }

    /// A complete libsndfile format: container, encoding and byte order.
    public struct Format: Hashable, Sendable, CustomStringConvertible {
        public var major: MajorFormat
        public var subtype: Subtype
        public var endianness: Endianness

        public init(_ major: MajorFormat, _ subtype: Subtype, _ endianness: Endianness = .file) {
            self.major = major
            self.subtype = subtype
            self.endianness = endianness
        }

        /// The format of an `SF_INFO.format` value; nil for values this wrapper does not know.
        public init?(rawValue: Int32) {
            guard let major = MajorFormat(rawValue: rawValue & Int32(SF_FORMAT_TYPEMASK)),
                  let subtype = Subtype(rawValue: rawValue & Int32(SF_FORMAT_SUBMASK)),
                  let endianness = Endianness(rawValue: rawValue & Int32(SF_FORMAT_ENDMASK))
            else { return nil }
            self.init(major, subtype, endianness)
        }

        /// The `SF_INFO.format` value.
        public var rawValue: Int32 { major.rawValue | subtype.rawValue | endianness.rawValue }

        /// libsndfile's name of the container, e.g. "AIFF (Apple/SGI)".
        public var majorName: String { SoundFile.formatName(major.rawValue) ?? "\(major)" }
        /// libsndfile's name of the encoding, e.g. "Signed 16 bit PCM".
        public var subtypeName: String { SoundFile.formatName(subtype.rawValue) ?? "\(subtype)" }

        public var description: String { "\(majorName), \(subtypeName)" }
    }

    /// What `SF_INFO` holds: frames, rate, channels and format.
    public struct Info: Sendable, Equatable {
        public var frameCount: Int64
        public var sampleRate: Int
        public var channelCount: Int
        public var format: Format
        /// Whether the file can seek (`SF_INFO.seekable`).
        public var isSeekable: Bool

        public init(sampleRate: Int, channelCount: Int, format: Format) {
            self.init(frameCount: 0, sampleRate: sampleRate, channelCount: channelCount, format: format, isSeekable: true)
        }

        init(frameCount: Int64, sampleRate: Int, channelCount: Int, format: Format, isSeekable: Bool) {
            self.frameCount = frameCount
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.format = format
            self.isSeekable = isSeekable
        }

        init?(_ info: SF_INFO) {
            guard let format = Format(rawValue: info.format) else { return nil }
            self.init(frameCount: info.frames, sampleRate: Int(info.samplerate), channelCount: Int(info.channels),
                      format: format, isSeekable: info.seekable != 0)
        }

        var cValue: SF_INFO {
            var info = SF_INFO()
            info.frames = frameCount
            info.samplerate = Int32(clamping: sampleRate)
            info.channels = Int32(clamping: channelCount)
            info.format = format.rawValue
            return info
        }

        /// Whether libsndfile accepts this combination for writing (`sf_format_check`).
        public var isWritable: Bool {
            var info = cValue
            return sf_format_check(&info) != 0
        }
    }

    /// The position a channel map entry names (`SF_CHANNEL_MAP_*`).
    public enum ChannelPosition: Int32, CaseIterable, Sendable {
        case invalid = 0, mono, left, right, center
        case frontLeft, frontRight, frontCenter
        case rearCenter, rearLeft, rearRight
        case lfe
        case frontLeftOfCenter, frontRightOfCenter
        case sideLeft, sideRight
        case topCenter, topFrontLeft, topFrontRight, topFrontCenter
        case topRearLeft, topRearRight, topRearCenter
        case ambisonicBW, ambisonicBX, ambisonicBY, ambisonicBZ
    }
}

extension SoundFile {
    /// Whether this libsndfile can handle `subtype` in `major` at all: the container and the
    /// encoding are among those it was built with (the Ogg and MPEG codecs are optional).
    public static func isAvailable(_ major: MajorFormat, _ subtype: Subtype) -> Bool {
        formatValues(countCommand: Int32(SFC_GET_FORMAT_MAJOR_COUNT), command: Int32(SFC_GET_FORMAT_MAJOR)).contains(major.rawValue)
            && formatValues(countCommand: Int32(SFC_GET_FORMAT_SUBTYPE_COUNT), command: Int32(SFC_GET_FORMAT_SUBTYPE)).contains(subtype.rawValue)
    }

    /// libsndfile's version, e.g. "libsndfile-1.2.0".
    public static var version: String { String(cString: sf_version_string()) }

    private static func formatValues(countCommand: Int32, command: Int32) -> [Int32] {
        var count: Int32 = 0
        sf_command(nil, countCommand, &count, Int32(MemoryLayout<Int32>.size))
        return (0..<count).map { index in
            var info = SF_FORMAT_INFO()
            info.format = index
            sf_command(nil, command, &info, Int32(MemoryLayout<SF_FORMAT_INFO>.size))
            return info.format
        }
    }

    fileprivate static func formatName(_ value: Int32) -> String? {
        var info = SF_FORMAT_INFO()
        info.format = value
        guard sf_command(nil, Int32(SFC_GET_FORMAT_INFO), &info, Int32(MemoryLayout<SF_FORMAT_INFO>.size)) == 0,
              let name = info.name
        else { return nil }
        return String(cString: name)
    }
}
