import CAudioToolbox

/// The channel map (kAudioConverterChannelMap) an ExtAudioFile sets on its converter when the
/// client's channel layout orders the file's channels differently: each output channel takes
/// the input channel of the same label. Layouts of other channel counts, or with labels the
/// other lacks, keep the converter's own routing (Apple's mixes down there; jaq's converter
/// does not mix: Docs/extaudiofile.md).
enum ExtAudioFileChannelMap {
    /// Each channel's label, in order: the descriptions', the tag's, or the bitmap's; nil when
    /// the layout names none.
    static func labels(_ layout: ChannelLayoutValue) -> [AudioChannelLabel]? {
        let labels = layout.tag == kAudioChannelLayoutTag_UseChannelDescriptions || layout.tag == kAudioChannelLayoutTag_UseChannelBitmap
            ? layout.channelLabels : AudioFormatProperty.labels(ofTag: layout.tag)
        guard let labels, labels.count == layout.channelCount,
              !labels.contains(kAudioChannelLabel_Unknown), !labels.contains(kAudioChannelLabel_Unused) else { return nil }
        return labels
    }

    /// The map from `input`'s channels to `output`'s (for each output channel, its input
    /// channel), or nil when they are in the same order or are not the same channels reordered.
    static func map(from input: ChannelLayoutValue, to output: ChannelLayoutValue) -> [Int32]? {
        guard let from = labels(input), let to = labels(output), from.count == to.count, Set(from).count == from.count,
              Set(from) == Set(to), from != to else { return nil }
        return to.map { label in Int32(from.firstIndex(of: label)!) }
    }
}
