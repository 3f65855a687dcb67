import CAudioToolbox
import SoundFile

/// An AudioChannelLayout held by value: its tag, bitmap and channel descriptions, and the
/// variable-length bytes Apple's API passes (12 bytes of header, 20 per description).
struct ChannelLayoutValue: Equatable, Sendable {
    var tag: AudioChannelLayoutTag
    var bitmap: UInt32
    var labels: [AudioChannelLabel]

    /// Size of the header before the descriptions (`offsetof(AudioChannelLayout, mChannelDescriptions)`).
    static let headerSize = 12
    static let descriptionSize = MemoryLayout<AudioChannelDescription>.size

    /// The layout a file without a channel map has: mono, stereo, or discrete channels in order.
    static func `default`(channelCount: Int) -> ChannelLayoutValue {
        switch channelCount {
        case 1: ChannelLayoutValue(tag: kAudioChannelLayoutTag_Mono, bitmap: 0, labels: [])
        case 2: ChannelLayoutValue(tag: kAudioChannelLayoutTag_Stereo, bitmap: 0, labels: [])
        default: ChannelLayoutValue(tag: kAudioChannelLayoutTag_DiscreteInOrder | UInt32(channelCount), bitmap: 0, labels: [])
        }
    }

    /// The layout of a libsndfile channel map: a mono or stereo tag where it is one, else one
    /// description per channel.
    init(channelMap: [SoundFile.ChannelPosition]) {
        switch channelMap {
        case [.mono]: self = .default(channelCount: 1)
        case [.left, .right], [.frontLeft, .frontRight]: self = .default(channelCount: 2)
        default:
            self.init(tag: kAudioChannelLayoutTag_UseChannelDescriptions, bitmap: 0,
                      labels: channelMap.map { Self.label(of: $0) })
        }
    }

    init(tag: AudioChannelLayoutTag, bitmap: UInt32, labels: [AudioChannelLabel]) {
        self.tag = tag
        self.bitmap = bitmap
        self.labels = labels
    }

    /// Parses the bytes of an AudioChannelLayout.
    /// - Throws: '!siz' when `bytes` is shorter than its descriptions claim.
    init(bytes: UnsafeRawBufferPointer) throws(AudioToolboxError) {
        guard bytes.count >= Self.headerSize else {
            throw AudioToolboxError(kAudioFileBadPropertySizeError, "an AudioChannelLayout is at least \(Self.headerSize) bytes")
        }
        tag = bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)
        bitmap = bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
        let count = Int(bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        guard tag == kAudioChannelLayoutTag_UseChannelDescriptions else {
            labels = []
            return
        }
        guard count <= 1024, bytes.count >= Self.headerSize + count * Self.descriptionSize else {
            throw AudioToolboxError(kAudioFileBadPropertySizeError, "the layout claims \(count) channel descriptions")
        }
        labels = (0..<count).map { bytes.loadUnaligned(fromByteOffset: Self.headerSize + $0 * Self.descriptionSize, as: UInt32.self) }
    }

    /// Bytes of the AudioChannelLayout value.
    var byteCount: Int { Self.headerSize + labels.count * Self.descriptionSize }

    /// Writes the AudioChannelLayout into `buffer` (at least `byteCount` bytes).
    func store(into buffer: UnsafeMutableRawPointer) {
        buffer.storeBytes(of: tag, toByteOffset: 0, as: UInt32.self)
        buffer.storeBytes(of: bitmap, toByteOffset: 4, as: UInt32.self)
        buffer.storeBytes(of: UInt32(labels.count), toByteOffset: 8, as: UInt32.self)
        for (index, label) in labels.enumerated() {
            let offset = Self.headerSize + index * Self.descriptionSize
            buffer.storeBytes(of: label, toByteOffset: offset, as: UInt32.self)
            (offset + 4..<offset + Self.descriptionSize).forEach { buffer.storeBytes(of: 0, toByteOffset: $0, as: UInt8.self) }
        }
    }

    /// How many channels the layout describes.
    var channelCount: Int {
        switch tag {
        case kAudioChannelLayoutTag_UseChannelDescriptions: labels.count
        case kAudioChannelLayoutTag_UseChannelBitmap: bitmap.nonzeroBitCount
        default: Int(tag & 0xFFFF)
        }
    }

    /// The channel labels in order; nil where the layout names none (discrete, unknown tags).
    var channelLabels: [AudioChannelLabel]? {
        switch tag {
        case kAudioChannelLayoutTag_UseChannelDescriptions: return labels
        case kAudioChannelLayoutTag_UseChannelBitmap:
            return (0..<18).filter { bitmap & (1 << $0) != 0 }.map { Self.bitmapLabels[$0] }
        default:
            return Self.tagLabels[tag]
        }
    }

    /// The libsndfile channel map for this layout, nil when a label has no libsndfile position.
    var channelMap: [SoundFile.ChannelPosition]? {
        guard let labels = channelLabels, labels.count == channelCount else { return nil }
        let positions = labels.compactMap { label in Self.positions.first { $0.label == label }?.position }
        return positions.count == labels.count ? positions : nil
    }

    // MARK: Tables

