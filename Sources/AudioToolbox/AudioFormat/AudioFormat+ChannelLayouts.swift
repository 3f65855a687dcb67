import CAudioToolbox

// The channel layout properties: ChannelLayoutForTag, ChannelLayoutForBitmap,
// NumberOfChannelsForLayout, ChannelLayoutName. Layouts are read and written through
// ChannelLayoutValue (AudioFile/ChannelLayoutValue.swift), whose tables the files use too.

extension AudioFormatProperty {
    /// kAudioFormatProperty_ChannelLayoutForTag: the layout's channels as descriptions.
    /// - Throws: '!fmt' for the two tags that name no layout (UseChannelDescriptions,
    ///   UseChannelBitmap) and for tags jaq knows no channel order of.
    static func layoutForTag(_ tag: AudioChannelLayoutTag) throws -> [UInt8] {
        guard let labels = labels(ofTag: tag) else {
            throw AudioToolboxError(kAudioFormatUnknownFormatError, "no channel order known for layout tag 0x\(String(tag, radix: 16))")
        }
        return bytes(of: ChannelLayoutValue(tag: kAudioChannelLayoutTag_UseChannelDescriptions, bitmap: 0, labels: labels))
    }

    /// kAudioFormatProperty_ChannelLayoutForBitmap: the bitmap's channels, in bit order, as descriptions.
    static func layoutForBitmap(_ bitmap: UInt32) throws -> [UInt8] {
        guard bitmap != 0, bitmap >> 18 == 0,
              let labels = ChannelLayoutValue(tag: kAudioChannelLayoutTag_UseChannelBitmap, bitmap: bitmap, labels: []).channelLabels
        else { throw AudioToolboxError(kAudioFormatUnknownFormatError, "channel bitmap 0x\(String(bitmap, radix: 16))") }
        return bytes(of: ChannelLayoutValue(tag: kAudioChannelLayoutTag_UseChannelDescriptions, bitmap: 0, labels: labels))
    }

    /// The AudioChannelLayout a specifier holds.
    /// - Throws: '!spc' when the specifier is shorter than its header or its descriptions.
    static func layout(of specifier: AudioFormatSpecifier) throws -> ChannelLayoutValue {
        do {
            return try specifier.bytes.withUnsafeBytes { try ChannelLayoutValue(bytes: $0) }
        } catch {
            throw AudioToolboxError(kAudioFormatBadSpecifierSizeError, (error as? AudioToolboxError)?.reason ?? "\(error)")
        }
    }

    /// kAudioFormatProperty_ChannelLayoutName: the layout's name and its channels'
    /// abbreviations, "5.1 (L R C LFE Ls Rs)".
    static func layoutName(_ layout: ChannelLayoutValue) throws -> String {
        let labels: [AudioChannelLabel]?
        switch layout.tag {
        case kAudioChannelLayoutTag_UseChannelDescriptions: labels = layout.labels
        case kAudioChannelLayoutTag_UseChannelBitmap: labels = layout.bitmap >> 18 == 0 ? layout.channelLabels : nil
        default: labels = Self.labels(ofTag: layout.tag)
        }
        guard let labels, !labels.isEmpty else {
            throw AudioToolboxError(kAudioFormatUnknownFormatError, "no name known for layout tag 0x\(String(layout.tag, radix: 16))")
        }
        let name = tagNames[layout.tag] ?? (layout.tag & 0xFFFF_0000 == kAudioChannelLayoutTag_DiscreteInOrder ? "Discrete" : "Channels")
        return "\(name) (\(labels.map(abbreviation).joined(separator: " ")))"
    }

    // MARK: Tables

    /// The channel order of `tag`; nil for the tags that name none.
    static func labels(ofTag tag: AudioChannelLayoutTag) -> [AudioChannelLabel]? {
        let count = tag & 0xFFFF
        if tag & 0xFFFF_0000 == kAudioChannelLayoutTag_DiscreteInOrder, count > 0 {
            return (0..<count).map { kAudioChannelLabel_Discrete_0 | $0 }
        }
        if let labels = moreTagLabels[tag] { return labels }
        guard tag != kAudioChannelLayoutTag_UseChannelDescriptions, tag != kAudioChannelLayoutTag_UseChannelBitmap else { return nil }
        return ChannelLayoutValue(tag: tag, bitmap: 0, labels: []).channelLabels
    }