    /// Apple labels and libsndfile positions (sndfile.h names Apple's equivalents).
    private static let positions: [(label: AudioChannelLabel, position: SoundFile.ChannelPosition)] = [
        (kAudioChannelLabel_Mono, .mono), (kAudioChannelLabel_Left, .left), (kAudioChannelLabel_Right, .right),
        (kAudioChannelLabel_Center, .center), (kAudioChannelLabel_LFEScreen, .lfe),
        (kAudioChannelLabel_LeftSurround, .rearLeft), (kAudioChannelLabel_RightSurround, .rearRight),
        (kAudioChannelLabel_LeftCenter, .frontLeftOfCenter), (kAudioChannelLabel_RightCenter, .frontRightOfCenter),
        (kAudioChannelLabel_CenterSurround, .rearCenter), (kAudioChannelLabel_LeftSurroundDirect, .sideLeft),
        (kAudioChannelLabel_RightSurroundDirect, .sideRight), (kAudioChannelLabel_TopCenterSurround, .topCenter),
        (kAudioChannelLabel_VerticalHeightLeft, .topFrontLeft), (kAudioChannelLabel_VerticalHeightCenter, .topFrontCenter),
        (kAudioChannelLabel_VerticalHeightRight, .topFrontRight), (kAudioChannelLabel_TopBackLeft, .topRearLeft),
        (kAudioChannelLabel_TopBackCenter, .topRearCenter), (kAudioChannelLabel_TopBackRight, .topRearRight),
        (ambisonicW, .ambisonicBW), (ambisonicX, .ambisonicBX), (ambisonicY, .ambisonicBY), (ambisonicZ, .ambisonicBZ),
    ]

    private static func label(of position: SoundFile.ChannelPosition) -> AudioChannelLabel {
        switch position {
        case .frontLeft: kAudioChannelLabel_Left
        case .frontRight: kAudioChannelLabel_Right
        case .frontCenter: kAudioChannelLabel_Center
        default: positions.first { $0.position == position }?.label ?? kAudioChannelLabel_Unknown
        }
    }

    /// Apple's kAudioChannelLabel_Ambisonic_W...Z (not in the header subset).
    private static let ambisonicW: AudioChannelLabel = 200
    private static let ambisonicX: AudioChannelLabel = 201
    private static let ambisonicY: AudioChannelLabel = 202
    private static let ambisonicZ: AudioChannelLabel = 203

    /// The labels of kAudioChannelBit_* in bit order.
    private static let bitmapLabels: [AudioChannelLabel] = [
        kAudioChannelLabel_Left, kAudioChannelLabel_Right, kAudioChannelLabel_Center, kAudioChannelLabel_LFEScreen,
        kAudioChannelLabel_LeftSurround, kAudioChannelLabel_RightSurround, kAudioChannelLabel_LeftCenter,
        kAudioChannelLabel_RightCenter, kAudioChannelLabel_CenterSurround, kAudioChannelLabel_LeftSurroundDirect,
        kAudioChannelLabel_RightSurroundDirect, kAudioChannelLabel_TopCenterSurround, kAudioChannelLabel_VerticalHeightLeft,
        kAudioChannelLabel_VerticalHeightCenter, kAudioChannelLabel_VerticalHeightRight, kAudioChannelLabel_TopBackLeft,
        kAudioChannelLabel_TopBackCenter, kAudioChannelLabel_TopBackRight,
    ]

    /// The channel order of the layout tags that name positions.
    private static let tagLabels: [AudioChannelLayoutTag: [AudioChannelLabel]] = {
        let (l, r, c, lfe) = (kAudioChannelLabel_Left, kAudioChannelLabel_Right, kAudioChannelLabel_Center, kAudioChannelLabel_LFEScreen)
        let (ls, rs, cs) = (kAudioChannelLabel_LeftSurround, kAudioChannelLabel_RightSurround, kAudioChannelLabel_CenterSurround)
        let (lc, rc) = (kAudioChannelLabel_LeftCenter, kAudioChannelLabel_RightCenter)
        return [
            kAudioChannelLayoutTag_Mono: [kAudioChannelLabel_Mono],
            kAudioChannelLayoutTag_Stereo: [l, r],
            kAudioChannelLayoutTag_StereoHeadphones: [l, r],
            kAudioChannelLayoutTag_MatrixStereo: [kAudioChannelLabel_LeftTotal, kAudioChannelLabel_RightTotal],
            kAudioChannelLayoutTag_Ambisonic_B_Format: [ambisonicW, ambisonicX, ambisonicY, ambisonicZ],
            kAudioChannelLayoutTag_Quadraphonic: [l, r, ls, rs],
            kAudioChannelLayoutTag_MPEG_3_0_A: [l, r, c],
            kAudioChannelLayoutTag_MPEG_3_0_B: [c, l, r],
            kAudioChannelLayoutTag_MPEG_4_0_A: [l, r, c, cs],
            kAudioChannelLayoutTag_MPEG_4_0_B: [c, l, r, cs],
            kAudioChannelLayoutTag_MPEG_5_0_A: [l, r, c, ls, rs],
            kAudioChannelLayoutTag_MPEG_5_1_A: [l, r, c, lfe, ls, rs],
            kAudioChannelLayoutTag_MPEG_6_1_A: [l, r, c, lfe, ls, rs, cs],
            kAudioChannelLayoutTag_MPEG_7_1_A: [l, r, c, lfe, ls, rs, lc, rc],
        ]
    }()
}