    /// Apple's orders of the MPEG tags ChannelLayoutValue's table leaves out (CoreAudioTypes.h).
    private static let moreTagLabels: [AudioChannelLayoutTag: [AudioChannelLabel]] = {
        let (l, r, c, lfe) = (kAudioChannelLabel_Left, kAudioChannelLabel_Right, kAudioChannelLabel_Center, kAudioChannelLabel_LFEScreen)
        let (ls, rs) = (kAudioChannelLabel_LeftSurround, kAudioChannelLabel_RightSurround)
        return [
            kAudioChannelLayoutTag_MPEG_5_0_B: [l, r, ls, rs, c], kAudioChannelLayoutTag_MPEG_5_0_C: [l, c, r, ls, rs],
            kAudioChannelLayoutTag_MPEG_5_0_D: [c, l, r, ls, rs], kAudioChannelLayoutTag_MPEG_5_1_B: [l, r, ls, rs, c, lfe],
            kAudioChannelLayoutTag_MPEG_5_1_C: [l, c, r, ls, rs, lfe], kAudioChannelLayoutTag_MPEG_5_1_D: [c, l, r, ls, rs, lfe],
        ]
    }()

    private static let tagNames: [AudioChannelLayoutTag: String] = [
        kAudioChannelLayoutTag_Mono: "Mono", kAudioChannelLayoutTag_Stereo: "Stereo",
        kAudioChannelLayoutTag_StereoHeadphones: "Stereo Headphones", kAudioChannelLayoutTag_MatrixStereo: "Matrix Stereo",
        kAudioChannelLayoutTag_Ambisonic_B_Format: "Ambisonic B Format", kAudioChannelLayoutTag_Quadraphonic: "Quadraphonic",
        kAudioChannelLayoutTag_MPEG_3_0_A: "3.0", kAudioChannelLayoutTag_MPEG_3_0_B: "3.0",
        kAudioChannelLayoutTag_MPEG_4_0_A: "4.0", kAudioChannelLayoutTag_MPEG_4_0_B: "4.0",
        kAudioChannelLayoutTag_MPEG_5_0_A: "5.0", kAudioChannelLayoutTag_MPEG_5_0_B: "5.0",
        kAudioChannelLayoutTag_MPEG_5_0_C: "5.0", kAudioChannelLayoutTag_MPEG_5_0_D: "5.0",
        kAudioChannelLayoutTag_MPEG_5_1_A: "5.1", kAudioChannelLayoutTag_MPEG_5_1_B: "5.1",
        kAudioChannelLayoutTag_MPEG_5_1_C: "5.1", kAudioChannelLayoutTag_MPEG_5_1_D: "5.1",
        kAudioChannelLayoutTag_MPEG_6_1_A: "6.1", kAudioChannelLayoutTag_MPEG_7_1_A: "7.1",
    ]

    /// Apple's short channel names (kAudioFormatProperty_ChannelShortName's).
    private static func abbreviation(_ label: AudioChannelLabel) -> String {
        let names: [AudioChannelLabel: String] = [
            kAudioChannelLabel_Left: "L", kAudioChannelLabel_Right: "R", kAudioChannelLabel_Center: "C",
            kAudioChannelLabel_LFEScreen: "LFE", kAudioChannelLabel_LeftSurround: "Ls", kAudioChannelLabel_RightSurround: "Rs",
            kAudioChannelLabel_LeftCenter: "Lc", kAudioChannelLabel_RightCenter: "Rc", kAudioChannelLabel_CenterSurround: "Cs",
            kAudioChannelLabel_LeftSurroundDirect: "Lsd", kAudioChannelLabel_RightSurroundDirect: "Rsd",
            kAudioChannelLabel_TopCenterSurround: "Ts", kAudioChannelLabel_VerticalHeightLeft: "Vhl",
            kAudioChannelLabel_VerticalHeightCenter: "Vhc", kAudioChannelLabel_VerticalHeightRight: "Vhr",
            kAudioChannelLabel_TopBackLeft: "Ltr", kAudioChannelLabel_TopBackCenter: "Ctr", kAudioChannelLabel_TopBackRight: "Rtr",
            kAudioChannelLabel_RearSurroundLeft: "Rls", kAudioChannelLabel_RearSurroundRight: "Rrs",
            kAudioChannelLabel_LeftWide: "Lw", kAudioChannelLabel_RightWide: "Rw", kAudioChannelLabel_LFE2: "LFE2",
            kAudioChannelLabel_LeftTotal: "Lt", kAudioChannelLabel_RightTotal: "Rt", kAudioChannelLabel_Mono: "M",
            200: "W", 201: "X", 202: "Y", 203: "Z",
        ]
        if let name = names[label] { return name }
        if label >> 16 == 1 { return "D\(label & 0xFFFF)" }
        return label == kAudioChannelLabel_Unknown ? "?" : "#\(label)"
    }

    private static func bytes(of layout: ChannelLayoutValue) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: layout.byteCount)
        bytes.withUnsafeMutableBytes { layout.store(into: $0.baseAddress!) }
        return bytes
    }
}
